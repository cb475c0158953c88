// out[r, o] = w[o] . x[r] for many rows (prefill), W1 the matrix in any stored type. A workgroup
// makes a tile of BM rows x BN outputs, each of its 256 threads TM x TN of them (TILE 0: 4 x 4, 1:
// 8 x 4, 2: 8 x 8, 3: 4 x 2): rows ty + 16 i, outputs tx + 16 j. Rows are the taller side: the 16
// lanes of a row group read the same staged inputs (one broadcast) but different staged weights.
// Inputs (as vec4s) and weights (eight at a time, decoded to floats) are staged through workgroup
// memory BK = 4 KQ columns at a time, row by row as KQ vec4s (a stage at most 16 KiB, the WebGPU
// default); each thread loads its share of the next BK columns while the workgroup multiplies the
// staged ones. With two stages of workgroup memory (TWO_STAGES) the next columns are stored into
// one while the other is still read (one barrier a stage); with one, the workgroup waits for every
// thread's reads before storing (two barriers a stage). A row's vec4 q is stored at slot q ^ (a few
// bits of the row), so the eight lanes of a 16-byte access reach eight different banks both when
// staging and reading. Split columns (P.kc < ins): workgroup t makes its tile's products over
// columns kc * part .. kc * (part + 1) - 1 only (part = t / tiles, kc a multiple of BK), written to
// the part's own (rows, outs) slice from P.dst on; split_sum.wgsl adds the slices.
//! uses weights
//! variant TILE: u32  the tile's shape, 0 to 3 (above)
//! variant VEC: bool  rows of whole octs and input and output offsets of whole vec4s: 16-byte reads
//! variant TWO_STAGES: bool  two stages of workgroup memory (twice a stage's bytes)
struct Params {
  dst: u32,   // (rows, outs), or with split columns (ins / kc parts, rows, outs)
  x: u32,     // (rows, ins)
  rows: u32,
  outs: u32,
  ins: u32,
  kc: u32,    // columns a part (ins when the columns are not split)
}
const TM = select(4u, 8u, TILE == 1u || TILE == 2u);
const TN = select(select(4u, 8u, TILE == 2u), 2u, TILE == 3u);
const BM = 16u * TM;
const BN = 16u * TN;
const KQ = select(4u, 8u, BM + BN <= 128u);
const BK = 4u * KQ;
const LA = (BM * KQ + 255u) / 256u;       // vec4s of inputs a thread loads a BK columns
const LW = (BN * KQ / 2u + 255u) / 256u;  // octs of weights
const STAGES = select(1u, 2u, TWO_STAGES);
var<workgroup> xs: array<vec4<f32>, STAGES * BM * KQ>;  // BM rows of BK inputs a stage
var<workgroup> ws: array<vec4<f32>, STAGES * BN * KQ>;  // BN outputs of BK weights a stage

fn slot(row: u32, q: u32) -> u32 { return KQ * row + (q ^ select((row >> 1u) & 3u, row & 7u, KQ == 8u)); }

// Element e of the staged inputs (row e / KQ, vec4 e % KQ) from column k0 on; zero past the ends.
fn load_in(e: u32, r0: u32, k0: u32) -> vec4<f32> {
  let m = e / KQ; let c = k0 + 4u * (e % KQ);
  var v = vec4<f32>(0.0);
  if (e >= BM * KQ || r0 + m >= P.rows || c >= P.ins) { return v; }
  let at = P.x + (r0 + m) * P.ins + c;
  if (VEC) { return A[at / 4u]; }
  for (var i = 0u; i < 4u; i++) {
    if (c + i < P.ins) { v[i] = af(at + i); }
  }
  return v;
}
// Oct e of the staged weights (output e / (KQ / 2), oct e % (KQ / 2)) from column k0 on: its
// words as stored (VEC), else its values as f32 bits; zero past the ends.
fn load_w(e: u32, o0: u32, k0: u32) -> OctWords {
  let m = e / (KQ / 2u); let c = k0 + 8u * (e % (KQ / 2u));
  var w: OctWords;
  if (e >= BN * KQ / 2u || o0 + m >= P.outs || c >= P.ins) { return w; }
  let at = (o0 + m) * P.ins + c;
  if (VEC) { return oct_words(1u, W1_DTYPE, at); }
  for (var i = 0u; i < 4u; i++) {
    if (c + i < P.ins) { w.a[i] = bitcast<u32>(welem(1u, at + i)); }
    if (c + 4u + i < P.ins) { w.b[i] = bitcast<u32>(welem(1u, at + 4u + i)); }
  }
  return w;
}
fn weights8(w: OctWords, e: u32) -> mat2x4<f32> {
  if (!VEC) { return mat2x4<f32>(bitcast<vec4<f32>>(w.a), bitcast<vec4<f32>>(w.b)); }
  let o = oct_of(W1_DTYPE, w, e);
  return mat2x4<f32>(o.lo * o.scale, o.hi * o.scale);
}

// Stores this thread's share of the columns from k0 on (va, vw) into stage h.
fn store_stage(h: u32, lane: u32, o0: u32, k0: u32, va: array<vec4<f32>, LA>, vw: array<OctWords, LW>) {
  for (var l = 0u; l < LA; l++) {
    let e = lane + 256u * l;
    if (e < BM * KQ) { xs[h * BM * KQ + slot(e / KQ, e % KQ)] = va[l]; }
  }
  for (var l = 0u; l < LW; l++) {
    let e = lane + 256u * l;
    if (e < BN * KQ / 2u) {
      let m = e / (KQ / 2u); let q = 2u * (e % (KQ / 2u));
      let w = weights8(vw[l], (o0 + m) * P.ins + k0 + 4u * q);
      ws[h * BN * KQ + slot(m, q)] = w[0];
      ws[h * BN * KQ + slot(m, q + 1u)] = w[1];
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let rows = P.rows; let outs = P.outs; let ins = P.ins;
  let tiles_o = (outs + BN - 1u) / BN;
  let tiles = (rows + BM - 1u) / BM * tiles_o;
  let part = wid(wg, n) / tiles; let t = wid(wg, n) % tiles;
  let kc = P.kc; let k_end = min(ins, part * kc + kc);
  let r0 = (t / tiles_o) * BM; let o0 = (t % tiles_o) * BN;
  if (r0 >= rows || part * kc >= ins) { return; }  // the same for the whole workgroup
  let tx = lid.x & 15u; let ty = lid.x >> 4u;
  var acc: array<f32, TM * TN>;  // acc[i * TN + j]: row ty + 16 i, output tx + 16 j
  // This thread's share of the next BK columns: inputs (KQ threads a row), weights (KQ / 2 an output).
  var va: array<vec4<f32>, LA>;
  var vw: array<OctWords, LW>;
  var k0 = part * kc;
  for (var l = 0u; l < LA; l++) { va[l] = load_in(lid.x + 256u * l, r0, k0); }
  for (var l = 0u; l < LW; l++) { vw[l] = load_w(lid.x + 256u * l, o0, k0); }
  var h = 0u;  // the stage multiplied
  store_stage(0u, lid.x, o0, k0, va, vw);
  workgroupBarrier();
  loop {
    let next = k0 + BK;
    if (next < k_end) {
      for (var l = 0u; l < LA; l++) { va[l] = load_in(lid.x + 256u * l, r0, next); }
      for (var l = 0u; l < LW; l++) { vw[l] = load_w(lid.x + 256u * l, o0, next); }
    }
    let hx = h * BM * KQ; let hw = h * BN * KQ;
    for (var q = 0u; q < KQ; q++) {
      var a: array<vec4<f32>, TM>;
      var b: array<vec4<f32>, TN>;
      for (var i = 0u; i < TM; i++) { a[i] = xs[hx + slot(ty + 16u * i, q)]; }
      for (var j = 0u; j < TN; j++) { b[j] = ws[hw + slot(tx + 16u * j, q)]; }
      for (var i = 0u; i < TM; i++) {
        for (var j = 0u; j < TN; j++) {
          var s = acc[i * TN + j];
          s = fma(a[i].x, b[j].x, s); s = fma(a[i].y, b[j].y, s);
          s = fma(a[i].z, b[j].z, s); s = fma(a[i].w, b[j].w, s);
          acc[i * TN + j] = s;
        }
      }
    }
    k0 = next;
    if (k0 >= k_end) { break; }
    // The next columns go to the other stage, whose reads every thread finished before this
    // stage's barrier; with one stage, once every thread has read this one.
    if (TWO_STAGES) { h = 1u - h; } else { workgroupBarrier(); }
    store_stage(h, lid.x, o0, k0, va, vw);
    workgroupBarrier();
  }
  let out = P.dst + part * rows * outs;
  for (var i = 0u; i < TM; i++) {
    let r = r0 + ty + 16u * i;
    for (var j = 0u; j < TN; j++) {
      let o = o0 + tx + 16u * j;
      if (r < rows && o < outs) { afset(out + r * outs + o, acc[i * TN + j]); }
    }
  }
}
