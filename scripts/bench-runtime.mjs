// The measurements scripts/bench-browser.mjs makes, written once for both places it makes them:
// Node (Dawn) and a browser page. Nothing here imports a Node module.
import { requestAdapter } from '../web/adapter.mjs';
import { createGpuImports, slotSetter, SUBMIT_DISPATCHES } from '../web/gpu_bridge.mjs';
//
// benchRuntime: one load of a model and its assistant through an mtp build's factory, then
// greedy requests that each measure one thing: prefill of a long prompt, plain decode, and
// decode with the assistant (its rounds' wall time against plain steps). Every figure is wall
// time as a page sees it: the GPU's work, the host's dispatches and the reads together.
// dispatchCost: the host's cost of a dispatch on a device of its own (encoding a pass of many
// small dispatches, and the pass done), and a submit-and-read round trip; then the runtime's own
// pattern (web/gpu_bridge.mjs: a pipeline switch, a bind group at the dispatch's dynamic uniform
// offset and a dispatch), each of its three calls timed alone, and the submit of such a pass; and
// for comparison a bind group made for each uniform slot: setting it, and making it.
// Then web/gpu_bridge.mjs's whole hand-over of lists shaped as a decode step's, a dispatch, in
// the runtime's submits (or submitDispatches').
// bridgeCost: what web/gpu_bridge.mjs itself adds to a dispatch, on a stand-in device whose calls
// do nothing.
// prefillProfile: the prefill's GPU kernels, through a profile build (a compute pass a kernel).

const best = (xs) => Math.min(...xs);
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// A raw prompt (no chat template): a word, repeated.
const words = (n) => 'The' + ' sea'.repeat(n);
// A raw prompt of about `promptTokens` tokens: two probes give the tokens a word takes with this
// runtime's tokenizer. ask(prompt, maxTokens) resolves to a request's usage.
async function sizedPrompt(ask, promptTokens) {
  const [a, b] = [(await ask(words(16), 1)).prompt_tokens, (await ask(words(32), 1)).prompt_tokens];
  if (b <= a) throw new Error(`bench-runtime: the tokenizer gives ${a} and ${b} tokens for 16 and 32 words; no prompt can be sized`);
  const perWord = (b - a) / 16;
  return words(Math.max(1, Math.round((promptTokens - (a - 16 * perWord)) / perWord)));
}

// factoryOptions: what the factory takes (a wasm module of another build, gpuValidation, cache).
export async function benchRuntime(factory, { target, assistant, tokenizer, promptTokens = 512, decodeTokens = 128,
                                               reps = 2, factoryOptions = {}, loadOptions = {} } = {}) {
  const rt = await factory(factoryOptions);
  const t0 = performance.now();
  // A fixed K: every round drafts K tokens and verifies K + 1 rows, whatever the acceptance.
  await rt.load({ target, assistant, draftPolicy: 'fixed', ...(tokenizer ? { tokenizer } : {}), ...loadOptions });
  const loadMs = performance.now() - t0;
  const ask = (prompt, maxTokens, mtp) => rt.chat.completions.create({ prompt, max_tokens: maxTokens, temperature: 0, mtp })
    .then((r) => r.usage);
  try {
    // Warm-up: every kernel of both paths compiled.
    await ask('Hello', 4, false);
    await ask('Hello', 4, true);
    const long = await sizedPrompt((prompt, maxTokens) => ask(prompt, maxTokens, false), promptTokens);
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
    const { gpu_fill: fill, memory } = rt.stats().model;
    return {
      load_s: loadMs / 1000,
      gpu_fill: fill,
      arena_bytes: memory.arena,
      prompt_tokens: prefill[0].prompt_tokens,
      prefill_tokens_per_s: Math.max(...prefill.map((u) => u.prefill_tokens_per_s)),
      decode_tokens: plain[0].completion_tokens,
      decode_tokens_per_s: Math.max(...plain.map((u) => u.decode_tokens_per_s)),
      step_ms: stepMs,
      mtp_tokens_per_s: fastest.decode_tokens_per_s,
      draft_tokens: fastest.speculative.draft_tokens,
      rounds: fastest.speculative.rounds,
      acceptance_rate: fastest.speculative.acceptance_rate,
      rounds_ahead: fastest.speculative.rounds_ahead,
      round_ms: roundMs,
      round_per_step: roundMs / stepMs,
    };
  } finally {
    await rt.unload();
  }
}

// One load of the target alone through a profile build's factory (each dispatch in a compute pass
// of its own, timed), then a prompt of about `promptTokens` tokens asked for one token twice (the
// first compiles its kernels): the second's GPU kernel time in all and its four costliest kernels.
// Each kernel's time carries its pass's own cost; the same build in two places compares the
// kernels themselves, apart from the host's and the GPU process's share of a prefill.
export async function prefillProfile(factory, { target, tokenizer, promptTokens = 512, factoryOptions = {},
                                                loadOptions = {} } = {}) {
  const rt = await factory(factoryOptions);
  await rt.load({ target, ...(tokenizer ? { tokenizer } : {}), ...loadOptions });
  const ask = (prompt, maxTokens) => rt.chat.completions.create({ prompt, max_tokens: maxTokens, temperature: 0 })
    .then((r) => r.usage);
  try {
    const long = await sizedPrompt(ask, promptTokens);
    await ask(long, 1);
    const usage = await ask(long, 1);
    const p = rt.stats().profile;
    if (!p.supported) throw new Error(`prefillProfile: no GPU timings (${p.reason})`);
    const top = Object.entries(p.ops).sort(([, x], [, y]) => y.ms - x.ms).slice(0, 4)
      .map(([name, o]) => ({ name, ms: o.ms, calls: o.calls }));
    return { profile_prompt_tokens: usage.prompt_tokens, prefill_kernels_ms: p.total_kernel_ms, prefill_kernels_top: top };
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
export async function dispatchCost(gpu, { dispatches = 2048, reps = 5, trips = 50, submitDispatches = SUBMIT_DISPATCHES } = {}) {
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
    const calls = await runtimePattern(device, dispatches, reps);
    const handOver = await bridgeOnDevice(device, { submitDispatches });
    const info = adapter.info ?? {};
    const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' / ') || 'unknown';
    return {
      adapter: name,
      software: !!info.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe/i.test(name),
      features: [...adapter.features].filter((f) => ['shader-f16', 'subgroups', 'timestamp-query'].includes(f)).sort(),
      // What the runtime's dispatch shapes depend on: it asks for these adapter limits.
      binding_bytes: adapter.limits.maxStorageBufferBindingSize,
      workgroup_bytes: adapter.limits.maxComputeWorkgroupStorageSize,
      encode_us_per_dispatch: best(encodeUs),
      pass_us_per_dispatch: best(totalUs),
      round_trip_us: tripUs,
      ...calls,
      bridge_device_us_per_dispatch: handOver,
      bridge_submit_dispatches: submitDispatches,
    };
  } finally {
    device.destroy();
  }
}

// The module's bind group layout (src/backend/webgpu/wire.h): the arena (read-write storage),
// the parameters' uniform slot, four weight buffers (read-only storage); and a kernel of it that
// does nothing at run time.
const WEIGHT_SLOTS = 4;
const layoutEntries = (dynamic) => [
  { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } },
  { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: dynamic } },
  ...Array.from({ length: WEIGHT_SLOTS }, (_, i) => ({ binding: 2 + i, visibility: GPUShaderStage.COMPUTE,
                                                       buffer: { type: 'read-only-storage' } }))];
const STEP_KERNEL = (k) => `
@group(0) @binding(0) var<storage, read_write> A: array<u32>;
@group(0) @binding(1) var<uniform> P: array<vec4<u32>, 8>;
@group(0) @binding(2) var<storage, read> W1: array<u32>;
@group(0) @binding(3) var<storage, read> W2: array<u32>;
@group(0) @binding(4) var<storage, read> W3: array<u32>;
@group(0) @binding(5) var<storage, read> W4: array<u32>;
@compute @workgroup_size(32) fn main(@builtin(global_invocation_id) id: vec3u) {
  if (id.x == 4096u) { A[P[0].x] = W1[0] + W2[0] + W3[0] + W4[0] + ${k}u; }
}`;
const SLOT = 256;  // bytes a dispatch's uniform slot takes, as the bridge's

// Microseconds a call in the runtime's pattern, on its bind group layout: setPipeline (two
// pipelines in turn), setBindGroup of one group at the next slot's dynamic offset, given as a
// typed array's range and as an array of its own (the bridge takes the faster form where it
// runs: slotSetter), dispatchWorkgroups, the three together (the bridge's form), and the submit
// of a pass of n dispatches so made, a dispatch; each the best of reps passes of n calls, after a
// whole round of them untimed (a process's first calls run slower). For comparison: setBindGroup
// of a group made for each slot (its uniform at the slot's offset, no dynamic offset), and making
// such a group (the mean of n). The GPU's work is waited for after each submit. And what a list
// of n costs once (perList below): its parameters' write, an encoder and pass, a submit.
async function runtimePattern(device, n, reps) {
  const layouts = [true, false].map((dynamic) => device.createBindGroupLayout({ entries: layoutEntries(dynamic) }));
  const pipelines = layouts.map((layout) => [1, 2].map((k) => device.createComputePipeline({
    layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
    compute: { module: device.createShaderModule({ code: STEP_KERNEL(k) }), entryPoint: 'main' } })));
  const arena = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  const weights = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  const slots = device.createBuffer({ size: SLOT * n, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const group = (layout, offset) => device.createBindGroup({ layout, entries: [
    { binding: 0, resource: { buffer: arena } }, { binding: 1, resource: { buffer: slots, offset, size: 128 } },
    ...Array.from({ length: WEIGHT_SLOTS }, (_, i) => ({ binding: 2 + i, resource: { buffer: weights } }))] });
  try {
    const dynamicGroup = group(layouts[0], 0);
    group(layouts[1], 0);  // the first group of a layout warms
    const t0 = performance.now();
    const slotGroups = Array.from({ length: n }, (_, i) => group(layouts[1], i * SLOT));
    const createUs = (1000 * (performance.now() - t0)) / n;
    const offsets = new Uint32Array(n).map((_, i) => i * SLOT);
    const offsetArrays = Array.from(offsets, (o) => [o]);  // the same offsets, one array each
    const setSlot = slotSetter(offsets);  // the runtime's form here
    const time = async (body, { submit = false, perSlot = false } = {}) => {
      const us = [];
      for (let r = 0; r < reps + 1; r++) {
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        pass.setPipeline(pipelines[perSlot ? 1 : 0][0]);
        if (perSlot) pass.setBindGroup(0, slotGroups[0]);
        else pass.setBindGroup(0, dynamicGroup, offsets, 0, 1);
        const t0 = performance.now();
        body(pass);
        const t1 = performance.now();
        pass.end();
        const buffer = enc.finish();
        const t2 = performance.now();
        if (submit) device.queue.submit([buffer]);  // else dropped: only the encoding is timed
        const t3 = performance.now();
        if (submit) await device.queue.onSubmittedWorkDone();
        if (r > 0) us.push((1000 * (submit ? t3 - t2 : t1 - t0)) / n);  // the first warms
      }
      return best(us);
    };
    const pattern = (pass) => {
      for (let i = 0; i < n; i++) {
        pass.setPipeline(pipelines[0][i & 1]);
        setSlot(pass, dynamicGroup, i);
        pass.dispatchWorkgroups(1);
      }
    };
    // What the bridge does once a list or a submit, besides its dispatches (best of reps, each
    // the mean of 16 calls, after a round untimed): writing the parameter slots of a list of
    // SUBMIT_DISPATCHES in one writeBuffer; a command encoder with one empty pass, finished; that
    // buffer's submit.
    const listDispatches = Math.min(n, SUBMIT_DISPATCHES);
    const perList = async () => {
      const data = new Uint32Array((listDispatches * SLOT) / 4);
      const timeCalls = async (body) => {
        const us = [];
        for (let r = 0; r < reps + 1; r++) {
          const t0 = performance.now();
          for (let k = 0; k < 16; k++) body();
          const t1 = performance.now();
          await device.queue.onSubmittedWorkDone();
          if (r > 0) us.push((1000 * (t1 - t0)) / 16);
        }
        return best(us);
      };
      const encode = () => {
        const enc = device.createCommandEncoder();
        enc.beginComputePass().end();
        return enc.finish();
      };
      const result = {
        list_dispatches: listDispatches,
        write_uniforms_us: await timeCalls(() => device.queue.writeBuffer(slots, 0, data)),
        encoder_us: await timeCalls(encode),
      };
      const made = Array.from({ length: 16 * (reps + 1) }, encode);
      result.empty_submit_us = await timeCalls(() => device.queue.submit([made.pop()]));
      return result;
    };
    const all = async () => ({
      set_pipeline_us: await time((pass) => { for (let i = 0; i < n; i++) pass.setPipeline(pipelines[0][i & 1]); }),
      set_bind_group_us: await time((pass) => { for (let i = 0; i < n; i++) pass.setBindGroup(0, dynamicGroup, offsets, i, 1); }),
      set_bind_group_array_us: await time((pass) => { for (let i = 0; i < n; i++) pass.setBindGroup(0, dynamicGroup, offsetArrays[i]); }),
      dispatch_call_us: await time((pass) => { for (let i = 0; i < n; i++) pass.dispatchWorkgroups(1); }),
      pattern_encode_us_per_dispatch: await time(pattern),
      pattern_submit_us_per_dispatch: await time(pattern, { submit: true }),
      set_bind_group_per_slot_us: await time((pass) => { for (let i = 0; i < n; i++) pass.setBindGroup(0, slotGroups[i]); },
                                             { perSlot: true }),
    });
    await all();
    return { ...await all(), ...await perList(), create_bind_group_us: createUs };
  } finally {
    for (const b of [arena, weights, slots]) b.destroy();
  }
}

// The module's wire format (src/backend/webgpu/wire.h) as configure() takes it: the names, and
// each one's value in the same order. A dispatch is HEADER words, then its parameter words.
const WIRE_NAMES = 'kernel weights weightSlots groupsX groupsY paramWords headerWords maxParamWords arenaBinding paramsBinding firstWeightBinding';
const WIRE_VALUES = [0, 1, WEIGHT_SLOTS, 5, 6, 7, 8, 32, 0, 1, 2];
const HEADER = 8, PARAMS = 18, LIST_AT = 2048, CODE_AT = 65536;  // words, words, words, bytes

// A bridge (web/gpu_bridge.mjs's createGpuImports, or `imports`: another version of it) on
// `device`, configured with the module's wire format, with 60 weight buffers, 2 kernels of
// `kernel(k)`'s text (runtimePattern's two) and a command list of `dispatches` dispatches shaped
// as a decode step's: the kernels in turn (so that every dispatch sets its pipeline), one or two
// weight buffers, 18 parameter words; handed over in submits of `submitDispatches`. submit() hands the
// list over once. Bind group and pipeline errors (asynchronous in WebGPU) are checked by check(),
// once a list has been handed over.
function stepBridge(device, dispatches, kernel, imports = createGpuImports, submitDispatches = SUBMIT_DISPATCHES) {
  const end = LIST_AT + dispatches * (HEADER + PARAMS);
  if (4 * end > CODE_AT) throw new Error(`stepBridge: ${dispatches} dispatches do not fit its memory`);
  const memory = new WebAssembly.Memory({ initial: 2 });
  const u32 = new Uint32Array(memory.buffer), bytes = new Uint8Array(memory.buffer);
  device.pushErrorScope('validation');
  const pending = { promise: null };
  const gpu = imports(device, () => memory, pending, { submitDispatches });
  const buffers = [];
  try {
    u32.set(WIRE_VALUES, 0);
    bytes.set(new TextEncoder().encode(WIRE_NAMES), 64);
    gpu.configure(0, WIRE_VALUES.length, 64, WIRE_NAMES.length);
    buffers.push(gpu.create_buffer(1 << 16, 0));  // the arena
    const weights = Array.from({ length: 60 }, () => gpu.create_buffer(1024, 1));
    buffers.push(...weights);
    for (let k = 1; k <= 2; k++) {
      const code = new TextEncoder().encode(kernel(k)), name = new TextEncoder().encode(`k${k}`);
      bytes.set(code, CODE_AT);
      bytes.set(name, 1024);
      if (gpu.register_kernel(k, CODE_AT, code.length, 1024, name.length) !== 1) throw gpu.lastError();
    }
    for (let i = 0, p = LIST_AT; i < dispatches; i++, p += HEADER + PARAMS) {
      u32.set([1 + (i & 1), weights[(i * 3) % 60], i % 3 ? 0 : weights[(i * 5) % 60], 0, 0, 1, 1, PARAMS], p);
      u32.fill(0, p + HEADER, p + HEADER + PARAMS);
    }
  } catch (e) {
    for (const id of buffers) gpu.destroy_buffer(id);
    gpu.dispose();
    device.popErrorScope();
    throw e;
  }
  let scope = true;  // the error scope, popped by check()
  return {
    gpu,
    submit: () => gpu.submit(4 * LIST_AT, end - LIST_AT),
    // Throws the first error the bridge or the device met so far: a read through the bridge (of
    // the arena's first word) fails on a kernel that did not compile or a GPU error; then the
    // error scope begun before the bridge was made ends. Called once.
    check: async () => {
      gpu.read_finish(gpu.read_start(0, 0, buffers[0], 0, 4), 2048, 4);
      const read = await pending.promise;
      if (gpu.lastError()) throw gpu.lastError();
      if (read !== 1) throw new Error('stepBridge: a read through the bridge failed');
      scope = false;
      const e = await device.popErrorScope();
      if (e) throw new Error(`stepBridge: ${e.message}`);
    },
    dispose: () => {
      if (scope) device.popErrorScope();
      scope = false;
      for (const id of buffers) gpu.destroy_buffer(id);
      gpu.dispose();
    },
  };
}

// The bridge's whole hand-over on `device`, microseconds a dispatch: the median of reps lists of
// a decode step's shape (stepBridge) in submits of `submitDispatches` (the runtime's by default),
// the GPU's work waited for before the next list (its kernels do nothing), so that a GPU on the
// host's own cores (a software adapter) runs beside the hand-over timed only within a list.
// `imports`: another version of createGpuImports.
export async function bridgeOnDevice(device, { dispatches = 307, reps = 40, imports, submitDispatches } = {}) {
  const b = stepBridge(device, dispatches, STEP_KERNEL, imports, submitDispatches);
  try {
    const us = [];
    for (let r = 0; r < reps + 1; r++) {
      const t0 = performance.now();
      b.submit();
      const t = performance.now() - t0;
      await device.queue.onSubmittedWorkDone();
      // The first list makes the bind groups, untimed; the same list again meets no new error.
      if (r === 0) await b.check();
      else if (b.gpu.lastError()) throw b.gpu.lastError();
      if (r > 0) us.push((1000 * t) / dispatches);
    }
    return median(us);
  } finally {
    b.dispose();
  }
}

// The bridge's own microseconds a dispatch: lists of a decode step's shape (stepBridge) on a
// stand-in device whose compute passes only count their calls and whose other calls do nothing;
// the best of reps runs of `lists` lists. Also the device calls a dispatch (3 here: a pipeline,
// a bind group, the dispatch).
export function bridgeCost({ dispatches = 307, lists = 200, reps = 3 } = {}) {
  let calls = 0;
  const pass = { setPipeline() { calls++; }, setBindGroup() { calls++; }, dispatchWorkgroups() { calls++; }, end() {} };
  const device = {
    features: new Set(), limits: {}, adapterInfo: {},
    createBuffer: ({ size }) => ({ size, destroy() {} }),
    createBindGroupLayout: () => ({}), createPipelineLayout: () => ({}), createBindGroup: () => ({}),
    createShaderModule: () => ({}), createComputePipeline: () => ({}), createQuerySet: () => ({ destroy() {} }),
    pushErrorScope() {}, popErrorScope: () => Promise.resolve(null),
    createCommandEncoder: () => ({ beginComputePass: () => pass, finish: () => ({}), copyBufferToBuffer() {} }),
    queue: { writeBuffer() {}, submit() {} },
  };
  const b = stepBridge(device, dispatches, () => '');
  try {
    const us = [];
    for (let r = 0; r < reps + 1; r++) {
      calls = 0;
      const t0 = performance.now();
      for (let l = 0; l < lists; l++) b.submit();
      if (r > 0) us.push((1000 * (performance.now() - t0)) / (lists * dispatches));
      if (b.gpu.lastError()) throw b.gpu.lastError();
    }
    return { bridge_us_per_dispatch: best(us), device_calls_per_dispatch: calls / (lists * dispatches) };
  } finally {
    b.dispose();
  }
}
