// Types of the gemma4 runtime (web/api.mjs): what every factory (createGemma4, createGemma4Mtp,
// createGemma4Profile, createGemma4MtpProfile) resolves to.

/** A model folder: a URL (or a path in Node), the folder's Files, or files by name. */
export type ModelSource =
  | string
  | URL
  | File[]
  | FileList
  | Record<string, Blob | File | Uint8Array | ArrayBuffer | string | URL>;

/** GPUDevice where the WebGPU types are in scope (lib "dom" of a recent TypeScript, or @webgpu/types). */
export type WebGPUDevice = typeof globalThis extends { GPUDevice: { prototype: infer D } } ? D : object;

export interface FactoryOptions {
  /** A device to own (default: one requested from navigator.gpu, or Dawn's `webgpu` package in Node). */
  device?: WebGPUDevice;
  /** 'webgpu' (default) or 'cpu' (the CPU backend inside WebAssembly). */
  backend?: 'webgpu' | 'cpu';
  /** The build's .wasm: a URL, a path or file: URL (Node), bytes or a module (default: beside the module). */
  wasm?: string | URL | Uint8Array | ArrayBuffer | WebAssembly.Module;
  /** Run inside a Web Worker; the runtime returned forwards to it. */
  worker?: boolean;
  /** Keep downloaded files in the Cache API (default true). */
  cache?: boolean;
  /** Receives the module's diagnostic output (a worker's is sent back to the page). */
  log?: (text: string) => void;
  /** Node only, for a device the runtime makes: false has Dawn skip validating the runtime's GPU calls
   *  (less host time per dispatch), the bounds checks on the kernels' array indices and the zeroing of
   *  their workgroup memory (less GPU time); a bad call or index is then undefined instead of an error.
   *  Default true. */
  gpuValidation?: boolean;
  /** WebGPU only: dispatches in one submit and compute pass, 1 to 4096 (default 128). Large values put all of a
   *  step's dispatches in one pass: fewer submits, but the GPU starts once the whole step is recorded. */
  submitDispatches?: number;
}

export interface LoadProgress {
  model: 'target' | 'assistant' | 'tokenizer' | 'all';
  file: string;
  /** download: bytes from the network; cached: a file served from the cache; upload: weights read into GPU
   *  memory; cache-error: the file could not be stored (quota), it was kept in memory instead. */
  phase: 'download' | 'cached' | 'upload' | 'cache-error';
  loaded?: number;
  total?: number;
  error?: string;
}

export interface LoadOptions {
  target: ModelSource;
  /** The MTP assistant (createGemma4Mtp builds only). */
  assistant?: ModelSource;
  /** tokenizer.json when it is not beside the target (the target's folder is then not asked for one). */
  tokenizer?: string | URL | Blob | Uint8Array;
  onProgress?: (p: LoadProgress) => void;
  /** Positions the K/V cache holds, an integer in [1, 16777216] (default 4096). */
  contextLength?: number;
  /** Drafts per speculative round at most, an integer in [1, 8] (default 2). */
  draftTokens?: number;
  /** 'adaptive' (default): each round drafts 0..draftTokens, as the acceptance and the costs
   *  measured so far make pay; 'fixed': every round drafts draftTokens. */
  draftPolicy?: 'adaptive' | 'fixed';
  /** WebGPU workgroups that keep the device busy, an integer in [0, 65536]; they decide how work
   *  is split, and so the last bits of the logits' sums. 0 measures it; by default a load takes
   *  the fill its adapter measured at its first load here (stats().model.gpu_fill). */
  gpuFill?: number;
  /** Greedy decode steps recorded ahead of the read before them, an integer in [0, 16]; greedy
   *  speculative rounds are recorded one ahead unless it is 0 (sampled requests read each token
   *  before the next step either way). 0 records each step or round once the read before it is
   *  in. Above 0 only with the webgpu backend. Default: 1 on WebGPU, 0 on the CPU backend. */
  decodeAhead?: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'model';
  content: string;
  name?: string;
}

export interface CompletionRequest {
  model?: string;
  /** The conversation, in the model's chat format; or else `prompt`. */
  messages?: ChatMessage[];
  /** Extension: a raw prompt instead of messages (the tokenizer's BOS, then the text; no chat format). */
  prompt?: string;
  stream?: boolean;
  /** Default: the rest of the context. */
  max_tokens?: number;
  max_completion_tokens?: number;
  /** In [0, 1000]; 0 is greedy. Unset sampling options take the model's generation_config.json
   *  defaults (greedy unless it sets do_sample). */
  temperature?: number;
  /** In (0, 1]. */
  top_p?: number;
  /** Extension: keep the k most likely tokens (0: all); up to 127 is picked on the GPU. */
  top_k?: number;
  /** An integer in [0, 2^53 - 1]: the same seed gives the same text. Unset: a random seed per request. */
  seed?: number;
  stop?: string | string[];
  /** Extension: speculative decoding on or off (default on when an assistant is loaded). */
  mtp?: boolean;
}

export interface SpeculativeCounters {
  enabled: boolean;
  draft_tokens: number;
  rounds: number;
  drafted: number;
  /** Drafts accepted and emitted (a stop token among the accepted drafts ends the count). */
  accepted: number;
  acceptance_rate: number;
  /** Rounds in which the draft at each position was accepted and emitted. */
  accepted_per_position: number[];
  draft_policy: 'adaptive' | 'fixed';
  /** Rounds by the drafts they made, 0..draft_tokens (0: plain steps). */
  rounds_per_k: number[];
  /** Greedy rounds recorded before the read of the round before them (WebGPU, decodeAhead > 0). */
  rounds_ahead: number;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prefill_tokens_per_s: number;
  decode_tokens_per_s: number;
  time_to_first_token_ms: number;
  total_ms: number;
  speculative: SpeculativeCounters;
}

export type FinishReason = 'stop' | 'length' | 'interrupted';

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: [{ index: 0; message: { role: 'assistant'; content: string }; finish_reason: FinishReason }];
  usage: Usage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: [{ index: 0; delta: { role?: 'assistant'; content?: string }; finish_reason: FinishReason | null }];
  /** On the last chunk. */
  usage?: Usage;
}

export interface Profile {
  schema_version: number;
  supported: boolean;
  /** 'kernels': each dispatch timed in a pass of its own (ops); 'passes': the work timed as it
   * runs, a pass per submit (passes). Profile builds time kernels. */
  mode: 'kernels' | 'passes';
  /** Every timestamp of the last request is in. */
  fresh: boolean;
  /** Requests profiled since load or reset. */
  generation: number;
  total_kernel_ms: number;
  /** Per kernel, and within it per dispatch size (workgroups, as a decimal string); largest first. */
  ops: Record<string, { ms: number; calls: number; by_workgroups: Record<string, { ms: number; calls: number }> }>;
  /** The passes timed whole ('passes' mode; zeros otherwise) and the dispatches in them. */
  passes: { ms: number; count: number; dispatches: number };
  /** Why there are no GPU timings (supported false): a wall build, the cpu backend, no device yet,
   *  or a device without 'timestamp-query'. */
  reason?: string;
}

export interface Stats {
  build: { factory: string; mtp: boolean; profile: boolean };
  loaded: boolean;
  busy: string | null;
  device_lost: string | null;
  /** Why the module stopped (a WebAssembly trap), which unloaded the model; null otherwise. */
  stopped: string | null;
  /** The loaded model's shape, memory and backend (gpu_fill and decode_ahead among them); null
   *  when none is. */
  model: Record<string, unknown> | null;
  load: { ms: number; target: LoadCounts; assistant: LoadCounts | null } | null;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  rounds: number;
  drafted: number;
  accepted: number;
  acceptance_rate: number;
  accepted_per_position: number[];
  last: Usage | null;
  /** The request running now, if any (the counters above already include its rounds so far). */
  current: { completion_tokens: number; elapsed_ms: number; time_to_first_token_ms: number | null;
             decode_tokens_per_s: number } | null;
  gpu_buffers: number;
  profile: Profile;
}

export interface LoadCounts {
  downloaded_bytes: number;
  cached_files: number;
  fetched_files: number;
}

export interface Gemma4Runtime {
  readonly build: { factory: string; mtp: boolean; profile: boolean; worker?: boolean };
  load(options: LoadOptions): Promise<void>;
  chat: {
    completions: {
      create(request: CompletionRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
      create(request: CompletionRequest & { stream?: false }): Promise<ChatCompletion>;
      create(request: CompletionRequest): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
    };
  };
  /** Stops the running request after the token being chosen; it ends with finish_reason 'interrupted'. */
  interrupt(): void;
  /** Unloads and loads the same model again; counters and profile generations start from zero. */
  reset(): Promise<void>;
  /** Destroys every GPU buffer the runtime made. */
  unload(): Promise<void>;
  /** A copy of the runtime's figures: changing it changes nothing in the runtime. */
  stats(): Stats;
  /** Worker runtimes only. */
  terminate?(): void;
}

export interface Gemma4Factory {
  (options?: FactoryOptions): Promise<Gemma4Runtime>;
  /** Deletes every model file the runtime keeps in this origin's Cache API (all models, whichever
   *  build cached them); resolves to the number of files deleted (0 without a Cache API, as in Node).
   *  A model loaded already stays usable; the next load downloads again. */
  deleteCache(): Promise<number>;
}
