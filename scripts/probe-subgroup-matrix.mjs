#!/usr/bin/env node
// How fast a product on subgroup matrices (the GPU's matrix units) can be in WebGPU here, against
// the runtime's f32 tiles (matmul.wgsl): out (M x N, f32) = x (M x K, f32) . w (N x K, bf16)^T,
// as prefill's products are, with x and w rounded to f16 in workgroup memory and f32 sums. Each
// workgroup makes a BM x BN tile with WM x WN subgroups of 32, BK columns a stage, the next
// stage's words loaded while the staged ones are multiplied. For each tile shape and each
// product it prints the median GPU time of a dispatch (timestamps) and TFLOP/s, and the largest
// error on 64 sampled outputs against a float64 reference.
//   node scripts/probe-subgroup-matrix.mjs [--reps N]
// Dawn in Node, with allow_unsafe_apis (subgroup matrices are experimental) and
// vulkan_enable_f16_on_nvidia (Dawn keeps shader-f16 off on NVIDIA's Vulkan drivers otherwise).
// Where the adapter lacks shader-f16, subgroup matrices or an f16 -> f32 configuration it says so
// and measures nothing.
import { parseArgs } from 'node:util';
import { bf16Bits, bf16Value, gpuHelpers } from './probe-gpu.mjs';

const fail = (message) => {
  console.error(`probe-subgroup-matrix: ${message}`);
  process.exit(2);
};
let values;
try {
  ({ values } = parseArgs({ options: { reps: { type: 'string', multiple: true } }, strict: true }));
} catch (e) {
  fail(e.message);
}
if ((values.reps ?? []).length > 1) fail('--reps is given more than once');
const repsText = values.reps?.[0] ?? '9';
const reps = /^[0-9]+$/.test(repsText) ? Number(repsText) : NaN;
if (!(reps >= 1 && reps <= 1000)) fail(`--reps must be a whole number from 1 to 1000, not '${repsText}'`);

const webgpu = await import('webgpu');
Object.assign(globalThis, webgpu.globals);
const root = webgpu.create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia',
                            'disable-dawn-features=timestamp_quantization']);
const adapter = await root.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) {
  console.log('probe-subgroup-matrix: no WebGPU adapter');
  process.exit(0);
}
console.log(`adapter: ${adapter.info.vendor} ${adapter.info.description}`);
const need = ['shader-f16', 'chromium-experimental-subgroup-matrix', 'subgroups', 'timestamp-query'];
const missing = need.filter((f) => !adapter.features.has(f));
const config = (adapter.info.subgroupMatrixConfigs ?? [])
  .find((c) => c.componentType === 'f16' && c.resultComponentType === 'f32');
const width32 = adapter.info.subgroupMinSize === 32 && adapter.info.subgroupMaxSize === 32;
if (missing.length || !config || !width32) {
  console.log(`probe-subgroup-matrix: not measured: ${missing.length ? `the adapter lacks ${missing.join(', ')}`
    : !config ? 'no f16 -> f32 subgroup matrix configuration' : 'its subgroups are not all 32 wide'}`);
  process.exit(0);
}
const device = await adapter.requestDevice({
  requiredFeatures: need,
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                    maxBufferSize: adapter.limits.maxBufferSize,
                    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
});
const SM = config.M, SN = config.N, SK = config.K;
console.log(`subgroup matrices: f16 -> f32, ${SM} x ${SN} x ${SK}`);

// The kernel for a BM x BN tile, BK columns a stage, WM x WN subgroups (each TM x TN matrices of
// SM x SN), its matrix operations unrolled (one variable each).
function kernel(BM, BN, BK, WM, WN) {
  const TM = BM / WM / SM, TN = BN / WN / SN, threads = 32 * WM * WN, LS = BK + 8;
  const XL = BM * BK / 4 / threads, WL = BN * BK / 8 / threads;  // words a thread stages
  if (![TM, TN, XL, WL].every((n) => Number.isInteger(n) && n >= 1)) throw new Error(`no such tile: ${[BM, BN, BK, WM, WN]}`);
  const R = (n) => [...Array(n).keys()];
  const each = (f) => R(TM).flatMap((i) => R(TN).map((j) => f(i, j))).join('\n');
  const stage = R(BK / SK).map((s) => [
    ...R(TM).map((i) => `    let a${i}_${s} = subgroupMatrixLoad<subgroup_matrix_left<f16, ${SK}, ${SM}>>(&xs, (sm * ${TM * SM}u + ${i * SM}u) * ${LS}u + ${s * SK}u, false, ${LS}u);`),
    ...R(TN).map((j) => `    let b${j}_${s} = subgroupMatrixLoad<subgroup_matrix_right<f16, ${SN}, ${SK}>>(&ws, (sn * ${TN * SN}u + ${j * SN}u) * ${LS}u + ${s * SK}u, true, ${LS}u);`),
    each((i, j) => `    acc${i}_${j} = subgroupMatrixMultiplyAccumulate(a${i}_${s}, b${j}_${s}, acc${i}_${j});`),
  ].join('\n')).join('\n');
  const xat = `let e = li + t * ${threads}u; let r = e / ${BK / 4}u; let c = (e % ${BK / 4}u) * 4u;`;
  const wat = `let e = li + t * ${threads}u; let r = e / ${BK / 8}u; let c = (e % ${BK / 8}u) * 8u;`;
  return `enable f16;
enable chromium_experimental_subgroup_matrix;
enable subgroups;
struct D { m: u32, n: u32, k: u32 }
@group(0) @binding(0) var<storage, read> X: array<vec4<f32>>;
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
${each((i, j) => `  var acc${i}_${j}: subgroup_matrix_result<f32, ${SN}, ${SM}>;`)}
  var xr: array<vec4<f32>, ${XL}>;
  var wr: array<vec4<u32>, ${WL}>;
  for (var t = 0u; t < ${XL}u; t++) { ${xat} xr[t] = X[((m0 + r) * d.k + c) / 4u]; }
  for (var t = 0u; t < ${WL}u; t++) { ${wat} wr[t] = W[((n0 + r) * d.k + c) / 8u]; }
  for (var k0 = 0u; k0 < d.k; k0 += ${BK}u) {
    for (var t = 0u; t < ${XL}u; t++) {
      ${xat}
      let o = r * ${LS}u + c; let v = xr[t];
      xs[o] = f16(v.x); xs[o + 1u] = f16(v.y); xs[o + 2u] = f16(v.z); xs[o + 3u] = f16(v.w);
    }
    for (var t = 0u; t < ${WL}u; t++) {
      ${wat}
      let o = r * ${LS}u + c; let w = wr[t];
      for (var j = 0u; j < 4u; j++) {
        ws[o + 2u * j] = f16(bitcast<f32>(w[j] << 16u));
        ws[o + 2u * j + 1u] = f16(bitcast<f32>(w[j] & 0xffff0000u));
      }
    }
    workgroupBarrier();
    let k1 = k0 + ${BK}u;
    if (k1 < d.k) {
      for (var t = 0u; t < ${XL}u; t++) { ${xat} xr[t] = X[((m0 + r) * d.k + k1 + c) / 4u]; }
      for (var t = 0u; t < ${WL}u; t++) { ${wat} wr[t] = W[((n0 + r) * d.k + k1 + c) / 8u]; }
    }
${stage}
    workgroupBarrier();
  }
${each((i, j) => `  subgroupMatrixStore(&Y, (m0 + sm * ${TM * SM}u + ${i * SM}u) * d.n + n0 + sn * ${TN * SN}u + ${j * SN}u, acc${i}_${j}, false, d.n);`)}
}`;
}

const { upload, readBack, pipelineOf } = gpuHelpers(device);

async function measure(M, N, K, tile) {
  if (M % tile[0] || N % tile[1] || K % tile[2]) throw new Error('the tile does not divide the product');
  let seed = 1;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
  const x = Float32Array.from({ length: M * K }, () => random() * 4);
  const w = Uint16Array.from({ length: N * K }, () => bf16Bits(random() * 0.1));
  const pipeline = await pipelineOf(kernel(...tile));
  const bx = upload(x, GPUBufferUsage.STORAGE), bw = upload(new Uint32Array(w.buffer), GPUBufferUsage.STORAGE);
  const by = device.createBuffer({ size: M * N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const bd = upload(new Uint32Array([M, N, K, 0]), GPUBufferUsage.UNIFORM);
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0),
    entries: [bx, bw, by, bd].map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const queries = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass({ timestampWrites: { querySet: queries, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(N / tile[1], M / tile[0]);
    pass.end();
    enc.resolveQuerySet(queries, 0, 2, resolved, 0);
    device.queue.submit([enc.finish()]);
    const t = new BigUint64Array(await readBack(resolved, 16));
    ms.push(Number(t[1] - t[0]) / 1e6);
  }
  const y = new Float32Array(await readBack(by, M * N * 4));
  let err = 0, largest = 0;
  for (let s = 0; s < 64; s++) {
    const i = (s * 7919) % M, j = (s * 104729) % N;
    let ref = 0;
    for (let k = 0; k < K; k++) ref += x[i * K + k] * bf16Value(w[j * K + k]);
    err = Math.max(err, Math.abs(ref - y[i * N + j]));
    largest = Math.max(largest, Math.abs(ref));
  }
  for (const b of [bx, bw, by, bd, resolved]) b.destroy();
  queries.destroy();
  ms.sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)];
  console.log(`${M} x ${N} x ${K}, tile ${tile.join(' x ')}: ${median.toFixed(3)} ms, ` +
              `${(2 * M * N * K / median / 1e9).toFixed(1)} TFLOP/s; largest error ${err.toExponential(2)} of outputs up to ${largest.toFixed(2)}`);
}

// Tiles as BM x BN x BK x WM x WN; products as E2B's prefill of 512 tokens has them (the MLP's
// gate or up, its down, the query projection).
const tiles = [[128, 64, 32, 4, 2], [64, 128, 32, 2, 2], [128, 128, 64, 4, 2]];
const products = [[512, 6144, 1536], [512, 1536, 6144], [512, 2048, 1536]];
for (const tile of tiles) {
  for (const [M, N, K] of products) {
    try {
      await measure(M, N, K, tile);
    } catch (e) {
      console.log(`${M} x ${N} x ${K}, tile ${tile.join(' x ')}: failed: ${e.message}`);
    }
  }
}
device.destroy();
