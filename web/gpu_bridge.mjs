// The "gpu" imports of the WebAssembly module, implemented with the WebGPU JS API (Dawn's
// `webgpu` package in Node, navigator.gpu in browsers). See src/backend/webgpu/gpu_imports.h.
// Pipelines and bind groups are made once and reused; a step's dispatches arrive as one command
// list and go to the GPU in one submit.

const UNIFORM_SLOT = 256;      // bytes per dispatch's parameters (minUniformBufferOffsetAlignment)
const UNIFORM_SLOTS = 4096;

export function createGpuImports(device, memory, pending) {
  const buffers = [null];
  const kernels = [null];
  const layout = device.createBindGroupLayout({
    entries: [
      { binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } },
      { binding: 1, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } },
      { binding: 2, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } },
      { binding: 3, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } },
      { binding: 4, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: true, minBindingSize: 64 } },
    ],
  });
  const pipelineLayout = device.createPipelineLayout({ bindGroupLayouts: [layout] });
  const dummy = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
  const uniforms = device.createBuffer({ size: UNIFORM_SLOT * UNIFORM_SLOTS, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const uniformData = new Uint32Array(UNIFORM_SLOT * UNIFORM_SLOTS / 4);
  const groups = new Map();  // "arena,w1,w2,w3" -> bind group
  let arena = 0;
  let error = null;

  const bytes = () => new Uint8Array(memory().buffer);
  const bindGroup = (a, w1, w2, w3) => {
    const key = `${a},${w1},${w2},${w3}`;
    let g = groups.get(key);
    if (!g) {
      const res = (id) => ({ buffer: id ? buffers[id] : dummy });
      g = device.createBindGroup({
        layout,
        entries: [
          { binding: 0, resource: { buffer: buffers[a] } },
          { binding: 1, resource: res(w1) }, { binding: 2, resource: res(w2) }, { binding: 3, resource: res(w3) },
          { binding: 4, resource: { buffer: uniforms, size: 64 } },
        ],
      });
      groups.set(key, g);
    }
    return g;
  };

  return {
    create_buffer(size, kind) {
      try {
        const usage = kind === 0
          ? GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST
          : GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
        buffers.push(device.createBuffer({ size, usage }));
        if (kind === 0) arena = buffers.length - 1;
        return buffers.length - 1;
      } catch (e) {
        error = e;
        return 0;
      }
    },
    destroy_buffer(id) {
      buffers[id]?.destroy();
      buffers[id] = null;
      for (const key of [...groups.keys()]) {
        if (key.split(',').map(Number).includes(id)) groups.delete(key);
      }
    },
    write_buffer(id, offset, ptr, size) {
      device.queue.writeBuffer(buffers[id], offset, bytes(), ptr, size);
    },
    register_kernel(id, ptr, length) {
      const code = new TextDecoder().decode(bytes().subarray(ptr, ptr + length));
      const module = device.createShaderModule({ code });
      kernels[id] = device.createComputePipeline({ layout: pipelineLayout, compute: { module, entryPoint: 'main' } });
      return 1;
    },
    submit(ptr, count) {
      const words = new Uint32Array(memory().buffer, ptr, count).slice();
      let at = 0;
      while (at < words.length) {
        // Encode up to UNIFORM_SLOTS dispatches per submit.
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        let slot = 0;
        while (at < words.length && slot < UNIFORM_SLOTS) {
          const [kernel, w1, w2, w3, gx, gy, n] = words.subarray(at, at + 7);
          uniformData.fill(0, slot * 64, slot * 64 + 16);
          uniformData.set(words.subarray(at + 7, at + 7 + n), slot * 64);
          pass.setPipeline(kernels[kernel]);
          pass.setBindGroup(0, bindGroup(arena, w1, w2, w3), [slot * UNIFORM_SLOT]);
          pass.dispatchWorkgroups(gx, gy);
          at += 7 + n;
          slot++;
        }
        pass.end();
        device.queue.writeBuffer(uniforms, 0, uniformData, 0, slot * 64);
        device.queue.submit([encoder.finish()]);
      }
    },
    // Async: the module is suspended (asyncify) until the bytes are in its memory.
    read_buffer(id, offset, dst, size) {
      const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const encoder = device.createCommandEncoder();
      encoder.copyBufferToBuffer(buffers[id], offset, staging, 0, size);
      device.queue.submit([encoder.finish()]);
      pending.promise = staging.mapAsync(GPUMapMode.READ).then(() => {
        bytes().set(new Uint8Array(staging.getMappedRange()), dst);
        staging.unmap();
        staging.destroy();
        return 1;
      }, (e) => {
        error = e;
        return 0;
      });
      return 0;
    },
    max_binding_size() {
      return device.limits.maxStorageBufferBindingSize;
    },
    lastError: () => error,
    // Buffers the module made and has not destroyed (unloading must bring this back to 0).
    liveBuffers: () => buffers.filter((b) => b !== null).length,
    createdBuffers: () => buffers.length - 1,
  };
}
