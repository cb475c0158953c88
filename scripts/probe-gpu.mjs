// What the GPU probes (scripts/probe-*.mjs) share: their command line, bf16 values, and on a
// GPUDevice a buffer filled from data, a buffer's bytes read back, and a compute pipeline whose
// errors throw (the first line of a validation error's message).
import { parseArgs } from 'node:util';

// A probe's command line, parsed with node:util's parseArgs `options`: values (an option declared
// `multiple` may still be given once only, and comes as its one value), fail(message) (prints
// `script: message`, exits 2) and whole(text, name, lo, hi) (a whole number lo to hi, else fails
// naming --name).
export function probeArgs(script, options) {
  const fail = (message) => {
    console.error(`${script}: ${message}`);
    process.exit(2);
  };
  let values;
  try {
    ({ values } = parseArgs({ options, strict: true }));
  } catch (e) {
    fail(e.message);
  }
  for (const [name, { multiple }] of Object.entries(options)) {
    if (!multiple || values[name] === undefined) continue;
    if (values[name].length > 1) fail(`--${name} is given more than once`);
    values[name] = values[name][0];
  }
  const whole = (text, name, lo, hi) => {
    const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
    if (!(n >= lo && n <= hi)) fail(`--${name} must be a whole number from ${lo} to ${hi}, not '${text}'`);
    return n;
  };
  return { values, fail, whole };
}

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
