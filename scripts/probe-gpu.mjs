// What the GPU probes (scripts/probe-*.mjs) share: their command line, bf16 values, and on a
// GPUDevice a buffer filled from data, a buffer's bytes read back, a compute pipeline whose
// errors throw (the first line of a validation error's message), and the matrix-vector probes'
// baseline passes (an empty dispatch, a plain read of the matrix) and rounds of timed passes.
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

// An empty dispatch: bound to an output (binding 2) only.
const emptyKernel = `
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) li: u32) { if (li == 99u) { O[0] = 1.0; } }`;
// A plain read of a matrix's bytes (binding 0; its outs and ins in the uniform at binding 3):
// each thread of a block of 256 xors K 16-byte words; `words` is the WGSL expression of the
// matrix's 16-byte words from p.outs and p.ins.
const streamKernel = (K, words) => `
struct P { outs: u32, ins: u32 }
@group(0) @binding(0) var<storage, read> W: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let n = ${words};
  let i = wg.x * ${256 * K}u + li;
  var s = vec4<u32>(0u);
  for (var k = 0u; k < ${K}u; k++) { if (i + 256u * k < n) { s ^= W[i + 256u * k]; } }
  if (s.x == 0x12345678u) { O[0] = f32(s.y); }
}`;

export function gpuHelpers(device) {
  let baseline = null;
  const helpers = {
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
    // The entries a shape of `bytes` bytes times before its variants: 'empty' (bind its output
    // alone), 'read 4' and 'read 16'. `words`: as streamKernel's, the same for every call.
    async baseEntries(bytes, words) {
      baseline ??= { empty: await helpers.pipelineOf(emptyKernel), reads: [await helpers.pipelineOf(streamKernel(4, words)),
                                                                       await helpers.pipelineOf(streamKernel(16, words))] };
      return [{ name: 'empty', pipeline: baseline.empty, groups: 1, outputOnly: true },
              { name: 'read 4', pipeline: baseline.reads[0], groups: Math.ceil(bytes / 16 / 1024) },
              { name: 'read 16', pipeline: baseline.reads[1], groups: Math.ceil(bytes / 16 / 4096) }];
    },
    // Each entry's pass of `copies` dispatches (its pipeline, bind group `binds[l]` for copy l,
    // `groups` workgroups: past 32768 in rows of 32768), timed by timestamp queries in 2 x reps
    // rounds sent back to back, each round starting one entry further on (the first half keeps
    // the GPU busy until its clocks have risen). Returns each entry's median over the last reps
    // rounds, in microseconds a dispatch.
    async timeRounds(entries, copies, reps) {
      const E = entries.length, rounds = 2 * reps;
      const queries = device.createQuerySet({ type: 'timestamp', count: 2 * E * rounds });
      const resolved = device.createBuffer({ size: 16 * E * rounds, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      for (let r = 0; r < rounds; r++) {
        const enc = device.createCommandEncoder();
        for (let k = 0; k < E; k++) {
          const e = (k + r) % E;
          const q = 2 * (r * E + e);
          const pass = enc.beginComputePass({ timestampWrites: { querySet: queries, beginningOfPassWriteIndex: q, endOfPassWriteIndex: q + 1 } });
          pass.setPipeline(entries[e].pipeline);
          for (let l = 0; l < copies; l++) {
            pass.setBindGroup(0, entries[e].binds[l]);
            pass.dispatchWorkgroups(Math.min(entries[e].groups, 32768), Math.ceil(entries[e].groups / 32768));
          }
          pass.end();
        }
        if (r === rounds - 1) enc.resolveQuerySet(queries, 0, 2 * E * rounds, resolved, 0);
        device.queue.submit([enc.finish()]);
      }
      const t = new BigUint64Array(await helpers.readBack(resolved, 16 * E * rounds));
      resolved.destroy();
      queries.destroy();
      return entries.map((_, e) => {
        const all = [...Array(reps).keys()].map((i) => {
          const q = 2 * ((rounds - reps + i) * E + e);
          return Number(t[q + 1] - t[q]) / 1e3 / copies;
        }).sort((a, b) => a - b);
        return all[Math.floor(reps / 2)];
      });
    },
  };
  return helpers;
}
