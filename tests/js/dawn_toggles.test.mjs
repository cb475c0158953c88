// The toggles of the devices made in Node (web/dawn_toggles.mjs) take effect in Dawn: timestamps
// come as the GPU wrote them, not rounded to 65.5 us steps; with validation on (the default) an
// invalid call raises an error, an index past an array's end is clamped to the array and
// workgroup memory starts zeroed, and with validation off none of these happens (what is read
// instead is lavapipe's, the CPU driver the tests run on: the next array, or what an earlier
// workgroup on the same thread left). On a CPU driver, a wait on the device checks Dawn's events
// about once a millisecond instead of spinning (yieldWhileWaiting).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, globals } from 'webgpu';
import { dawnToggles, yieldWhileWaiting } from '../../web/dawn_toggles.mjs';

Object.assign(globalThis, globals);
const roots = [];  // Dawn's instances outlive their devices

async function makeDevice(toggles, requiredFeatures = []) {
  const gpu = create(toggles);
  roots.push(gpu);
  const adapter = await gpu.requestAdapter();
  assert.ok(adapter, 'no WebGPU adapter (source .lavapipe/env.sh)');
  return adapter.requestDevice({ requiredFeatures: requiredFeatures.filter((f) => adapter.features.has(f)) });
}

// The validation error of a buffer that is both MAP_READ and MAP_WRITE (WebGPU forbids it), or null.
async function invalidBufferError(device) {
  device.pushErrorScope('validation');
  const b = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.MAP_WRITE });
  const e = await device.popErrorScope();
  b.destroy();
  return e;
}

test('validation is on by default and off with validation: false', async () => {
  const on = await makeDevice(dawnToggles());
  assert.match((await invalidBufferError(on))?.message ?? '', /MapRead\|MapWrite/);
  on.destroy();
  const off = await makeDevice(dawnToggles({ validation: false }));
  assert.equal(await invalidBufferError(off), null);
  off.destroy();
});

// The words of `io` after one dispatch of `workgroups` workgroups of a kernel whose only binding is
// io, a storage buffer starting as `words`.
async function runOnWords(device, code, words, workgroups) {
  const pipeline = device.createComputePipeline({
    layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
  const io = device.createBuffer({ size: words.byteLength,
                                   usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(io, 0, words);
  const read = device.createBuffer({ size: words.byteLength, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
                                                entries: [{ binding: 0, resource: { buffer: io } }] }));
  pass.dispatchWorkgroups(workgroups);
  pass.end();
  encoder.copyBufferToBuffer(io, 0, read, 0, words.byteLength);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const values = [...new Uint32Array(read.getMappedRange())];
  read.unmap();
  return values;
}

// What a kernel reads at index 5 of a 4-word workgroup array: WebGPU's bounds checks clamp it to
// the last word (13); without them the read lands past the array (on lavapipe in the next one).
async function readPastTheEnd(device) {
  const code = `@group(0) @binding(0) var<storage, read_write> io: array<u32>;
var<workgroup> w: array<u32, 4>;
var<workgroup> z: array<u32, 4>;
@compute @workgroup_size(1) fn main() {
  for (var i = 0u; i < 4u; i++) { w[i] = 10u + i; z[i] = 20u + i; }
  workgroupBarrier();
  io[0] = w[io[1]];
}`;
  return (await runOnWords(device, code, new Uint32Array([0, 5]), 1))[0];
}

test('indices are clamped by default and not with validation: false', async () => {
  const on = await makeDevice(dawnToggles());
  assert.equal(await readPastTheEnd(on), 13);
  on.destroy();
  const off = await makeDevice(dawnToggles({ validation: false }));
  assert.notEqual(await readPastTheEnd(off), 13);
  off.destroy();
});

// What each of 64 workgroups reads from a workgroup word before writing it: with WebGPU's zeroing,
// 0 every time; without it, on lavapipe, what an earlier workgroup on the same thread left there.
async function unwrittenReads(device) {
  const code = `@group(0) @binding(0) var<storage, read_write> io: array<u32, 64>;
var<workgroup> w: u32;
@compute @workgroup_size(1) fn main(@builtin(workgroup_id) id: vec3<u32>) {
  io[id.x] = w;
  w = 100u + id.x;
}`;
  return runOnWords(device, code, new Uint32Array(64), 64);
}

test('workgroup memory starts zeroed by default and not with validation: false', async () => {
  const on = await makeDevice(dawnToggles());
  assert.deepEqual(await unwrittenReads(on), new Array(64).fill(0));
  on.destroy();
  const off = await makeDevice(dawnToggles({ validation: false }));
  const reads = await unwrittenReads(off);
  assert.ok(reads.some((v) => v >= 100 && v < 164), `reads ${reads.join(' ')}`);
  off.destroy();
});

test('timestamps are not rounded to 65.5 us steps', async () => {
  const device = await makeDevice(dawnToggles(), ['timestamp-query']);
  if (!device.features.has('timestamp-query')) {
    device.destroy();
    assert.fail('the adapter has no timestamp-query: the bench profile cannot run here');
  }
  const n = 16;
  const qs = device.createQuerySet({ type: 'timestamp', count: n });
  const encoder = device.createCommandEncoder();
  for (let i = 0; i < n; i += 2) {
    encoder.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: i, endOfPassWriteIndex: i + 1 } })
      .end();
  }
  const resolve = device.createBuffer({ size: 8 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 8 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  encoder.resolveQuerySet(qs, 0, n, resolve, 0);
  encoder.copyBufferToBuffer(resolve, 0, read, 0, 8 * n);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const stamps = [...new BigUint64Array(read.getMappedRange())];
  read.unmap();
  // Rounded stamps are all multiples of 65,536 ns; 16 real ones all landing on such a multiple
  // would be a 1 in 2^256 chance.
  assert.ok(stamps.some((s) => s % 65536n !== 0n), `timestamps ${stamps.join(' ')}`);
  device.destroy();
});

// Dawn's event polls while the device runs one long dispatch: the count and the wait's time.
async function pollsDuringLongWork(device) {
  const module = device.createShaderModule({ code: `
    @group(0) @binding(0) var<storage, read_write> out: array<f32>;
    @compute @workgroup_size(1) fn main() {
      var x = 0.0;
      for (var i = 0u; i < 30000000u; i++) { x = fma(x, 0.999999, 1.0); }
      out[0] = x;
    }` });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const out = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: out } }] });
  const run = async () => {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
    encoder.copyBufferToBuffer(out, 0, read, 0, 4);
    device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    read.unmap();
  };
  await run();  // compiles the pipeline
  let polls = 0;
  const scheduled = globalThis.setImmediate;
  globalThis.setImmediate = (fn, ...args) => (polls++, scheduled(fn, ...args));
  const start = performance.now();
  try {
    await run();
  } finally {
    globalThis.setImmediate = scheduled;
  }
  return { polls, ms: performance.now() - start };
}

test('on a CPU driver a wait checks the device about once a millisecond, not in a spin', async () => {
  const device = await makeDevice(dawnToggles());
  assert.ok(device.adapterInfo.isFallbackAdapter, 'lavapipe is a fallback adapter');
  const spinning = await pollsDuringLongWork(device);
  yieldWhileWaiting(device);
  const yielding = await pollsDuringLongWork(device);
  device.destroy();
  const what = `spinning ${JSON.stringify(spinning)}, yielding ${JSON.stringify(yielding)}`;
  assert.ok(spinning.ms > 50, `the dispatch runs long enough to tell: ${what}`);
  assert.ok(spinning.polls > 5 * spinning.ms, `Dawn spins by itself: ${what}`);
  assert.ok(yielding.polls < 200 + 2 * yielding.ms, `a yielding wait polls about once a millisecond: ${what}`);
});
