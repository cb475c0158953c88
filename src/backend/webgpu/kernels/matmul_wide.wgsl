// matmul.wgsl for 16-bit weights (bf16, f16) in one binding whose rows are a multiple of 8, and
// an input and output whose offsets are whole vec4s (the arena seen as vec4s).
// A workgroup makes a tile of BM rows x BN outputs, each of its 256 threads TM x TN of them
// (VARIANT 0: 4 x 4, 1: 8 x 4, 2: 8 x 8, 3: 4 x 2): rows ty + 16 i, outputs tx + 16 j. Rows
// are the taller side: the 16 lanes of a row group read the same staged inputs (one broadcast)
// but different staged weights (on the H200 these measured the same as the wider shapes). Inputs
// (read as vec4s) and weights (read as 16-byte words of eight) are staged through workgroup
// memory BK = 4 KQ columns at a time, row by row as KQ vec4s (at most 16 KiB in all, the WebGPU
// default); each thread loads its share of the next BK columns while the workgroup multiplies
// the staged ones. A row's vec4 q is stored at slot q ^ (a few bits of the row), so the eight
// lanes of a 16-byte access reach eight different banks both when staging and when reading.
// Split columns (P5 < in_features): workgroup t makes its tile's products over columns
// kc * part .. kc * (part + 1) - 1 only (part = t / tiles, kc a multiple of BK), written to the
// part's own rows x out_features slice from P0 on; split_sum.wgsl adds the slices.
// P: out, in, rows, out_features, in_features, kc (columns a part: in_features when one)
const TILE = VARIANTu;
const TM = select(4u, 8u, TILE == 1u || TILE == 2u);
const TN = select(select(4u, 8u, TILE == 2u), 2u, TILE == 3u);
const BM = 16u * TM;
const BN = 16u * TN;
const KQ = select(4u, 8u, BM + BN <= 128u);
const BK = 4u * KQ;
const LA = (BM * KQ + 255u) / 256u;       // vec4s of inputs a thread loads per BK columns
const LW = (BN * KQ / 2u + 255u) / 256u;  // words of weights
var<workgroup> xs: array<vec4<f32>, BM * KQ>;  // BM rows of BK inputs
var<workgroup> ws: array<vec4<f32>, BN * KQ>;  // BN outputs of BK weights

fn pair16(v: u32) -> vec2<f32> { PAIR16 }
fn slot(row: u32, q: u32) -> u32 { return KQ * row + (q ^ select((row >> 1u) & 3u, row & 7u, KQ == 8u)); }

// Element e of the staged inputs (row e / KQ, vec4 e % KQ) from column k0 on; zero past the ends.
fn load_in(e: u32, r0: u32, k0: u32, rows: u32, ins: u32, x4: u32, ins4: u32) -> vec4<f32> {
  let m = e / KQ; let q = e % KQ;
  if (e < BM * KQ && r0 + m < rows && k0 + 4u * q < ins) { return A[x4 + (r0 + m) * ins4 + k0 / 4u + q]; }
  return vec4<f32>(0.0);
}
// Word e of the staged weights (output e / (KQ / 2), word e % (KQ / 2)).
fn load_w(e: u32, o0: u32, k0: u32, outs: u32, ins: u32) -> vec4<u32> {
  let m = e / (KQ / 2u); let q = e % (KQ / 2u);
  if (e < BN * KQ / 2u && o0 + m < outs && k0 + 8u * q < ins) { return W1[((o0 + m) * ins + k0) / 8u + q]; }
  return vec4<u32>(0u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  let tiles_o = (outs + BN - 1u) / BN;
  let tiles = (rows + BM - 1u) / BM * tiles_o;
  let part = (wg.x + wg.y * n.x) / tiles; let t = (wg.x + wg.y * n.x) % tiles;
  let kc = pu(5u); let k_end = min(ins, part * kc + kc);
  let r0 = (t / tiles_o) * BM; let o0 = (t % tiles_o) * BN;
  if (r0 >= rows || part * kc >= ins) { return; }  // the same for the whole workgroup
  let tx = lid.x & 15u; let ty = lid.x >> 4u;
  let x4 = pu(1u) / 4u; let ins4 = ins / 4u;
  var acc: array<f32, TM * TN>;  // acc[i * TN + j]: row ty + 16 i, output tx + 16 j
  // This thread's share of the next BK columns: inputs (KQ threads a row), weights (KQ / 2 an output).
  var va: array<vec4<f32>, LA>;
  var vw: array<vec4<u32>, LW>;
  var k0 = part * kc;
  for (var l = 0u; l < LA; l++) { va[l] = load_in(lid.x + 256u * l, r0, k0, rows, ins, x4, ins4); }
  for (var l = 0u; l < LW; l++) { vw[l] = load_w(lid.x + 256u * l, o0, k0, outs, ins); }
  loop {
    for (var l = 0u; l < LA; l++) {
      let e = lid.x + 256u * l;
      if (e < BM * KQ) { xs[slot(e / KQ, e % KQ)] = va[l]; }
    }
    for (var l = 0u; l < LW; l++) {
      let e = lid.x + 256u * l;
      if (e < BN * KQ / 2u) {
        let w = vw[l]; let m = e / (KQ / 2u); let q = 2u * (e % (KQ / 2u));
        ws[slot(m, q)] = vec4<f32>(pair16(w.x), pair16(w.y));
        ws[slot(m, q + 1u)] = vec4<f32>(pair16(w.z), pair16(w.w));
      }
    }
    workgroupBarrier();
    let next = k0 + BK;
    if (next < k_end) {
      for (var l = 0u; l < LA; l++) { va[l] = load_in(lid.x + 256u * l, r0, next, rows, ins, x4, ins4); }
      for (var l = 0u; l < LW; l++) { vw[l] = load_w(lid.x + 256u * l, o0, next, outs, ins); }
    }
    for (var q = 0u; q < KQ; q++) {
      var a: array<vec4<f32>, TM>;
      var b: array<vec4<f32>, TN>;
      for (var i = 0u; i < TM; i++) { a[i] = xs[slot(ty + 16u * i, q)]; }
      for (var j = 0u; j < TN; j++) { b[j] = ws[slot(tx + 16u * j, q)]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) {
          var s = acc[i * TN + j];
          s = fma(a[i].x, b[j].x, s); s = fma(a[i].y, b[j].y, s);
          s = fma(a[i].z, b[j].z, s); s = fma(a[i].w, b[j].w, s);
          acc[i * TN + j] = s;
        }
      }
    }
    workgroupBarrier();
    k0 = next;
    if (k0 >= k_end) { break; }
  }
  let out = pu(0u) + part * rows * outs;
  for (var i = 0u; i < TM; i++) {
    let r = r0 + ty + 16u * i;
    for (var j = 0u; j < TN; j++) {
      let o = o0 + tx + 16u * j;
      if (r < rows && o < outs) { afset(out + r * outs + o, acc[i * TN + j]); }
    }
  }
}
