#!/usr/bin/env node
// How fast a product on subgroup matrices (the GPU's matrix units) can be in WebGPU here:
// out (M x N, f32) = x (M x K) . w (N x K)^T, as prefill's products are, with f32 sums of f16
// operands. Two kinds of kernel, each a BM x BN tile made by WM x WN subgroups of 32, BK columns
// a stage staged in workgroup memory, the next stage's words loaded while the staged ones are
// multiplied:
//   cvt  x in f32 and w in bf16, as the runtime keeps them, rounded to f16 as they are staged;
//   f16  x and w already f16 in memory (what a conversion beforehand would give).
// For each product and kernel it prints the GPU time of a dispatch (timestamps around a pass of
// --per-pass dispatches of it, the median of --reps passes, after a first round of every kernel),
// TFLOP/s, and the largest error on 64 sampled outputs against a float64 reference; and the time
// of a bf16 -> f16 conversion of E2B's largest matrices.
//   node scripts/probe-subgroup-matrix.mjs [--reps N] [--per-pass N] [--kinds cvt,f16,direct]
// Several dispatches a pass (8 by default) keep the pass's own start and end small against them.
// Dawn in Node, with allow_unsafe_apis
// (subgroup matrices are experimental), vulkan_enable_f16_on_nvidia (Dawn keeps shader-f16 off on
// NVIDIA's Vulkan drivers otherwise) and disable_robustness (as the runtime with validation off).
// Where the adapter lacks shader-f16, subgroup matrices or an f16 -> f32 16 x 16 x 16
// configuration it says so and measures nothing.
import { bf16Value, gpuHelpers, probeArgs } from './probe-gpu.mjs';

const { values, fail, whole } = probeArgs('probe-subgroup-matrix', {
  reps: { type: 'string', multiple: true }, 'per-pass': { type: 'string', multiple: true },
  kinds: { type: 'string', multiple: true } });
const reps = whole(values.reps ?? '5', 'reps', 1, 1000);
const perPass = whole(values['per-pass'] ?? '8', 'per-pass', 1, 64);
const kinds = (values.kinds ?? 'cvt,f16,direct').split(',');
for (const kind of kinds) {
  if (!['cvt', 'f16', 'direct'].includes(kind)) fail(`--kinds takes cvt, f16 and direct, not '${kind}'`);
}

const webgpu = await import('webgpu');
Object.assign(globalThis, webgpu.globals);
const root = webgpu.create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia,disable_robustness',
                            'disable-dawn-features=timestamp_quantization']);
globalThis.__probe_dawn = root;  // Dawn's instance outlives its devices
const adapter = await root.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  console.log('probe-subgroup-matrix: no WebGPU adapter');
  process.exit(0);
}
console.log(`adapter: ${adapter.info.vendor} ${adapter.info.description}`);
const need = ['shader-f16', 'chromium-experimental-subgroup-matrix', 'subgroups', 'timestamp-query'];
const missing = need.filter((f) => !adapter.features.has(f));
const config = (adapter.info.subgroupMatrixConfigs ?? []).find((c) => c.componentType === 'f16' &&
  c.resultComponentType === 'f32' && c.M === 16 && c.N === 16 && c.K === 16);
const width32 = adapter.info.subgroupMinSize === 32 && adapter.info.subgroupMaxSize === 32;
if (missing.length || !config || !width32) {
  console.log(`probe-subgroup-matrix: not measured: ${missing.length ? `the adapter lacks ${missing.join(', ')}`
    : !config ? 'no f16 -> f32 16 x 16 x 16 subgroup matrix configuration' : 'its subgroups are not all 32 wide'}`);
  process.exit(0);
}
const device = await adapter.requestDevice({
  requiredFeatures: need,
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                    maxBufferSize: adapter.limits.maxBufferSize,
                    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
console.log(`subgroup matrices: f16 -> f32, 16 x 16 x 16; ${perPass} dispatches a pass, median of ${reps}`);
const { upload, readBack, pipelineOf } = gpuHelpers(device);

// The kernel of a kind for a BM x BN tile, BK columns a stage, WM x WN subgroups (each TM x TN
// matrices of 16 x 16), its matrix operations unrolled (one variable each). A thread stages
// 16-byte words: 4 values of x (cvt) or 8 (f16), 8 of w.
function kernel(kind, BM, BN, BK, WM, WN) {
  const TM = BM / WM / 16, TN = BN / WN / 16, threads = 32 * WM * WN, LS = BK + 8, XW = kind === 'cvt' ? 4 : 8;
  const XL = BM * BK / XW / threads, WL = BN * BK / 8 / threads;  // words a thread stages
  if (![TM, TN, XL, WL].every((n) => Number.isInteger(n) && n >= 1)) throw new Error(`no such tile: ${[BM, BN, BK, WM, WN]}`);
  const R = (n) => [...Array(n).keys()];
  const each = (f) => R(TM).flatMap((i) => R(TN).map((j) => f(i, j))).join('\n');
  const stage = R(BK / 16).map((s) => [
    ...R(TM).map((i) => `    let a${i}_${s} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&xs, (sm * ${TM * 16}u + ${i * 16}u) * ${LS}u + ${s * 16}u, false, ${LS}u);`),
    ...R(TN).map((j) => `    let b${j}_${s} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&ws, (sn * ${TN * 16}u + ${j * 16}u) * ${LS}u + ${s * 16}u, true, ${LS}u);`),
    each((i, j) => `    acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${i}_${s}, b${j}_${s}, acc${i}_${j});`),
  ].join('\n')).join('\n');
  const xat = `let e = li + t * ${threads}u; let r = e / ${BK / XW}u; let c = (e % ${BK / XW}u) * ${XW}u;`;
  const wat = `let e = li + t * ${threads}u; let r = e / ${BK / 8}u; let c = (e % ${BK / 8}u) * 8u;`;
  // Eight f16 values from four words: bf16 pairs rounded (cvt), or f16 pairs as they are.
  const halves = kind === 'cvt'
    ? (w, j) => `vec2<f16>(vec2<f32>(bitcast<f32>(${w}[${j}] << 16u), bitcast<f32>(${w}[${j}] & 0xffff0000u)))`
    : (w, j) => `bitcast<vec2<f16>>(${w}[${j}])`;
  const put8 = (arr, w) => R(4).map((j) => `let h${j} = ${halves(w, j)}; ${arr}[o + ${2 * j}u] = h${j}.x; ${arr}[o + ${2 * j + 1}u] = h${j}.y;`).join(' ');
  const putX = kind === 'cvt'
    ? 'let v = vec4<f16>(xr[t]); xs[o] = v.x; xs[o + 1u] = v.y; xs[o + 2u] = v.z; xs[o + 3u] = v.w;'
    : put8('xs', 'xr[t]');
  const xType = kind === 'cvt' ? 'vec4<f32>' : 'vec4<u32>';
  return { threads, BM, BN, BK, kind, code: `enable f16;
enable chromium_experimental_subgroup_matrix;
enable subgroups;
struct D { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> X: array<${xType}>;
@group(0) @binding(1) var<storage, read> W: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> d: D;
var<workgroup> xs: array<f16, ${BM * LS}>;
var<workgroup> ws: array<f16, ${BN * LS}>;
@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_id) sg: u32) {
  let m0 = wg.y * ${BM}u; let n0 = wg.x * ${BN}u;
  let sm = sg / ${WN}u; let sn = sg % ${WN}u;
${each((i, j) => `  var acc${i}_${j}: subgroup_matrix_result<f32, 16, 16>;`)}
  var xr: array<${xType}, ${XL}>;
  var wr: array<vec4<u32>, ${WL}>;
  for (var t = 0u; t < ${XL}u; t++) { ${xat} xr[t] = X[((m0 + r) * d.k + c) / ${XW}u]; }
  for (var t = 0u; t < ${WL}u; t++) { ${wat} wr[t] = W[((n0 + r) * d.k + c) / 8u]; }
  for (var k0 = 0u; k0 < d.k; k0 += ${BK}u) {
    for (var t = 0u; t < ${XL}u; t++) { ${xat} let o = r * ${LS}u + c; ${putX} }
    for (var t = 0u; t < ${WL}u; t++) { ${wat} let o = r * ${LS}u + c; ${put8('ws', 'wr[t]')} }
    workgroupBarrier();
    let k1 = k0 + ${BK}u;
    if (k1 < d.k) {
      for (var t = 0u; t < ${XL}u; t++) { ${xat} xr[t] = X[((m0 + r) * d.k + k1 + c) / ${XW}u]; }
      for (var t = 0u; t < ${WL}u; t++) { ${wat} wr[t] = W[((n0 + r) * d.k + k1 + c) / 8u]; }
    }
${stage}
    workgroupBarrier();
  }
${each((i, j) => `  subgroupMatrixStore(&Y, (m0 + sm * ${TM * 16}u + ${i * 16}u) * d.n + n0 + sn * ${TN * 16}u + ${j * 16}u, acc${i}_${j}, false, d.n);`)}
}` };
}

// The "direct" kind: x and w already f16, each subgroup's matrices loaded straight from the
// storage buffers (no workgroup memory; a workgroup's subgroups share their loads through the
// caches), U steps of 16 columns loaded ahead of the ones multiplied.
function kernelDirect(BM, BN, WM, WN, U) {
  const TM = BM / WM / 16, TN = BN / WN / 16, threads = 32 * WM * WN;
  if (![TM, TN].every((n) => Number.isInteger(n) && n >= 1)) throw new Error(`no such tile: ${[BM, BN, WM, WN]}`);
  const R = (n) => [...Array(n).keys()];
  const each = (f) => R(TM).flatMap((i) => R(TN).map((j) => f(i, j))).join('\n');
  const load = (u, k) => [
    ...R(TM).map((i) => `    a${i}_${u} = subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>>(&X, (m0 + ${i * 16}u) * d.k + ${k}, false, d.k);`),
    ...R(TN).map((j) => `    b${j}_${u} = subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>>(&W, (n0 + ${j * 16}u) * d.k + ${k}, true, d.k);`)].join('\n');
  const mma = (u) => each((i, j) => `    acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${i}_${u}, b${j}_${u}, acc${i}_${j});`);
  const decl = R(U).map((u) => [...R(TM).map((i) => `  var a${i}_${u}: subgroup_matrix_left<f16, 16, 16>;`),
                                ...R(TN).map((j) => `  var b${j}_${u}: subgroup_matrix_right<f16, 16, 16>;`)].join('\n')).join('\n');
  const body = R(U).map((u) => `${mma(u)}\n    if (k0 + ${16 * (U + u)}u < d.k) {\n${load(u, `k0 + ${16 * (U + u)}u`)}\n    }`).join('\n');
  return { threads, BM, BN, BK: 16 * U, kind: 'direct', code: `enable f16;
enable chromium_experimental_subgroup_matrix;
enable subgroups;
struct D { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> X: array<f16>;
@group(0) @binding(1) var<storage, read> W: array<f16>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> d: D;
@compute @workgroup_size(${threads})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(subgroup_id) sg: u32) {
  let m0 = wg.y * ${BM}u + (sg / ${WN}u) * ${TM * 16}u; let n0 = wg.x * ${BN}u + (sg % ${WN}u) * ${TN * 16}u;
${each((i, j) => `  var acc${i}_${j}: subgroup_matrix_result<f32, 16, 16>;`)}
${decl}
${R(U).map((u) => load(u, `${16 * u}u`)).join('\n')}
  for (var k0 = 0u; k0 < d.k; k0 += ${16 * U}u) {
${body}
  }
${each((i, j) => `  subgroupMatrixStore(&Y, (m0 + ${i * 16}u) * d.n + n0 + ${j * 16}u, acc${i}_${j}, false, d.n);`)}
}` };
}

// The median GPU time of one dispatch of (wx, wy) workgroups, timed among perPass in a pass.
async function timeDispatch(pipeline, group, wx, wy) {
  const queries = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass({ timestampWrites: { querySet: queries, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    for (let i = 0; i < perPass; i++) pass.dispatchWorkgroups(wx, wy);
    pass.end();
    enc.resolveQuerySet(queries, 0, 2, resolved, 0);
    device.queue.submit([enc.finish()]);
    const t = new BigUint64Array(await readBack(resolved, 16));
    ms.push(Number(t[1] - t[0]) / perPass / 1e6);
  }
  resolved.destroy();
  queries.destroy();
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)];
}

// IEEE half bits of x, rounded to nearest even, subnormals included (the GPU's conversion's).
const F1 = new Float32Array(1), U1 = new Uint32Array(F1.buffer);
function f16Bits(x) {
  F1[0] = x;
  const u = U1[0], s = (u >>> 16) & 0x8000, e = ((u >>> 23) & 0xff) - 112, m = u & 0x7fffff;
  if (e >= 31) return s | 0x7c00;
  if (e <= 0) {  // a subnormal half: units of 2^-24 (a carry into the exponent gives the least normal)
    if (e < -10) return s;
    const mm = m | 0x800000, shift = 14 - e, k = mm >>> shift, rest = mm - k * 2 ** shift, half = 2 ** (shift - 1);
    return s | (rest > half || (rest === half && (k & 1)) ? k + 1 : k);
  }
  const h = s | (e << 10) | (m >>> 13), rest = m & 0x1fff;
  return rest > 0x1000 || (rest === 0x1000 && (h & 1)) ? h + 1 : h;
}

// A product's operands, made once: x in f32 and f16, w in bf16 (truncated) and f16.
const operands = new Map();
function operandsOf(M, N, K) {
  const key = `${M} ${N} ${K}`;
  if (!operands.has(key)) {
    let seed = 1;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
    const x = Float32Array.from({ length: M * K }, () => random() * 4);
    const wf = Float32Array.from({ length: N * K }, () => random() * 0.1);
    const wb = new Uint16Array(new Uint32Array(wf.buffer).map((u) => u >>> 16));
    operands.set(key, { x, wb, xh: Uint16Array.from(x, f16Bits), wh: Uint16Array.from(wb, (b) => f16Bits(bf16Value(b))) });
  }
  return operands.get(key);
}

async function measure(M, N, K, name, k, print) {
  if (M % k.BM || N % k.BN || K % k.BK) throw new Error('the tile does not divide the product');
  const { x, wb, xh, wh } = operandsOf(M, N, K);
  const pipeline = k.pipeline ??= await pipelineOf(k.code);
  const bx = upload(k.kind === 'cvt' ? x : new Uint32Array(xh.buffer), GPUBufferUsage.STORAGE);
  const bw = upload(new Uint32Array((k.kind === 'cvt' ? wb : wh).buffer), GPUBufferUsage.STORAGE);
  const by = device.createBuffer({ size: M * N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const bd = upload(new Uint32Array([M, N, K, 0]), GPUBufferUsage.UNIFORM);
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
    entries: [bx, bw, by, bd].map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const median = await timeDispatch(pipeline, group, N / k.BN, M / k.BM);
  const y = new Float32Array(await readBack(by, M * N * 4));
  let err = 0, largest = 0;
  for (let s = 0; s < 64; s++) {
    const i = (s * 7919) % M, j = (s * 104729) % N;
    let ref = 0;
    for (let c = 0; c < K; c++) ref += x[i * K + c] * bf16Value(wb[j * K + c]);
    err = Math.max(err, Math.abs(ref - y[i * N + j]));
    largest = Math.max(largest, Math.abs(ref));
  }
  for (const b of [bx, bw, by, bd]) b.destroy();
  if (print) {
    console.log(`${M} x ${N} x ${K}, ${name}: ${median.toFixed(3)} ms, ${(2 * M * N * K / median / 1e9).toFixed(1)} TFLOP/s; ` +
                `largest error ${err.toExponential(1)} of outputs up to ${largest.toFixed(1)}`);
  }
}

// bf16 -> f16 of an N x K matrix, four words (eight values) a thread.
async function measureConversion(N, K) {
  const pipeline = await pipelineOf(`enable f16;
@group(0) @binding(0) var<storage, read> S: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> T: array<vec4<u32>>;
fn half2(w: u32) -> u32 { return pack2x16float(vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u))); }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = g.x + g.y * n.x * 256u;
  if (i >= arrayLength(&S)) { return; }
  let v = S[i];
  T[i] = vec4<u32>(half2(v.x), half2(v.y), half2(v.z), half2(v.w));
}`);
  const words = N * K / 2;
  const bs = upload(new Uint32Array(words).fill(0x3f803f80), GPUBufferUsage.STORAGE);  // 1.0, 1.0
  const bt = device.createBuffer({ size: words * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
    entries: [bs, bt].map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const groups = Math.ceil(words / 4 / 256);
  const median = await timeDispatch(pipeline, group, Math.min(groups, 65535), Math.ceil(groups / 65535));
  const first = new Uint32Array(await readBack(bt, 4))[0];
  if (first !== 0x3c003c00) throw new Error(`the conversion wrote ${first.toString(16)}, not 3c003c00`);
  console.log(`bf16 -> f16 of ${N} x ${K}: ${median.toFixed(3)} ms, ${(words * 8 / median / 1e6).toFixed(0)} GB/s read and written`);
  bs.destroy();
  bt.destroy();
}

// Tiles as BM x BN x BK x WM x WN; products as E2B's prefill of 512 tokens has them (the MLP's
// gate or up, its down, the query projection), then the gate's outputs from 1,024 to 12,288.
const tiles = [[64, 128, 32, 2, 2], [128, 64, 32, 4, 2], [64, 64, 32, 2, 2], [64, 128, 64, 2, 2], [128, 128, 32, 2, 2]];
// Direct tiles as BM x BN x WM x WN x U.
const directTiles = [[64, 64, 2, 2, 1], [64, 64, 2, 2, 2], [128, 64, 4, 2, 1], [128, 128, 2, 2, 1], [64, 128, 2, 2, 1],
                     [128, 128, 4, 2, 1], [128, 128, 2, 4, 1], [64, 128, 1, 4, 2]];
const products = [[512, 6144, 1536], [512, 1536, 6144], [512, 2048, 1536],
                  [512, 1024, 1536], [512, 3072, 1536], [512, 4096, 1536], [512, 12288, 1536]];
const kernels = [...tiles.flatMap((t) => ['cvt', 'f16'].map((kind) => [`${kind}, tile ${t.join(' x ')}`, kernel(kind, ...t)])),
  ...directTiles.map((t) => [`direct, tile ${t.join(' x ')}`, kernelDirect(...t)])]
  .filter(([name]) => kinds.includes(name.split(',')[0]));
for (const [M, N, K] of products) {
  for (const print of [false, true]) {  // a first round unprinted, so that no kernel runs first
    for (const [name, k] of kernels) {
      try {
        await measure(M, N, K, name, k, print);
      } catch (e) {
        if (print) console.log(`${M} x ${N} x ${K}, ${name}: failed: ${e.message}`);
      }
    }
  }
}
for (const [N, K] of [[6144, 1536], [24576, 1536]]) await measureConversion(N, K);
device.destroy();
