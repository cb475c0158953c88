// The measurements scripts/bench-browser.mjs makes, written once for both places it makes them:
// Node (Dawn) and a browser page. Nothing here imports a Node module.
import { requestAdapter } from '../web/adapter.mjs';
//
// benchRuntime: one load of a model and its assistant through an mtp build's factory, then
// greedy requests that each measure one thing: prefill of a long prompt, plain decode, and
// decode with the assistant (its rounds' wall time against plain steps). Every figure is wall
// time as a page sees it: the GPU's work, the host's dispatches and the reads together.
// dispatchCost: the host's cost of a dispatch on a device of its own (encoding a pass of many
// small dispatches, and the pass done), and a submit-and-read round trip.

const best = (xs) => Math.min(...xs);

// A raw prompt (no chat template): a word, repeated.
const words = (n) => 'The' + ' sea'.repeat(n);

// factoryOptions: what the factory takes (a wasm module of another build, gpuValidation, cache).
export async function benchRuntime(factory, { target, assistant, tokenizer, promptTokens = 512, decodeTokens = 128,
                                               reps = 2, factoryOptions = {} } = {}) {
  const rt = await factory(factoryOptions);
  const t0 = performance.now();
  // A fixed K: every round drafts K tokens and verifies K + 1 rows, whatever the acceptance.
  await rt.load({ target, assistant, draftPolicy: 'fixed', ...(tokenizer ? { tokenizer } : {}) });
  const loadMs = performance.now() - t0;
  const ask = (prompt, maxTokens, mtp) => rt.chat.completions.create({ prompt, max_tokens: maxTokens, temperature: 0, mtp })
    .then((r) => r.usage);
  try {
    // Warm-up: every kernel of both paths compiled. Two prompts also give the tokens a word
    // takes with this tokenizer, and so the words of a prompt of `promptTokens` tokens.
    await ask('Hello', 4, false);
    await ask('Hello', 4, true);
    const [a, b] = [(await ask(words(16), 1, false)).prompt_tokens, (await ask(words(32), 1, false)).prompt_tokens];
    if (b <= a) throw new Error(`benchRuntime: the tokenizer gives ${a} and ${b} tokens for 16 and 32 words; no prompt can be sized`);
    const perWord = (b - a) / 16;
    const long = words(Math.max(1, Math.round((promptTokens - (a - 16 * perWord)) / perWord)));
    await ask(long, 1, false);
    const prefill = [];
    for (let i = 0; i < reps; i++) prefill.push(await ask(long, 1, false));
    const plain = [], drafted = [];
    for (let i = 0; i < reps; i++) {
      plain.push(await ask('Once upon a time', decodeTokens, false));
      drafted.push(await ask('Once upon a time', decodeTokens, true));
    }
    if (prefill.some((u) => !(u.prefill_tokens_per_s > 0))) throw new Error('benchRuntime: a prefill has no speed');
    for (const u of [...plain, ...drafted]) {
      if (!(u.completion_tokens >= 2 && u.decode_tokens_per_s > 0)) {
        throw new Error(`benchRuntime: a request gave ${u.completion_tokens} tokens and no decode speed (an early end?)`);
      }
    }
    if (drafted.some((u) => u.speculative.rounds < 1)) throw new Error('benchRuntime: a request with the assistant made no rounds');
    // Decode time covers the tokens after the first (which the prefill gives).
    const decodeMs = (u) => (1000 * (u.completion_tokens - 1)) / u.decode_tokens_per_s;
    const stepMs = best(plain.map((u) => 1000 / u.decode_tokens_per_s));
    // A round's cost: decode time over rounds (the last rounds may draft fewer than K).
    const fastest = drafted.reduce((a, u) => (u.decode_tokens_per_s > a.decode_tokens_per_s ? u : a));
    const roundMs = decodeMs(fastest) / fastest.speculative.rounds;
    return {
      load_s: loadMs / 1000,
      prompt_tokens: prefill[0].prompt_tokens,
      prefill_tokens_per_s: Math.max(...prefill.map((u) => u.prefill_tokens_per_s)),
      decode_tokens: plain[0].completion_tokens,
      decode_tokens_per_s: Math.max(...plain.map((u) => u.decode_tokens_per_s)),
      step_ms: stepMs,
      mtp_tokens_per_s: fastest.decode_tokens_per_s,
      draft_tokens: fastest.speculative.draft_tokens,
      rounds: fastest.speculative.rounds,
      acceptance_rate: fastest.speculative.acceptance_rate,
      round_ms: roundMs,
      round_per_step: roundMs / stepMs,
    };
  } finally {
    await rt.unload();
  }
}

const KERNEL = `
@group(0) @binding(0) var<storage, read_write> count: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x == 0u) { count[0] += 1u; }
}`;

// gpu: navigator.gpu, or Dawn's in Node. dispatches: how many a pass encodes.
export async function dispatchCost(gpu, { dispatches = 2048, reps = 5, trips = 50 } = {}) {
  const adapter = await requestAdapter(gpu, { powerPreference: 'high-performance' });
  if (!adapter) throw new Error('dispatchCost: no WebGPU adapter');
  const device = await adapter.requestDevice();
  try {
    const buffer = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code: KERNEL }),
                                                                               entryPoint: 'main' } });
    const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] });
    const encodeUs = [], totalUs = [];
    for (let r = 0; r < reps + 1; r++) {
      const t0 = performance.now();
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      for (let i = 0; i < dispatches; i++) {
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(1);
      }
      pass.end();
      device.queue.submit([enc.finish()]);
      const t1 = performance.now();
      await device.queue.onSubmittedWorkDone();
      const t2 = performance.now();
      if (r === 0) continue;  // the first pass compiles and warms
      encodeUs.push((1000 * (t1 - t0)) / dispatches);
      totalUs.push((1000 * (t2 - t0)) / dispatches);
    }
    const staging = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    // Trips one after another, timed as one span: a page's clock may be coarse.
    const t0 = performance.now();
    for (let r = 0; r < trips; r++) {
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buffer, 0, staging, 0, 16);
      device.queue.submit([enc.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      staging.unmap();
    }
    const tripUs = (1000 * (performance.now() - t0)) / trips;
    const info = adapter.info ?? {};
    const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' / ') || 'unknown';
    return {
      adapter: name,
      software: !!info.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(name),
      features: [...adapter.features].filter((f) => ['shader-f16', 'subgroups', 'timestamp-query'].includes(f)).sort(),
      encode_us_per_dispatch: best(encodeUs),
      pass_us_per_dispatch: best(totalUs),
      round_trip_us: tripUs,
    };
  } finally {
    device.destroy();
  }
}
