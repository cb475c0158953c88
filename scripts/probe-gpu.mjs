// What the GPU probes (scripts/probe-*.mjs) share: bf16 conversions, and on a GPUDevice a
// buffer filled from data, a buffer's bytes read back, and a compute pipeline whose errors throw
// (the first line of a validation error's message).
export const bf16Bits = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;
export const bf16Value = (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0];

export function gpuHelpers(device) {
  return {
    upload(data, usage) {
      const b = device.createBuffer({ size: data.byteLength, usage: usage | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(b, 0, data);
      return b;
    },
    async readBack(buffer, size) {
      const staging = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buffer, 0, staging, 0, size);
      device.queue.submit([enc.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const bytes = staging.getMappedRange().slice(0);
      staging.destroy();
      return bytes;
    },
    async pipelineOf(code) {
      device.pushErrorScope('validation');
      let pipeline, failure = null;
      try {
        const module = device.createShaderModule({ code });
        pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
      } catch (e) {
        failure = e;
      } finally {
        const error = await device.popErrorScope();
        failure ??= error && new Error(error.message.split('\n')[0]);
      }
      if (failure) throw failure;
      return pipeline;
    },
  };
}
