#!/usr/bin/env node
// How close decode's and verification's matrix products of bf16 weights can come to the bytes
// floor here, and which shape of kernel gets there: out[r, o] = w[o] . x[r], w (outs x ins) bf16,
// x (rows x ins) f32. A kernel variant has WG threads a workgroup, LPF lanes a feature (their sums
// added by subgroup shuffles, and through workgroup memory past a subgroup), FPT features a lane
// group, U 16-byte loads a stream in flight before use, and reads its input from the storage
// buffer (declared read-only, or read_write as the runtime's arena is) or stages it in workgroup
// memory first. For each of E2B's product shapes it times passes of L dispatches, each over its
// own copy of the matrix (up to 64 copies within --max-bytes, 512 MiB by default: far more than
// the L2 cache holds), and prints the time a dispatch against the time the same bytes take in a
// plain streaming read (the faster of four and sixteen 16-byte words a thread) and an empty
// dispatch's, all in the same passes.
//   node scripts/probe-matvec.mjs [--reps N] [--rows R,R...] [--only TEXT] [--max-bytes B] [--shrink N]
// --rows: the input rows of a product (1; a list: each in turn); --only: the variants whose name
// has TEXT (or one of TEXT's parts between |s); --max-bytes caps the L copies' bytes and
// --shrink divides every shape's outputs by N, a power of two (both for a CPU adapter). The
// passes of all variants of a shape go to the GPU in 2N rounds back to back (N at most 32), each
// round in another order; a figure is the median of the last N rounds. A variant is named and
// skipped where a row has fewer octs than its lanes, or its workgroup memory does not fit the
// device. A variant whose sampled outputs are wrong is marked WRONG, and one whose kernel fails
// to build otherwise is named: either makes the exit status 1.
import { bf16Value, gpuHelpers, probeArgs } from './probe-gpu.mjs';

const { values, fail, whole } = probeArgs('probe-matvec', {
  reps: { type: 'string' }, 'max-bytes': { type: 'string' }, only: { type: 'string' }, rows: { type: 'string' },
  shrink: { type: 'string' } });
const reps = whole(values.reps ?? '5', 'reps', 1, 32);  // 2 timestamps x 2N rounds x 30 passes <= 4096
const rowsList = (values.rows ?? '1').split(',').map((t) => whole(t, 'rows', 1, 8));
const shrink = whole(values.shrink ?? '1', 'shrink', 1, 256);
if (shrink & (shrink - 1)) fail(`--shrink must be a power of two (the shapes' outputs share 512), not '${shrink}'`);
const maxBytes = whole(values['max-bytes'] ?? String(512 << 20), 'max-bytes', 1 << 16, 2 ** 40);

const webgpu = await import('webgpu');
Object.assign(globalThis, webgpu.globals);
const root = webgpu.create(['disable-dawn-features=timestamp_quantization']);
globalThis.probeRoot = root;  // Dawn's instance lives while this does: keep it past its last use
const adapter = await root.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) fail('no WebGPU adapter');
const need = ['subgroups', 'timestamp-query'];
const missing = need.filter((f) => !adapter.features.has(f));
if (missing.length) fail(`the adapter lacks ${missing.join(', ')}`);
console.log(`adapter: ${adapter.info.vendor} ${adapter.info.description}; subgroups ${adapter.info.subgroupMinSize} to ${adapter.info.subgroupMaxSize}`);
const device = await adapter.requestDevice({
  requiredFeatures: need,
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                    maxBufferSize: adapter.limits.maxBufferSize,
                    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
const SG = adapter.info.subgroupMinSize;

// The product kernel of one variant for rows of `ins` inputs.
function productKernel({ WG, LPF, FPT, U, staged, rw }, ins, ROWS) {
  const red = Math.min(LPF, SG);
  const feats = WG / LPF * FPT;  // features a workgroup
  const R = (n) => [...Array(n).keys()];
  return `enable subgroups;
struct P { outs: u32, ins: u32 }
@group(0) @binding(0) var<storage, read> W: array<vec4<u32>>;
@group(0) @binding(1) var<storage, ${rw ? 'read_write' : 'read'}> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
${staged ? `var<workgroup> xs: array<vec4<f32>, ${ROWS * ins / 4}>;` : ''}
${LPF > SG ? `var<workgroup> part: array<array<f32, ${FPT * ROWS}>, ${WG / SG}>;` : ''}
fn xin(i: u32) -> vec4<f32> { ${staged ? 'return xs[i];' : 'return X[i];'} }
// acc[f * ROWS + r] += w . x[r], elements 8q .. 8q + 7.
fn dot8(acc: ptr<function, array<f32, ${FPT * ROWS}>>, f: u32, w: vec4<u32>, q: u32) {
  let lo = bitcast<vec4<f32>>(w << vec4<u32>(16u));
  let hi = bitcast<vec4<f32>>(w & vec4<u32>(0xffff0000u));
  let wa = vec4<f32>(lo.x, hi.x, lo.y, hi.y); let wb = vec4<f32>(lo.z, hi.z, lo.w, hi.w);
  for (var r = 0u; r < ${ROWS}u; r++) {
    let a = xin(r * p.ins / 4u + 2u * q); let b = xin(r * p.ins / 4u + 2u * q + 1u);
    (*acc)[f * ${ROWS}u + r] += dot(wa, a) + dot(wb, b);
  }
}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let octs = p.ins / 8u;
${staged ? `  for (var i = li; i < ${ROWS}u * p.ins / 4u; i += ${WG}u) { xs[i] = X[i]; }
  workgroupBarrier();` : ''}
  let grp = li / ${LPF}u; let lane = li % ${LPF}u;
  let f0 = wg.x * ${feats}u + grp * ${FPT}u;
  var row: array<u32, ${FPT}>;
  for (var f = 0u; f < ${FPT}u; f++) { row[f] = min(f0 + f, p.outs - 1u) * octs; }
  var acc: array<f32, ${FPT * ROWS}>;
  var q = lane;
  for (; q + ${(U - 1) * LPF}u < octs; q += ${U * LPF}u) {
${R(U).map((u) => R(FPT).map((f) => `    let w${u}_${f} = W[row[${f}] + q + ${u * LPF}u];`).join('\n')).join('\n')}
${R(U).map((u) => R(FPT).map((f) => `    dot8(&acc, ${f}u, w${u}_${f}, q + ${u * LPF}u);`).join('\n')).join('\n')}
  }
  for (; q < octs; q += ${LPF}u) {
    for (var f = 0u; f < ${FPT}u; f++) { dot8(&acc, f, W[row[f] + q], q); }
  }
  for (var f = 0u; f < ${FPT * ROWS}u; f++) {
${R(Math.log2(red)).map((k) => `    acc[f] += subgroupShuffleXor(acc[f], ${1 << k}u);`).join('\n')}
  }
${LPF > SG ? `  if (li % ${SG}u == 0u) { part[li / ${SG}u] = acc; }
  workgroupBarrier();
  if (lane == 0u) {
    for (var s = 1u; s < ${LPF / SG}u; s++) {
      for (var f = 0u; f < ${FPT * ROWS}u; f++) { acc[f] += part[li / ${SG}u + s][f]; }
    }
  }` : ''}
  if (lane == 0u) {
    for (var f = 0u; f < ${FPT}u; f++) {
      for (var r = 0u; r < ${ROWS}u; r++) { if (f0 + f < p.outs) { O[r * p.outs + f0 + f] = acc[f * ${ROWS}u + r]; } }
    }
  }
}`;
}

const { upload, readBack, pipelineOf, baseEntries, timeRounds } = gpuHelpers(device);

// Variants as [lanes a feature, features a lane group, loads in flight, { WG, staged, rw }] (WG
// 256 unless given), each named from its values.
const variantName = ({ WG, LPF, FPT, U, staged, rw }) =>
  [`lanes ${LPF}`, FPT > 1 && `${FPT} features`, `${U} load${U > 1 ? 's' : ''}`, WG !== 256 && `wg ${WG}`,
   rw && 'input read-write', staged && 'staged'].filter(Boolean).join(', ');
const variants = [
  [32, 1, 2],
  [32, 2, 1],
  [32, 2, 1, { staged: true }],
  [32, 1, 4],
  [32, 4, 1],
  [32, 1, 2, { WG: 128 }],
  [16, 1, 2],
  [32, 2, 2],
  [16, 1, 4],
  [8, 1, 2],
  [8, 1, 4],
  [8, 2, 2],
  [8, 1, 4, { staged: true }],
  [4, 1, 4],
  [64, 1, 2],
  [64, 1, 4],
  [128, 1, 2],
  [256, 1, 2],
  [64, 2, 1],
  [128, 2, 1],
  [128, 2, 2],
  [256, 2, 2],
  [16, 2, 2],
  [64, 1, 2, { WG: 128 }],
  [128, 1, 2, { rw: true }],
  [128, 2, 1, { rw: true }],
  [64, 1, 2, { rw: true }],
  [128, 1, 2, { staged: true }],
].map(([LPF, FPT, U, { WG = 256, staged = false, rw = false } = {}]) => {
  const v = { WG, LPF, FPT, U, staged, rw };
  return { ...v, name: variantName(v) };
}).filter((v) => !values.only || values.only.split('|').some((t) => v.name.includes(t)));
// E2B's one-row products (outs x ins): the MLP's gate and up together (and on its KV-shared
// layers), its down (both widths), the query and the attention output.
const shapes = [['gate and up', 12288, 1536], ['gate and up, wide', 24576, 1536], ['down', 1536, 6144],
                ['down, wide', 1536, 12288], ['query', 2048, 1536], ['attention out', 1536, 2048]]
  .map(([label, outs, ins]) => [label, outs / shrink, ins]);

let seed = 7;
const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
// The matrices' words (every shape takes a prefix): small bf16 values.
const words = new Uint16Array(Math.max(...shapes.map(([, o, i]) => o * i)));
for (let i = 0; i < words.length; i++) words[i] = 0x3c00 + Math.floor((random() + 0.5) * 1024) - 512;
const align = device.limits.minStorageBufferOffsetAlignment;
for (const ROWS of rowsList) for (const [label, outs, ins] of shapes) {
  const bytes = outs * ins * 2;
  const stride = Math.ceil(bytes / align) * align;
  const copies = Math.max(1, Math.min(64, Math.floor(maxBytes / stride)));
  const w16 = words.slice(0, outs * ins);
  const x = Float32Array.from({ length: ROWS * ins }, () => random() * 4);
  const bw = device.createBuffer({ size: stride * copies, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  for (let l = 0; l < copies; l++) device.queue.writeBuffer(bw, l * stride, w16);
  const bx = upload(x, GPUBufferUsage.STORAGE);
  const bp = upload(new Uint32Array([outs, ins, 0, 0]), GPUBufferUsage.UNIFORM);
  // What is timed: the empty dispatch, the two reads, then every variant, each with an output
  // buffer and a bind group a copy of its own.
  const entries = await baseEntries(bytes, 'p.outs * p.ins / 8u');
  const notes = [];  // the variants not timed, printed after the shape's line
  for (const v of variants) {
    if ((ins / 8) < v.LPF) {
      notes.push(`  ${v.name}: not made: a row has fewer octs than a feature has lanes`);
      continue;
    }
    try {
      entries.push({ name: v.name, v, pipeline: await pipelineOf(productKernel(v, ins, ROWS)),
                     groups: Math.ceil(outs / (v.WG / v.LPF * v.FPT)) });
    } catch (e) {
      const fits = !/workgroup storage/.test(e.message);
      notes.push(`  ${v.name}: ${fits ? 'failed' : 'does not fit the device'}: ${e.message.split('\n')[0]}`);
      if (fits) process.exitCode = 1;
    }
  }
  for (const e of entries) {
    e.out = device.createBuffer({ size: ROWS * outs * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const layout = e.pipeline.getBindGroupLayout(0);
    e.binds = [...Array(copies).keys()].map((l) => device.createBindGroup({ layout, entries:
      e.outputOnly ? [{ binding: 2, resource: { buffer: e.out } }]
        : [{ binding: 0, resource: { buffer: bw, offset: l * stride, size: bytes } },
           ...(e.v ? [{ binding: 1, resource: { buffer: bx } }] : []),
           { binding: 2, resource: { buffer: e.out } }, { binding: 3, resource: { buffer: bp } }] }));
  }
  const E = entries.length;
  const us = await timeRounds(entries, copies, reps);
  const read = Math.min(us[1], us[2]);
  console.log(`\n${label}, ${ROWS} row${ROWS > 1 ? 's' : ''}: ${outs} x ${ins}, ${(bytes / 1e6).toFixed(1)} MB, ${copies} copies; ` +
              `empty dispatch ${us[0].toFixed(2)} us, plain read ${read.toFixed(2)} us ` +
              `(${(bytes / read / 1e3).toFixed(0)} GB/s)`);
  for (const n of notes) console.log(n);
  for (let e = 3; e < E; e++) {
    const y = new Float32Array(await readBack(entries[e].out, ROWS * outs * 4));
    let err = 0, largest = 0;
    for (let s = 0; s < 16; s++) {
      const o = (s * 7919) % outs, r = s % ROWS;
      let ref = 0;
      for (let i = 0; i < ins; i++) ref += x[r * ins + i] * bf16Value(w16[o * ins + i]);
      err = Math.max(err, Math.abs(ref - y[r * outs + o]));
      largest = Math.max(largest, Math.abs(ref));
    }
    const bad = err > 1e-3 * Math.max(1, largest) ? ` WRONG (error ${err.toExponential(2)} of ${largest.toFixed(2)})` : '';
    if (bad) process.exitCode = 1;
    console.log(`  ${entries[e].name.padEnd(32)} ${String(entries[e].groups).padStart(5)} groups: ${us[e].toFixed(2)} us, ` +
                `${(us[e] / read).toFixed(2)}x the read, ${(bytes / us[e] / 1e3).toFixed(0)} GB/s${bad}`);
  }
  for (const b of [bw, bx, bp, ...entries.map((e) => e.out)]) b.destroy();
}
device.destroy();
