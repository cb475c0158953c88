#!/usr/bin/env node
// What a decode product of q4 weights costs against its bytes, and whether 8-bit integer dot
// products (WGSL's dot4I8Packed) on an input made 8-bit first buy time over the runtime's way of
// unpacking each value to f32. The weights are laid out as the runtime keeps q4 on the GPU
// (superblocks of 64 values: a word of the two 32-value groups' f16 scales, then 8 words of eight
// 4-bit values offset by 8, lowest value in the lowest bits). Kinds of kernel:
//   f32:   a lane an oct (8 values) a step, its values made f32 as the runtime does (each nibble
//          masked where it lies and read as a float's mantissa), the input f32;
//   dot4:  a lane an oct a step, the input 8-bit in blocks of 32 (a scale each), the oct's two
//          words of nibbles against it by dot4I8Packed, the offset of 8 taken off by two more;
//   run:   a lane a 32-value group a step (4 words of nibbles, one scale), by dot4I8Packed, the
//          offset taken off once a group from the block's sum made with the input;
//   pdot4: a lane an oct a step, the input 8-bit an oct at a time (its own scale), each oct one
//          16-byte word (even values, odd values, scale, scale x sum), as a kernel before could
//          write it;
//   sdot4: pdot4's product, its input made so by each workgroup from the f32 input into
//          workgroup memory first (FB blocks of features a workgroup share the stage).
// pdot4 also as the runtime binds its buffers: "v" the weights an array of 16-byte words, each
// 32-bit word read as a component of one (weights.wgsl's way), "rw" the input read_write (the
// runtime's arena).
// LPF lanes a feature (their sums added by subgroup shuffles, and through workgroup memory past a
// subgroup), U steps' words in flight a lane. Each pass runs L dispatches over L copies of the
// matrix (past the L2 cache's size), timed against a plain read of the same bytes and an empty
// dispatch in the same passes, rounds of every kind in turn as in probe-matvec.mjs.
//   node scripts/probe-q4dot.mjs [--reps N] [--rows R,R...] [--only TEXT] [--max-bytes B] [--shrink N]
// Options as probe-matvec.mjs's. A variant whose sampled outputs are wrong (f32 against the f32
// input, the 8-bit kinds against the 8-bit input's values) is marked WRONG and makes the exit
// status 1.
import { gpuHelpers, probeArgs } from './probe-gpu.mjs';

const { values, fail, whole } = probeArgs('probe-q4dot', {
  reps: { type: 'string' }, 'max-bytes': { type: 'string' }, only: { type: 'string' }, rows: { type: 'string' },
  shrink: { type: 'string' } });
const reps = whole(values.reps ?? '5', 'reps', 1, 32);
const rowsList = (values.rows ?? '1').split(',').map((t) => whole(t, 'rows', 1, 8));
const shrink = whole(values.shrink ?? '1', 'shrink', 1, 256);
if (shrink & (shrink - 1)) fail(`--shrink must be a power of two (the shapes' outputs share 512), not '${shrink}'`);
const maxBytes = whole(values['max-bytes'] ?? String(512 << 20), 'max-bytes', 1 << 16, 2 ** 40);

const webgpu = await import('webgpu');
Object.assign(globalThis, webgpu.globals);
const root = webgpu.create(['disable-dawn-features=timestamp_quantization',
                            'enable-dawn-features=skip_validation,disable_robustness']);
globalThis.probeRoot = root;
const adapter = await root.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) fail('no WebGPU adapter');
const need = ['subgroups', 'timestamp-query'];
const missing = need.filter((f) => !adapter.features.has(f));
if (missing.length) fail(`the adapter lacks ${missing.join(', ')}`);
if (!root.wgslLanguageFeatures?.has('packed_4x8_integer_dot_product')) {
  fail('WGSL here lacks packed_4x8_integer_dot_product');
}
console.log(`adapter: ${adapter.info.vendor} ${adapter.info.description}; subgroups ${adapter.info.subgroupMinSize} to ${adapter.info.subgroupMaxSize}`);
const device = await adapter.requestDevice({
  requiredFeatures: need,
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                    maxBufferSize: adapter.limits.maxBufferSize,
                    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
const SG = adapter.info.subgroupMinSize;
const R = (n) => [...Array(n).keys()];

// The product kernel of one variant. Bindings: W the matrix's words; X the f32 input (f32) or the
// 8-bit input's words (2 a row's oct: its values 0, 2, 4, 6 then 1, 3, 5, 7, as the nibbles lie);
// D each input block's (scale, scale x the sum of its 8-bit values); O the outputs.
function productKernel({ kind, LPF, U, FB, vecW, rwIn }, ins, ROWS) {
  const WG = 256;
  const red = Math.min(LPF, SG);
  const feats = WG / LPF;
  const octIn = kind === 'pdot4' || kind === 'sdot4';
  const xo = kind === 'sdot4' ? 'xs' : 'XO';
  const unit = kind === 'run' ? 'groups' : 'octs';
  // One step's loads (u: which of the U) and use, for the lane's unit j, w the row's first word.
  const load = (u) => kind === 'run'
    ? `    let j${u} = q + ${u * LPF}u; let sb${u} = rw + (j${u} >> 1u) * 9u; let k${u} = sb${u} + 1u + (j${u} & 1u) * 4u;
    let s${u} = ww(sb${u}); let v${u} = vec4<u32>(ww(k${u}), ww(k${u} + 1u), ww(k${u} + 2u), ww(k${u} + 3u));`
    : `    let j${u} = q + ${u * LPF}u; let sb${u} = rw + (j${u} >> 3u) * 9u;
    let s${u} = ww(sb${u}); let v${u} = ww(sb${u} + 1u + (j${u} & 7u));`;
  const use = (u) => {
    if (kind === 'f32') {
      return `    {
      let sc = unpack2x16float(s${u} >> (((j${u} >> 2u) & 1u) * 16u)).x;
      let lo = unpack_half(v${u}); let hi = unpack_half(v${u} >> 16u);
      for (var r = 0u; r < ${ROWS}u; r++) {
        let a = XF[r * p.ins / 4u + 2u * j${u}]; let b = XF[r * p.ins / 4u + 2u * j${u} + 1u];
        acc[r] += (dot(lo, a) + dot(hi, b)) * sc;
      }
    }`;
    }
    if (octIn) {
      return `    {
      let sc = unpack2x16float(s${u} >> (((j${u} >> 2u) & 1u) * 16u)).x;
      let ev = v${u} & 0x0f0f0f0fu; let od = (v${u} >> 4u) & 0x0f0f0f0fu;
      for (var r = 0u; r < ${ROWS}u; r++) {
        let x = ${xo}[r * p.ins / 8u + j${u}];
        let i = dot4I8Packed(ev, x.x) + dot4I8Packed(od, x.y);
        acc[r] += (bitcast<f32>(x.z) * f32(i) - 8.0 * bitcast<f32>(x.w)) * sc;
      }
    }`;
    }
    if (kind === 'dot4') {
      return `    {
      let sc = unpack2x16float(s${u} >> (((j${u} >> 2u) & 1u) * 16u)).x;
      let ev = v${u} & 0x0f0f0f0fu; let od = (v${u} >> 4u) & 0x0f0f0f0fu;
      for (var r = 0u; r < ${ROWS}u; r++) {
        let x = XQ[r * p.ins / 8u + j${u}];
        let d = D[r * p.ins / 32u + (j${u} >> 2u)].x;
        let i = dot4I8Packed(ev, x.x) + dot4I8Packed(od, x.y) - dot4I8Packed(0x08080808u, x.x) - dot4I8Packed(0x08080808u, x.y);
        acc[r] += f32(i) * (d * sc);
      }
    }`;
    }
    return `    {
      let sc = unpack2x16float(s${u} >> ((j${u} & 1u) * 16u)).x;
      for (var r = 0u; r < ${ROWS}u; r++) {
        let xa = XQ[r * p.ins / 8u + 4u * j${u}]; let xb = XQ[r * p.ins / 8u + 4u * j${u} + 1u];
        let xc = XQ[r * p.ins / 8u + 4u * j${u} + 2u]; let xd = XQ[r * p.ins / 8u + 4u * j${u} + 3u];
        let dd = D[r * p.ins / 32u + j${u}];
        var i = dot4I8Packed(v${u}.x & 0x0f0f0f0fu, xa.x) + dot4I8Packed((v${u}.x >> 4u) & 0x0f0f0f0fu, xa.y);
        i += dot4I8Packed(v${u}.y & 0x0f0f0f0fu, xb.x) + dot4I8Packed((v${u}.y >> 4u) & 0x0f0f0f0fu, xb.y);
        i += dot4I8Packed(v${u}.z & 0x0f0f0f0fu, xc.x) + dot4I8Packed((v${u}.z >> 4u) & 0x0f0f0f0fu, xc.y);
        i += dot4I8Packed(v${u}.w & 0x0f0f0f0fu, xd.x) + dot4I8Packed((v${u}.w >> 4u) & 0x0f0f0f0fu, xd.y);
        acc[r] += (f32(i) * dd.x - 8.0 * dd.y) * sc;
      }
    }`;
  };
  return `enable subgroups;
struct P { outs: u32, ins: u32 }
@group(0) @binding(0) var<storage, read> W: array<${vecW ? 'vec4<u32>' : 'u32'}>;
fn ww(k: u32) -> u32 { return W[k${vecW ? ' >> 2u][k & 3u' : ''}]; }
${kind === 'f32' || kind === 'sdot4' ? '@group(0) @binding(1) var<storage, read> XF: array<vec4<f32>>;'
    : kind === 'pdot4' ? `@group(0) @binding(5) var<storage, ${rwIn ? 'read_write' : 'read'}> XO: array<vec4<u32>>;`
    : `@group(0) @binding(1) var<storage, read> XQ: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> D: array<vec2<f32>>;`}
${kind === 'sdot4' ? `var<workgroup> xs: array<vec4<u32>, ${ROWS * ins / 8}>;` : ''}
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
${LPF > SG ? `var<workgroup> part: array<array<f32, ${ROWS}>, ${WG / SG}>;` : ''}
// Values 0..7 of a half word's nibbles, offset taken off (the runtime's q_unpack).
fn unpack_half(h: u32) -> vec4<f32> {
  let bits = (vec4<u32>(h) & vec4<u32>(0xfu, 0xf0u, 0xf00u, 0xf000u)) | vec4<u32>(0x4B000000u, 0x49000000u, 0x47000000u, 0x45000000u);
  return bitcast<vec4<f32>>(bits) - vec4<f32>(8388616.0, 524296.0, 32776.0, 2056.0);
}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let wid = wg.x + wg.y * 32768u;
  let units = p.ins / ${kind === 'run' ? 32 : 8}u;  // ${unit} a row
${kind === 'sdot4' ? `  // Each oct of the rows' input made 8-bit with its own scale (max |x| / 127).
  for (var k = li; k < ${ROWS}u * p.ins / 8u; k += ${WG}u) {
    let a = XF[2u * k]; let b = XF[2u * k + 1u];
    let m = max(max(abs(a), abs(b)), vec4<f32>(0.0));
    let mx = max(max(m.x, m.y), max(m.z, m.w));
    let inv = select(0.0, 127.0 / mx, mx > 0.0);
    let ev = vec4<i32>(round(vec4<f32>(a.x, a.z, b.x, b.z) * inv));
    let od = vec4<i32>(round(vec4<f32>(a.y, a.w, b.y, b.w) * inv));
    let t = ev + od;
    let d = mx / 127.0;
    xs[k] = vec4<u32>(pack4xI8(ev), pack4xI8(od), bitcast<u32>(d), bitcast<u32>(d * f32(t.x + t.y + t.z + t.w)));
  }
  workgroupBarrier();` : ''}
  let grp = li / ${LPF}u; let lane = li % ${LPF}u;
  for (var fb = 0u; fb < ${FB}u; fb++) {
  let f0 = (wid * ${FB}u + fb) * ${feats}u + grp;
  let rw = min(f0, p.outs - 1u) * (p.ins / 64u) * 9u;
  var acc = array<f32, ${ROWS}>();
  var q = lane;
  for (; q + ${(U - 1) * LPF}u < units; q += ${U * LPF}u) {
${R(U).map(load).join('\n')}
${R(U).map(use).join('\n')}
  }
  for (; q < units; q += ${LPF}u) {
${load(0)}
${use(0)}
  }
  for (var r = 0u; r < ${ROWS}u; r++) {
${R(Math.log2(red)).map((k) => `    acc[r] += subgroupShuffleXor(acc[r], ${1 << k}u);`).join('\n')}
  }
${LPF > SG ? `  if (li % ${SG}u == 0u) { part[li / ${SG}u] = acc; }
  workgroupBarrier();
  if (lane == 0u) {
    for (var s = 1u; s < ${LPF / SG}u; s++) {
      for (var r = 0u; r < ${ROWS}u; r++) { acc[r] += part[li / ${SG}u + s][r]; }
    }
  }
  workgroupBarrier();` : ''}
  if (lane == 0u && f0 < p.outs) {
    for (var r = 0u; r < ${ROWS}u; r++) { O[r * p.outs + f0] = acc[r]; }
  }
  }
}`;
}

const { upload, readBack, pipelineOf, baseEntries, timeRounds } = gpuHelpers(device);
const variants = [
  ['f32', 32, 4], ['f32', 64, 4], ['f32', 128, 4], ['f32', 64, 2], ['f32', 128, 2],
  ['dot4', 32, 4], ['dot4', 64, 4], ['dot4', 128, 4], ['dot4', 64, 2], ['dot4', 128, 2], ['dot4', 32, 8],
  ['run', 8, 1], ['run', 8, 2], ['run', 16, 1], ['run', 16, 2], ['run', 32, 1], ['run', 32, 2], ['run', 64, 1],
  ['run', 4, 2],
  ['pdot4', 32, 4], ['pdot4', 64, 2], ['pdot4', 128, 2],
  ['pdot4', 32, 4, 1, 'v'], ['pdot4', 32, 4, 1, 'rw'], ['pdot4', 32, 4, 1, 'v, rw'],
  ['sdot4', 32, 4], ['sdot4', 32, 4, 4], ['sdot4', 32, 4, 16], ['sdot4', 64, 2], ['sdot4', 64, 2, 4],
  ['sdot4', 64, 2, 16], ['sdot4', 128, 2], ['sdot4', 128, 2, 4], ['sdot4', 128, 2, 16],
].map(([kind, LPF, U, FB = 1, as = '']) => ({
  kind, LPF, U, FB, vecW: as.includes('v'), rwIn: as.includes('rw'),
  name: `${kind}, lanes ${LPF}, ${U} in flight${FB > 1 ? `, ${FB} blocks` : ''}${as ? `, ${as}` : ''}` }))
  .filter((v) => !values.only || values.only.split('|').some((t) => v.name.includes(t)));
// E2B's one-row products (outs x ins) and its LM head.
const shapes = [['gate and up', 12288, 1536], ['gate and up, wide', 24576, 1536], ['down', 1536, 6144],
                ['down, wide', 1536, 12288], ['query', 2048, 1536], ['attention out', 1536, 2048],
                ['per-layer gate', 256, 1536], ['LM head', 262144, 1536]]
  .map(([label, outs, ins]) => [label, outs / shrink, ins]);

let seed = 7;
const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
const f16Bits = (v) => {  // v a normal f16 value: its bits, rounded to nearest
  const f = new Float32Array([v]); const u = new Uint32Array(f.buffer)[0];
  const e = ((u >>> 23) & 255) - 127 + 15;
  return ((u >>> 16) & 0x8000) | (e << 10) | Math.round((u & 0x7fffff) / 8192);
};
const f16Value = (h) => (h & 0x8000 ? -1 : 1) * 2 ** (((h >>> 10) & 31) - 15) * (1 + (h & 1023) / 1024);
const align = device.limits.minStorageBufferOffsetAlignment;
for (const ROWS of rowsList) for (const [label, outs, ins] of shapes) {
  const sbs = ins / 64;
  const wordsN = outs * sbs * 9;
  const bytes = wordsN * 4;
  const stride = Math.ceil(bytes / align) * align;
  const copies = Math.max(1, Math.min(64, Math.floor(maxBytes / stride)));
  // Weights: random nibbles, scales near 1/64; the values (nibble - 8) * scale.
  const w = new Uint32Array(wordsN);
  const scale = new Float32Array(outs * ins / 32);
  for (let o = 0; o < outs; o++) {
    for (let s = 0; s < sbs; s++) {
      const at = (o * sbs + s) * 9;
      const h0 = f16Bits((0.75 + random() / 2) / 64), h1 = f16Bits((0.75 + random() / 2) / 64);
      w[at] = h0 | (h1 << 16);
      scale[(o * sbs + s) * 2] = f16Value(h0); scale[(o * sbs + s) * 2 + 1] = f16Value(h1);
      for (let k = 1; k < 9; k++) w[at + k] = (random() + 0.5) * 4294967296 >>> 0;
    }
  }
  const wv = (o, i) => {  // weight (o, i)'s value
    const s = Math.floor(i / 64), at = (o * sbs + s) * 9, e = i % 64;
    return (((w[at + 1 + (e >> 3)] >>> (4 * (e & 7))) & 15) - 8) * scale[(o * ins + i) >> 5];
  };
  // The input: f32, and made 8-bit in blocks of 32 (scale max |x| / 127) with each block's sum.
  const x = Float32Array.from({ length: ROWS * ins }, () => random() * 4);
  const xq = new Uint32Array(ROWS * ins / 4);
  const d = new Float32Array(ROWS * ins / 16);
  const xdq = new Float32Array(ROWS * ins);  // the 8-bit input's values
  for (let b = 0; b < ROWS * ins / 32; b++) {
    let m = 0;
    for (let i = 0; i < 32; i++) m = Math.max(m, Math.abs(x[32 * b + i]));
    const sc = m / 127 || 1;
    let sum = 0;
    const q = [];
    for (let i = 0; i < 32; i++) {
      q.push(Math.round(x[32 * b + i] / sc));
      sum += q[i];
      xdq[32 * b + i] = q[i] * sc;
    }
    for (let oct = 0; oct < 4; oct++) {
      for (let half = 0; half < 2; half++) {
        let word = 0;
        for (let k = 0; k < 4; k++) word |= (q[8 * oct + 2 * k + half] & 255) << (8 * k);
        xq[8 * b + 2 * oct + half] = word >>> 0;
      }
    }
    d[2 * b] = sc; d[2 * b + 1] = sc * sum;
  }
  // The input made 8-bit an oct at a time: (even values, odd values, scale, scale x sum) an oct.
  const xo = new Uint32Array(ROWS * ins / 2);
  const xof = new Float32Array(xo.buffer);
  const xdq8 = new Float32Array(ROWS * ins);
  for (let k = 0; k < ROWS * ins / 8; k++) {
    let m = 0;
    for (let i = 0; i < 8; i++) m = Math.max(m, Math.abs(x[8 * k + i]));
    const sc = Math.fround(m / 127);
    const q = R(8).map((i) => (m > 0 ? Math.round(x[8 * k + i] * Math.fround(127 / m)) : 0));
    for (let half = 0; half < 2; half++) {
      let word = 0;
      for (let j = 0; j < 4; j++) word |= (q[2 * j + half] & 255) << (8 * j);
      xo[4 * k + half] = word >>> 0;
    }
    xof[4 * k + 2] = sc;
    xof[4 * k + 3] = sc * q.reduce((a, b) => a + b, 0);
    for (let i = 0; i < 8; i++) xdq8[8 * k + i] = q[i] * sc;
  }
  const bxo = upload(xo, GPUBufferUsage.STORAGE);
  const bw = device.createBuffer({ size: stride * copies, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  for (let l = 0; l < copies; l++) device.queue.writeBuffer(bw, l * stride, w);
  const bx = upload(x, GPUBufferUsage.STORAGE);
  const bxq = upload(xq, GPUBufferUsage.STORAGE);
  const bd = upload(d, GPUBufferUsage.STORAGE);
  const bp = upload(new Uint32Array([outs, ins, 0, 0]), GPUBufferUsage.UNIFORM);
  const entries = await baseEntries(bytes, 'p.outs * (p.ins / 64u) * 9u / 4u');
  const notes = [];
  for (const v of variants) {
    if (ins / (v.kind === 'run' ? 32 : 8) < v.LPF) {
      notes.push(`  ${v.name}: not made: a row has fewer steps than a feature has lanes`);
      continue;
    }
    if (v.kind === 'sdot4' && ROWS * ins * 2 > device.limits.maxComputeWorkgroupStorageSize) {
      notes.push(`  ${v.name}: not made: the rows' stage does not fit the device's workgroup memory`);
      continue;
    }
    try {
      entries.push({ name: v.name, v, pipeline: await pipelineOf(productKernel(v, ins, ROWS)),
                     groups: Math.ceil(outs / (256 / v.LPF * v.FB)) });
    } catch (e) {
      notes.push(`  ${v.name}: failed: ${e.message.split('\n')[0]}`);
      process.exitCode = 1;
    }
  }
  for (const e of entries) {
    e.out = device.createBuffer({ size: ROWS * outs * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const layout = e.pipeline.getBindGroupLayout(0);
    const input = !e.v ? [] : ['f32', 'sdot4'].includes(e.v.kind) ? [{ binding: 1, resource: { buffer: bx } }]
      : e.v.kind === 'pdot4' ? [{ binding: 5, resource: { buffer: bxo } }]
      : [{ binding: 1, resource: { buffer: bxq } }, { binding: 4, resource: { buffer: bd } }];
    e.binds = R(copies).map((l) => device.createBindGroup({ layout, entries:
      e.outputOnly ? [{ binding: 2, resource: { buffer: e.out } }]
        : [{ binding: 0, resource: { buffer: bw, offset: l * stride, size: bytes } }, ...input,
           { binding: 2, resource: { buffer: e.out } }, { binding: 3, resource: { buffer: bp } }] }));
  }
  const E = entries.length;
  const us = await timeRounds(entries, copies, reps);
  const read = Math.min(us[1], us[2]);
  console.log(`\n${label}, ${ROWS} row${ROWS > 1 ? 's' : ''}: ${outs} x ${ins}, ${(bytes / 1e6).toFixed(1)} MB q4, ${copies} copies; ` +
              `empty dispatch ${us[0].toFixed(2)} us, plain read ${read.toFixed(2)} us ` +
              `(${(bytes / read / 1e3).toFixed(0)} GB/s)`);
  for (const n of notes) console.log(n);
  for (let e = 3; e < E; e++) {
    const y = new Float32Array(await readBack(entries[e].out, ROWS * outs * 4));
    const kind = entries[e].v.kind;
    const xin = kind === 'f32' ? x : kind === 'pdot4' || kind === 'sdot4' ? xdq8 : xdq;
    let err = 0, largest = 0;
    for (let s = 0; s < 16; s++) {
      const o = (s * 7919) % outs, r = s % ROWS;
      let ref = 0;
      for (let i = 0; i < ins; i++) ref += xin[r * ins + i] * wv(o, i);
      err = Math.max(err, Math.abs(ref - y[r * outs + o]));
      largest = Math.max(largest, Math.abs(ref));
    }
    const bad = err > 1e-3 * Math.max(1, largest) ? ` WRONG (error ${err.toExponential(2)} of ${largest.toFixed(2)})` : '';
    if (bad) process.exitCode = 1;
    console.log(`  ${entries[e].name.padEnd(28)} ${String(entries[e].groups).padStart(6)} groups: ${us[e].toFixed(2)} us, ` +
                `${(us[e] / read).toFixed(2)}x the read${bad}`);
  }
  for (const b of [bw, bx, bxq, bxo, bd, bp, ...entries.map((e) => e.out)]) b.destroy();
}
device.destroy();
