// The WebGPU environment the WebGPU backend will run on without a GPU: Dawn (npm `webgpu`) on Mesa
// lavapipe (scripts/setup-lavapipe.sh). A compute shader must run and read back correct values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
const gpu = create([]);  // kept referenced for the life of the process

test('a compute dispatch runs and reads back on the CPU adapter', async () => {
  const adapter = await gpu.requestAdapter();
  assert.ok(adapter, 'no WebGPU adapter: source .lavapipe/env.sh (scripts/setup-lavapipe.sh) first');
  assert.ok(adapter.limits.maxStorageBufferBindingSize >= 128 * 1024 * 1024);
  const device = await adapter.requestDevice();
  const n = 4096;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const data = device.createBuffer({ size: n * 4, usage });
  const read = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const input = new Uint32Array(n).map((_, i) => (i * 2654435761) >>> 0);
  device.queue.writeBuffer(data, 0, input);
  // bf16 packed two per word, unpacked by a 16-bit shift: the way the kernels will read weights.
  const module = device.createShaderModule({ code: `
    @group(0) @binding(0) var<storage, read_write> a: array<u32>;
    @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
      if (id.x >= arrayLength(&a)) { return; }
      let w = a[id.x];
      let lo = bitcast<f32>(w << 16u);
      let hi = bitcast<f32>(w & 0xffff0000u);
      a[id.x] = bitcast<u32>(lo + hi);
    }` });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: data } }] });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(n / 64);
  pass.end();
  encoder.copyBufferToBuffer(data, 0, read, 0, n * 4);
  device.queue.submit([encoder.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const got = new Float32Array(read.getMappedRange().slice(0));
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  const bf = (bits) => { u[0] = bits >>> 0; return f[0]; };
  for (const i of [0, 1, 17, 4095]) {
    const want = Math.fround(bf(input[i] << 16) + bf(input[i] & 0xffff0000));
    if (Number.isNaN(want)) continue;
    assert.equal(got[i], want, `element ${i}`);
  }
  read.unmap();
  device.destroy();
});
