// The gemma4 runtime for JavaScript: what createGemma4() / createGemma4Mtp() (and their profile
// builds) resolve to. One runtime owns one WebGPU device and one instance of its build's
// WebAssembly module; target and assistant load into it. Calls run one at a time: a second
// concurrent call is rejected. Unknown options are errors.
//
//   const gemma = await createGemma4Mtp();
//   await gemma.load({ target: 'models/e2b/', assistant: 'models/e2b-assistant/', onProgress });
//   for await (const chunk of await gemma.chat.completions.create({ messages, stream: true })) ...
import { instantiate } from './module.mjs';
import { createMemoryWasi } from './wasi_memfs.mjs';
import { deleteCache, isNodePath, nodePath, openModel, tokenizerSource } from './sources.mjs';
import { workerClient } from './worker.mjs';
import { dawnInstance, yieldWhileWaiting } from './dawn_toggles.mjs';
import { MAX_SUBMIT_DISPATCHES, PROFILE_SCHEMA_VERSION } from './gpu_bridge.mjs';
import { chunkStream } from './stream.mjs';
import { requestAdapter } from './adapter.mjs';

// The profile before any profiled request (or in a build without profiling, with its reason).
function emptyProfile(supported, reason = undefined) {
  return { schema_version: PROFILE_SCHEMA_VERSION, supported, mode: 'kernels', fresh: false, generation: 0,
           total_kernel_ms: 0, ops: {}, passes: { ms: 0, count: 0, dispatches: 0 }, ...(reason ? { reason } : {}) };
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';
// Whether a device this runtime requests comes from Dawn's `webgpu` package (Node without navigator.gpu).
const makesDawnDevice = () => isNode && !globalThis.navigator?.gpu;

export function checkKeys(what, obj, known) {
  if (obj === undefined) return {};
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new TypeError(`gemma4 ${what}: expected an object`);
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) throw new TypeError(`gemma4 ${what}: unknown option '${key}' (known: ${known.join(', ')})`);
  }
  return obj;
}

const FACTORY_OPTIONS = ['device', 'backend', 'wasm', 'worker', 'cache', 'log', 'gpuValidation', 'submitDispatches'];
const LOAD_OPTIONS = ['target', 'assistant', 'tokenizer', 'onProgress', 'contextLength', 'draftTokens', 'draftPolicy',
                      'gpuFill', 'decodeAhead'];
const CREATE_OPTIONS = ['model', 'messages', 'stream', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p',
                        'top_k', 'seed', 'stop', 'mtp', 'prompt'];

// A value of an option of the limits table (src/session/limits.h, read from the module: `limit`
// is its entry) checked against its range, or its words for a choice, as the module checks it;
// undefined when unset.
export function checkLimit(what, name, value, limit) {
  if (value === undefined || value === null) return undefined;
  if (limit.choices) {
    if (!limit.choices.includes(value)) {
      throw new TypeError(`gemma4 ${what}: ${name} must be ${limit.range}${typeof value === 'string' ? `, not '${value}'` : ''}`);
    }
    return value;
  }
  // An open lower bound holds for the value as the float32 the module takes (1e-50 is 0 there).
  const inRange = typeof value === 'number' && Number.isFinite(value) && value <= limit.max &&
                  (limit.min_open ? value > limit.min && Math.fround(value) > limit.min : value >= limit.min) &&
                  (!limit.integer || Number.isInteger(value));
  if (!inRange) {
    const underflows = typeof value === 'number' && limit.min_open && value > limit.min && value <= limit.max;
    throw new TypeError(`gemma4 ${what}: ${name} must be ${limit.range}${typeof value === 'number' ? `, not ${value}` : ''}` +
                        (underflows ? ` (which is ${limit.min} as a float32)` : ''));
  }
  return value;
}

// What the factory options must be, by option: a check and what it wants.
const isDevice = (d) => d !== null && typeof d === 'object' && typeof d.createBuffer === 'function' && !!d.queue &&
                        typeof d.lost?.then === 'function';
const isWasmSource = (w) => typeof w === 'string' || w instanceof URL || w instanceof Uint8Array || w instanceof ArrayBuffer ||
                            w instanceof WebAssembly.Module;
const FACTORY_CHECKS = {
  device: [isDevice, 'a GPUDevice (from adapter.requestDevice())'],
  backend: [(b) => b === 'webgpu' || b === 'cpu', "'webgpu' or 'cpu'"],
  wasm: [isWasmSource, 'a URL, a path (Node), bytes or a WebAssembly.Module'],
  worker: [(b) => typeof b === 'boolean', 'true or false'],
  cache: [(b) => typeof b === 'boolean', 'true or false'],
  log: [(f) => typeof f === 'function', 'a function'],
  gpuValidation: [(b) => typeof b === 'boolean', 'true or false'],
  submitDispatches: [(n) => Number.isInteger(n) && n >= 1 && n <= MAX_SUBMIT_DISPATCHES,
                     `a whole number from 1 to ${MAX_SUBMIT_DISPATCHES}`],
};

const describeValue = (v) => {
  if (typeof v === 'string') return `'${v}'`;
  if (v === null || typeof v !== 'object') return String(v);
  return Array.isArray(v) ? 'a list' : `an object${v.constructor?.name && v.constructor.name !== 'Object' ? ` (${v.constructor.name})` : ''}`;
};

// build: { factory, mtp, profile, wasm (URL of the module), moduleUrl (of the entry, for workers) }.
export function defineFactory(build) {
  const create = async function create(options = {}) {
    checkKeys(`${build.factory} options`, options, FACTORY_OPTIONS);
    for (const [key, [ok, want]] of Object.entries(FACTORY_CHECKS)) {
      if (options[key] !== undefined && !ok(options[key])) {
        throw new TypeError(`gemma4 ${build.factory} options: ${key} must be ${want}, not ${describeValue(options[key])}`);
      }
    }
    if (options.gpuValidation === false && options.device) {
      throw new TypeError(`gemma4 ${build.factory} options: gpuValidation is for a device the runtime makes, not one given`);
    }
    if (options.gpuValidation === false && !makesDawnDevice()) {
      throw new TypeError(`gemma4 ${build.factory} options: gpuValidation: false needs Node, where the runtime makes its device with Dawn`);
    }
    if (options.submitDispatches !== undefined && options.backend === 'cpu') {
      throw new TypeError(`gemma4 ${build.factory} options: submitDispatches is for the webgpu backend, not 'cpu'`);
    }
    if (options.worker) return workerClient(build, options);
    const rt = new Runtime(build, options);
    await rt.init();
    return rt;
  };
  create.deleteCache = deleteCache;
  return create;
}

async function wasmModule(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return WebAssembly.compile(source);
  if (isNodePath(source)) {
    const { readFileSync } = await import('node:fs');
    const path = await nodePath(source);
    let bytes;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      throw new Error(`gemma4: wasm: ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
    }
    return WebAssembly.compile(bytes);
  }
  const url = String(source);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`gemma4: ${url}: HTTP ${response.status}`);
  return WebAssembly.compileStreaming ? WebAssembly.compileStreaming(response)
                                      : WebAssembly.compile(await response.arrayBuffer());
}

// validation false (the factory allows it only where makesDawnDevice()): Dawn skips validating the
// runtime's GPU calls, the kernels' bounds checks and the zeroing of their workgroup memory
// (web/dawn_toggles.mjs).
async function requestGpu(profile, validation = true) {
  let gpu = globalThis.navigator?.gpu;
  if (makesDawnDevice()) {
    const webgpu = await import('webgpu');
    Object.assign(globalThis, webgpu.globals);
    gpu = dawnInstance(webgpu, { validation });
  }
  if (!gpu) throw new Error('gemma4: this host has no WebGPU (navigator.gpu)');
  const adapter = await requestAdapter(gpu, { powerPreference: 'high-performance' }, makesDawnDevice() ? 1 : 4);
  if (!adapter) throw new Error('gemma4: no WebGPU adapter is available');
  const requiredFeatures = [...(profile ? ['timestamp-query'] : []), 'subgroups'].filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({
    requiredFeatures,
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                      maxBufferSize: adapter.limits.maxBufferSize,
                      maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
  });
  return device;
}

// The fill each adapter measured at its first load here (stats().model.gpu_fill), by what the
// adapter says it is: later loads on it take the same fill, so that they split work, and round
// their sums, as the first did, and skip measuring it again.
const measuredFill = (globalThis.__gemma4_fill ??= new Map());
function adapterKey(device) {
  const a = device?.adapterInfo;
  if (!a) return null;  // nothing to tell adapters apart by: each load measures
  const l = device.limits;
  return [a.vendor, a.architecture, a.device, a.description, a.isFallbackAdapter, [...device.features].sort().join(' '),
          l.maxComputeInvocationsPerWorkgroup, l.maxStorageBufferBindingSize, l.maxComputeWorkgroupStorageSize].join('|');
}

const emptyCounters = () => ({ requests: 0, prompt_tokens: 0, completion_tokens: 0, rounds: 0, drafted: 0, accepted: 0,
                               accepted_per_position: [] });

class Runtime {
  #build;
  #options;
  #module = null;
  #device = null;
  #lost = null;
  #stopped = null;    // why the module stopped (a WebAssembly trap); the model was unloaded for it
  #inst = null;
  #rt = 0;
  #info = null;
  #loaded = null;     // { args, target, assistant } of the loaded model, for reset()
  #busy = null;
  #job = null;        // the running request's token handler
  #counters = emptyCounters();
  #last = null;
  #profile = null;
  #loadStats = null;
  #limits = null;     // the module's limits table (g4_limits), read at load
  #leftBehind = 0;    // GPU buffers the last torn-down instance did not destroy (0 unless a bug)

  constructor(build, options) {
    this.#build = build;
    this.#options = options;
    this.chat = { completions: { create: (params) => this.#create(params) } };
  }

  async init() {
    this.#module = await wasmModule(this.#options.wasm ?? this.#build.wasm);
  }

  get build() { return { factory: this.#build.factory, mtp: this.#build.mtp, profile: this.#build.profile }; }

  #enter(what) {
    if (this.#busy) throw new Error(`gemma4 ${what}: the runtime is busy with ${this.#busy}; one call at a time`);
    this.#busy = what;
  }

  #leave() { this.#busy = null; }

  async #gpu() {
    if ((this.#options.backend ?? 'webgpu') === 'cpu') return null;
    if (this.#device && !this.#lost) return this.#device;
    if (this.#options.device) {
      if (this.#lost) throw new Error(`gemma4: the GPU device given was lost (${this.#lost}); create a runtime with a new one`);
      this.#device = this.#options.device;
    } else {
      this.#device = await requestGpu(this.#build.profile, this.#options.gpuValidation);
      this.#lost = null;
    }
    const device = this.#device;
    if (isNode) yieldWhileWaiting(device);
    device.lost.then((info) => {
      if (this.#device === device) this.#lost = `${info.reason}: ${info.message}`;
    });
    return device;
  }

  // The module's last error, its files named as the caller gave them (`sources`: the models as
  // the module sees them, { '/target': model, '/assistant': model }).
  // readError: the first error a source's read met, if any (its message is added, and it is the
  // error's cause).
  #error(prefix, sources = {}, readError = null) {
    const inst = this.#inst;
    const gpuError = inst?.gpu?.lastError();
    let message = inst ? inst.cstring(inst.exports.g4_last_error()) : '';
    message = message.replace(/(?<=^|[\s'"(])(\/target|\/assistant)(?:\/([^\s'":,()]+))?/g,
                              (whole, dir, name) => sources[dir]?.where(name) ?? whole);
    if (readError) message += ` (${readError?.message ?? readError})`;
    const gpu = gpuError ? ` (GPU: ${gpuError.message || gpuError.constructor?.name || 'an error'})` : '';
    return new Error(`gemma4 ${prefix}: ${message}${gpu}`, readError ? { cause: readError } : undefined);
  }

  async load(args) {
    this.#enter('load');
    try {
      checkKeys('load', args, LOAD_OPTIONS);
      if (!args || args.target === undefined) throw new TypeError('gemma4 load: target is required');
      if (this.#rt) throw new Error('gemma4 load: a model is loaded; unload() or reset() first');
      if (args.assistant != null && !this.#build.mtp) {
        throw new TypeError('gemma4 load: this build has no speculative decoding; load an assistant with createGemma4Mtp()');
      }
      const onProgress = args.onProgress ?? (() => {});
      if (typeof onProgress !== 'function') throw new TypeError('gemma4 load: onProgress must be a function');
      const useCache = this.#options.cache ?? true;
      const target = openModel(args.target, { label: 'target', onProgress, useCache });
      const assistant = args.assistant != null ? openModel(args.assistant, { label: 'assistant', onProgress, useCache })
                                               : null;
      try {
        await this.#load(args, target, assistant, true);
      } catch (e) {
        target.close();
        assistant?.close();
        this.#releaseDevice();
        throw e;
      }
    } finally {
      this.#leave();
    }
  }

  // Fails closed: on error the module instance and everything it made are gone.
  // prefix: the call the errors name (load or reset).
  async #load(args, target, assistant, fresh, prefix = 'load') {
    const started = performance.now();
    const onProgress = args.onProgress ?? (() => {});
    // The models' files as the module sees them, each source passed through `wrap`.
    const files = new Map();
    const sources = { '/target': target, ...(assistant ? { '/assistant': assistant } : {}) };
    const mount = (wrap) => {
      files.clear();
      for (const [dir, model] of Object.entries(sources)) {
        for (const [name, src] of model.files) files.set(`${dir}/${name}`, wrap(src));
      }
    };
    const log = this.#options.log ?? (() => {});
    let readError = null;
    const wasi = createMemoryWasi({ files, stdout: log, stderr: log, onReadError: (e) => { readError ??= e; } });
    const device = await this.#gpu();
    const gpuOptions = this.#options.submitDispatches ? { submitDispatches: this.#options.submitDispatches } : {};
    const inst = await instantiate(this.#module, { wasi, device, gpuOptions, host: {
      token: (id, ptr, len) => this.#token(id, ptr, len),
      round: (drafted, accepted) => this.#round(drafted, accepted),
    } });
    this.#inst = inst;
    let rt = 0;
    try {
      // The options' ranges and defaults: the module's limits table.
      const limits = JSON.parse(await inst.callText('g4_limits'));
      this.#limits = limits;
      const context = checkLimit('load', 'contextLength', args.contextLength, limits.context) ?? limits.context.default;
      const draftTokens = checkLimit('load', 'draftTokens', args.draftTokens, limits.draft_tokens) ?? limits.draft_tokens.default;
      const draftPolicy = checkLimit('load', 'draftPolicy', args.draftPolicy, limits.draft_policy) ?? limits.draft_policy.default;
      const fillKey = adapterKey(device);
      const gpuFill = checkLimit('load', 'gpuFill', args.gpuFill, limits.gpu_fill) ?? measuredFill.get(fillKey) ??
                      limits.gpu_fill.default;
      if (!device && gpuFill) throw new TypeError('gemma4 load: gpuFill goes with the webgpu backend');
      const decodeAhead = checkLimit('load', 'decodeAhead', args.decodeAhead, limits.decode_ahead);
      // The CPU backend's reads do not overlap its work: steps recorded ahead would only be work
      // past a stop.
      if (!device && decodeAhead > 0) throw new TypeError('gemma4 load: decodeAhead above 0 goes with the webgpu backend');
      if (fresh) {
        // A tokenizer given apart is not looked for beside the target.
        await target.describe(args.tokenizer != null ? ['tokenizer.json'] : []);
        await assistant?.describe();
        if (args.tokenizer != null) {
          const where = args.tokenizer instanceof URL || typeof args.tokenizer === 'string' ? String(args.tokenizer) : 'the tokenizer given';
          target.set('tokenizer.json', await tokenizerSource(args.tokenizer, { onProgress, useCache: this.#options.cache ?? true }),
                     where);
        }
      }
      mount((src) => src);
      const request = { target: '/target', context, draft_tokens: draftTokens, draft_policy: draftPolicy,
                        gpu_fill: gpuFill, backend: device ? 'webgpu' : 'cpu' };
      if (assistant) request.assistant = '/assistant';
      if (decodeAhead !== undefined) request.decode_ahead = decodeAhead;
      const [p, n] = inst.put(JSON.stringify(request));
      rt = await inst.call('g4_rt_create', p, n);
      inst.exports.free(p);
      if (!rt) throw this.#error(prefix, sources, readError);
      if (fresh) {
        await target.weights();
        await assistant?.weights();
      }
      // Weights read into the GPU, reported as 'upload' progress: how far into its file each
      // read has come (files are read front to back).
      let uploaded = 0;
      const total = [...target.files.values(), ...(assistant ? assistant.files.values() : [])]
        .reduce((s, f) => s + (f.size ?? f.length), 0);
      const counted = (src) => {
        if (src instanceof Uint8Array) return src;
        let reached = 0;
        return {
          size: src.size,
          read(at, k) {
            if (at + k > reached) {
              uploaded += at + k - reached;
              reached = at + k;
              onProgress({ model: 'all', file: '', phase: 'upload', loaded: uploaded, total });
            }
            return src.read(at, k);
          },
        };
      };
      mount(counted);
      if (!(await inst.call('g4_rt_load', rt))) throw this.#error(prefix, sources, readError);
      const gpuError = await inst.gpu?.settle();
      if (gpuError) throw new Error(`gemma4 ${prefix}: ${gpuError.message}`);
      this.#info = JSON.parse(await inst.callText('g4_rt_info', rt));
      if (fillKey && gpuFill === 0 && !measuredFill.has(fillKey) && this.#info.gpu_fill) {
        measuredFill.set(fillKey, this.#info.gpu_fill);
      }
    } catch (e) {
      this.#release(inst, rt);
      this.#inst = null;
      throw e;
    }
    this.#rt = rt;
    this.#stopped = null;
    this.#loaded = { args, target, assistant };
    this.#loadStats = { ms: performance.now() - started, target: { ...target.counts },
                        assistant: assistant ? { ...assistant.counts } : null };
  }

  // The module trapped (a WebAssembly RuntimeError): its memory may hold anything, so nothing
  // more is asked of it (#release destroys its GPU buffers from here); the model is unloaded and
  // the error says so; load() starts a new instance.
  #abandon(trap) {
    this.#stopped = trap.message;
    this.#unloadNow();
    this.#releaseDevice();
    return new Error(`gemma4 chat.completions.create: the module stopped (${trap.message}); the model is unloaded, load() again`);
  }

  // Frees what instance `inst` holds: its runtime `rt` through the module or, when a trap stopped
  // the module, its GPU buffers from here; then the bridge's own. Returns the GPU buffers left.
  #release(inst, rt) {
    if (inst.stopped) inst.gpu?.destroyModuleBuffers();
    else if (rt) inst.exports.g4_rt_free(rt);
    this.#leftBehind = inst.gpu ? inst.gpu.liveBuffers() : 0;
    inst.gpu?.dispose();
    return this.#leftBehind;
  }

  #unloadNow({ keepSources = false } = {}) {
    const leaked = this.#inst ? this.#release(this.#inst, this.#rt) : 0;
    this.#rt = 0;
    this.#inst = null;
    this.#info = null;
    if (!keepSources && this.#loaded) {
      this.#loaded.target.close();
      this.#loaded.assistant?.close();
      this.#loaded = null;
    }
    if (leaked) throw new Error(`gemma4 unload: ${leaked} GPU buffers were left behind`);
  }

  async unload() {
    this.#enter('unload');
    try {
      this.#unloadNow();
    } finally {
      this.#releaseDevice();
      this.#leave();
    }
  }

  // A device the runtime requested is destroyed once nothing is loaded: Dawn frees a device's
  // memory only when it is destroyed, never when its last JavaScript reference goes, so a
  // runtime dropped after unload() would keep it. The next load requests a new one. A device
  // given by the caller stays the caller's.
  #releaseDevice() {
    if (!this.#device || this.#options.device) return;
    const device = this.#device;
    this.#device = null;
    this.#lost = null;
    device.destroy();
  }

  // Unloads and loads the same model again from the sources already opened (cached), with the
  // counters and profile generations cleared.
  async reset() {
    this.#enter('reset');
    try {
      const loaded = this.#loaded;
      this.#unloadNow({ keepSources: true });
      this.#counters = emptyCounters();
      this.#last = null;
      this.#profile = null;
      if (loaded) {
        try {
          await this.#load(loaded.args, loaded.target, loaded.assistant, false, 'reset');
        } catch (e) {
          loaded.target.close();
          loaded.assistant?.close();
          this.#loaded = null;
          this.#releaseDevice();
          throw e;
        }
      }
    } finally {
      this.#leave();
    }
  }

  interrupt() {
    if (this.#job) this.#job.interrupted = true;
  }

  // The speculative counters move round by round, so stats() shows them live.
  #round(drafted, accepted) {
    const c = this.#counters;
    c.rounds++;
    c.drafted += drafted;
    c.accepted += accepted;
    for (let i = 0; i < accepted; i++) c.accepted_per_position[i] = (c.accepted_per_position[i] ?? 0) + 1;
  }

  #token(id, ptr, len) {
    const job = this.#job;
    if (!job) return 0;
    const text = len ? this.#inst.text(ptr, len) : '';
    const go = job.token(id, text) ? 1 : 0;
    // On the CPU backend nothing else waits between tokens: give the host a turn.
    return this.#device ? go : new Promise((r) => setTimeout(() => r(job.interrupted || job.stopped ? 0 : go), 0));
  }

  async #create(params) {
    this.#enter('chat.completions.create');
    let job;
    try {
      job = this.#prepare(params);
    } catch (e) {
      this.#leave();
      throw e;
    }
    const run = this.#run(job);
    if (!job.stream) return run;
    // The stream reports an error; leaving it early waits for this: the runtime free again.
    job.settled = run.then(() => {}, () => {});
    return job.iterable;
  }

  #prepare(params) {
    checkKeys('chat.completions.create', params, CREATE_OPTIONS);
    if (!this.#rt) {
      const why = this.#lost ? ` (the GPU device was lost: ${this.#lost})` : this.#stopped ? ` (the module stopped: ${this.#stopped})` : '';
      throw new Error(`gemma4 chat.completions.create: no model is loaded${why}`);
    }
    if (this.#lost) {
      const what = this.#options.device ? 'create a runtime with a new device' : 'reset(), or unload() and load() again';
      throw new Error(`gemma4 chat.completions.create: the GPU device was lost (${this.#lost}); ${what}`);
    }
    const p = params ?? {};
    const where = 'gemma4 chat.completions.create';
    // null is unset, as for the other options.
    const prompt = p.prompt ?? undefined, messages = p.messages ?? undefined;
    if (prompt !== undefined && messages !== undefined) throw new TypeError(`${where}: give messages or prompt, not both`);
    if (prompt === undefined && messages === undefined) throw new TypeError(`${where}: give messages (a list) or prompt (a string)`);
    if (prompt !== undefined && typeof prompt !== 'string') throw new TypeError(`${where}: prompt must be a string`);
    if (messages !== undefined && !Array.isArray(messages)) throw new TypeError(`${where}: messages must be a list of chat messages`);
    // Text the module gets as JSON: a lone surrogate has no UTF-8 form, so it is named here.
    const wellFormed = (s, what) => {
      if (typeof s === 'string' && s.isWellFormed?.() === false) {
        throw new TypeError(`${where}: ${what} is not well-formed Unicode (it holds a lone surrogate)`);
      }
    };
    wellFormed(prompt, 'prompt');
    (messages ?? []).forEach((m, i) => {
      for (const key of ['role', 'content', 'name']) wellFormed(m?.[key], `messages[${i}].${key}`);
    });
    const limits = this.#limits;
    const num = (key, limit = limits[key]) => checkLimit('chat.completions.create', key, p[key], limit);
    let stop = p.stop ?? [];
    if (typeof stop === 'string') stop = [stop];
    if (!Array.isArray(stop) || stop.length > 4 || stop.some((s) => typeof s !== 'string' || !s)) {
      throw new TypeError('gemma4 chat.completions.create: stop must be a string or a list of up to 4 non-empty strings');
    }
    stop.forEach((s, i) => wellFormed(s, `stop[${i}]`));
    if (p.stream !== undefined && typeof p.stream !== 'boolean') throw new TypeError('gemma4 chat.completions.create: stream must be true or false');
    if (p.mtp !== undefined && typeof p.mtp !== 'boolean') throw new TypeError('gemma4 chat.completions.create: mtp must be true or false');
    if (p.mtp && !this.#info.assistant) throw new Error('gemma4 chat.completions.create: mtp needs an assistant loaded');
    if (p.model !== undefined && typeof p.model !== 'string') throw new TypeError('gemma4 chat.completions.create: model must be a string');
    // max_completion_tokens is OpenAI's newer name for max_tokens: both are checked, and given
    // together they must agree.
    const maxTokens = num('max_tokens'), maxCompletion = num('max_completion_tokens', limits.max_tokens);
    if (maxTokens !== undefined && maxCompletion !== undefined && maxTokens !== maxCompletion) {
      throw new TypeError(`${where}: max_tokens (${maxTokens}) and max_completion_tokens (${maxCompletion}) differ; give one`);
    }
    const request = {
      // A raw prompt goes to the engine as text: the tokenizer's BOS, then the text's ids, as the
      // CLI's --prompt.
      ...(prompt !== undefined ? { prompt } : { messages }),
      max_tokens: maxTokens ?? maxCompletion,
      // Unset sampling options take the model's generation_config.json defaults; no seed, a random one.
      temperature: num('temperature'),
      top_p: num('top_p'),
      top_k: num('top_k'),
      seed: num('seed'),
      speculative: p.mtp ?? this.#info.assistant,
    };
    // The request as the module takes it, made here so that what JSON cannot carry is the
    // caller's error.
    let body;
    try {
      body = JSON.stringify(request);
    } catch (e) {
      throw new TypeError(`${where}: messages hold a value JSON cannot carry (${e.message})`);
    }
    return makeJob({ body, stream: !!p.stream, stop, model: p.model ?? 'gemma4' });
  }

  // The runtime is free again before the last chunk goes out, so a caller that reacts to it can
  // start the next request at once.
  async #run(job) {
    let done;
    try {
      done = await this.#generate(job);
    } catch (e) {
      this.#job = null;
      const err = this.#inst?.stopped ? this.#abandon(this.#inst.stopped) : e;
      this.#leave();
      job.fail(err);
      throw err;
    }
    this.#job = null;
    this.#leave();
    return job.finish(done.finish, done.usage);
  }

  async #generate(job) {
    const inst = this.#inst;
    this.#job = job;
    job.started = performance.now();
    const [p, n] = inst.put(job.body);
    let answer;
    try {
      const text = await inst.callText('g4_rt_generate', this.#rt, p, n);
      if (text === null) throw this.#error('chat.completions.create', this.#loaded ? { '/target': this.#loaded.target,
                                                                                       '/assistant': this.#loaded.assistant } : {});
      answer = JSON.parse(text);
      if (this.#build.profile) {
        const profile = await inst.callText('g4_rt_profile', this.#rt);
        if (profile) this.#profile = JSON.parse(profile);
      }
    } finally {
      if (!inst.stopped) inst.exports.free(p);
    }
    const s = answer.stats;
    const usage = {
      prompt_tokens: s.prompt_tokens,
      completion_tokens: s.generated_tokens,
      total_tokens: s.prompt_tokens + s.generated_tokens,
      prefill_tokens_per_s: s.prefill_tokens_per_s,
      decode_tokens_per_s: s.decode_tokens_per_s,
      time_to_first_token_ms: job.firstTokenMs ?? 0,
      total_ms: performance.now() - job.started,
      speculative: { enabled: answer.speculative, draft_tokens: this.#info.draft_tokens,
                     draft_policy: this.#info.draft_policy, rounds: s.rounds,
                     drafted: s.drafted, accepted: s.accepted, acceptance_rate: s.drafted ? s.accepted / s.drafted : 0,
                     accepted_per_position: s.accepted_per_position, rounds_per_k: s.rounds_per_k,
                     rounds_ahead: s.rounds_ahead },
    };
    const c = this.#counters;
    c.requests++;
    c.prompt_tokens += s.prompt_tokens;
    c.completion_tokens += s.generated_tokens;
    s.accepted_per_position.forEach((_, i) => { c.accepted_per_position[i] ??= 0; });
    this.#last = usage;
    const finish = job.stopped ? 'stop' : answer.stop_reason === 'eos' ? 'stop'
      : answer.stop_reason === 'length' ? 'length' : 'interrupted';
    return { finish, usage };
  }

  // A copy: what the caller does with it changes nothing here.
  stats() {
    const c = this.#counters;
    // Why a profile build has no GPU timings, if it has none.
    const why = (this.#options.backend ?? 'webgpu') === 'cpu' ? 'cpu backend: no GPU timestamps'
      : !this.#device ? 'no device yet: the runtime requests one at load'
        : !this.#device.features.has('timestamp-query') ? "the device has no 'timestamp-query' feature" : undefined;
    const profile = !this.#build.profile ? emptyProfile(false, 'wall build: no profiling')
      : this.#profile ? { ...this.#profile, ...(this.#profile.supported || !why ? {} : { reason: why }) }
        : emptyProfile(!why, why);
    return structuredClone({
      build: this.build,
      loaded: !!this.#rt,
      busy: this.#busy,
      device_lost: this.#lost,
      stopped: this.#stopped,
      model: this.#info,
      load: this.#loadStats,
      ...c,
      accepted_per_position: [...c.accepted_per_position],
      acceptance_rate: c.drafted ? c.accepted / c.drafted : 0,
      last: this.#last,
      current: this.#job ? this.#job.progress() : null,
      gpu_buffers: this.#inst?.gpu ? this.#inst.gpu.liveBuffers() : this.#leftBehind,
      profile,
    });
  }
}

// A request in flight: turns tokens into OpenAI-shaped chunks (holding back text that may be the
// start of a stop string) and is the async-iterable stream of them (web/stream.mjs). Leaving the
// stream's loop early interrupts the request and waits until the runtime is free.
function makeJob({ body, stream, stop, model }) {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 12)}`;
  const created = Math.floor(Date.now() / 1000);
  let ended = false;
  let text = '', sent = 0, tokens = 0;
  const chunks = chunkStream(() => {
    if (!ended) job.interrupted = true;
    return job.settled;
  });
  const chunk = (delta, finish_reason = null, usage = undefined) => ({
    id, object: 'chat.completion.chunk', created, model,
    choices: [{ index: 0, delta, finish_reason }], ...(usage ? { usage } : {}),
  });
  // The end of text that may still grow into a stop string stays back.
  const safeEnd = () => {
    let keep = 0;
    for (const s of stop) {
      for (let k = Math.min(s.length - 1, text.length); k > keep; k--) {
        if (text.endsWith(s.slice(0, k))) { keep = k; break; }
      }
    }
    return text.length - keep;
  };
  const emit = (end) => {
    if (end > sent) {
      if (stream) chunks.push(chunk(sent === 0 ? { role: 'assistant', content: text.slice(0, end) } : { content: text.slice(sent, end) }));
      sent = end;
    }
  };
  let lastTokenAt = 0;
  const job = {
    body, stream, interrupted: false, stopped: false, started: 0, firstTokenMs: null,
    settled: Promise.resolve(),  // settles when the request is over and the runtime free
    // The request so far: tokens, time, decode speed after the first token.
    progress() {
      const decodeMs = lastTokenAt - job.started - (job.firstTokenMs ?? 0);
      return { completion_tokens: tokens, elapsed_ms: performance.now() - job.started,
               time_to_first_token_ms: job.firstTokenMs,
               decode_tokens_per_s: tokens > 1 && decodeMs > 0 ? (tokens - 1) * 1000 / decodeMs : 0 };
    },
    // A token and its text; false asks to stop.
    token(tokenId, piece) {
      if (tokenId >= 0) {
        tokens++;
        lastTokenAt = performance.now();
        if (job.firstTokenMs === null) job.firstTokenMs = performance.now() - job.started;
      }
      if (job.stopped) return false;
      text += piece;
      for (const s of stop) {
        const at = text.indexOf(s);
        if (at >= 0) {
          text = text.slice(0, at);
          job.stopped = true;
        }
      }
      emit(job.stopped ? text.length : safeEnd());
      return !job.stopped && !job.interrupted;
    },
    fail(e) {
      chunks.end(e);
    },
    finish(finish_reason, usage) {
      emit(text.length);
      ended = true;
      if (stream) {
        if (sent === 0) chunks.push(chunk({ role: 'assistant', content: '' }));
        chunks.push(chunk({}, finish_reason, usage));
        chunks.end();
        return undefined;
      }
      return { id, object: 'chat.completion', created, model,
               choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason }], usage };
    },
    iterable: chunks.iterable,
  };
  return job;
}
