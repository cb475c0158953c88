// out[r, o] = w[o] . x[r] for up to 8 rows x (decode, drafting, verification): the matrix is read
// once for all the rows. Eight teams of 32 threads a workgroup, TEAMS teams an output feature
// (FEATS features a team): the lanes of a feature's teams take runs of consecutive octs (eight
// weights) of its row, each team every TEAMS-th run, so a long row or few features still fill
// the GPU. A lane loads UNROLL octs of each matrix it reads before it uses any (its loads in
// flight together), then multiplies them with each row's input. The team's sums (team.wgsl),
// then its feature's teams', give the products; the first lane of the feature's first team
// writes them.
// Bindings: W1 the matrix (GATE_UP: the gate), W2 a second matrix of W1's type (GATE_UP: the up
// projection; TWO: the second matrix), W3 the input norm (NORMED), W4 the pending join's norm
// (PRE, STAGE) or the keys' norm (KV_NORMS).
//! uses weights, team, residual_join, residual_stage, kv_norm, q8_stage
//! variant ROWS: u32  rows the kernel is compiled for (P.rows <= ROWS): 1 to 4, or 8
//! variant TEAMS: u32  teams of 32 threads an output feature: 1, 2, 4 or 8
//! variant FEATS: u32  output features a team: 1, or 2 (very many features over several rows, or over 8-bit words)
//! variant GATE_UP: bool  out = gelu_tanh(W1 . h) * (W2 . h), h the normed input (the MLP)
//! variant TWO: bool  features from P.first on are W2's rows, written to P.dst2 (keys and values)
//! variant NORMED: bool  the input rms-normed with W3 on the way in
//! variant GELU: bool  out = gelu_tanh(product) * A[P.mul + r * P.mul_stride + o]
//! variant VEC: bool  rows of whole octs and an input at a multiple of 4: 16-byte reads
//! variant ROW_IDS: bool  output j is the product with the matrix's row A[P.ids + j] (an id as a float)
//! variant Q8: u32  q4 weights: octs of workgroup memory for the rows' input made 8-bit (q8_stage); 0: none
//! variant BLOCKS: u32  GATE_UP with Q8: blocks of eight features a workgroup, all from one stage (0 or 1: one)
//! variant Q8_IN: bool  q4 weights: the input already 8-bit, P.x's rows as one 16-byte word an oct (q8_pack.wgsl)
struct Params {
  dst: u32,           // out: (rows, outs); with TWO, W1's features: (rows, first)
  x: u32,             // the input: (rows, ins); Q8_IN: (rows, ins / 8) 16-byte words
  rows: u32,          // rows of input
  outs: u32,          // output features (with TWO, of both matrices)
  ins: u32,           // input features
  eps: f32,           // the input norm's epsilon (NORMED); the keys' and values' (KV_NORMS)
  mul: u32,           // GELU's second factor: (rows, mul_stride)
  mul_stride: u32,    // its row length
  first: u32,         // TWO: W1's output features
  dst2: u32,          // TWO: out of W2's features: (rows, outs - first)
  ids: u32,           // ROW_IDS: the matrix rows, one an output feature
  pre_delta: u32,     // PRE: the block output to join, (rows, ins); x is the residual stream
  pre_out: u32,       // PRE: where the joined input is written
  pre_eps: f32,       // PRE: the join's norm epsilon
  pre_scale: f32,     // PRE: the joined input's scale
  kv_groups: u32,     // KV_NORMS: the workgroups that norm keys and values (kv_norms.wgsl)
  kv_k: u32,          // KV_NORMS: the new keys (rows, kv_heads, head_dim)
  kv_v: u32,          // KV_NORMS: the new values
  kv_heads: u32,      // KV_NORMS: kv heads a row
  kv_half: u32,       // KV_NORMS: half the head dim
  kv_positions: u32,  // KV_NORMS: the rows' positions table (prelude's table_position)
  kv_freqs: u32,      // KV_NORMS: RoPE's inverse frequencies
}
const MT = W1_DTYPE;                           // the matrices' type
const NB = max(BLOCKS, 1u);                    // blocks of features a workgroup
const Q8W = Q8 > 0u || Q8_IN;                  // the input 8-bit: a product of words
const STREAMS = select(FEATS, 2u, GATE_UP);    // products a team sums for each row
// Octs a stream loads before it uses any (element reads: one): 16-bit weights two a stream for one
// row, one for several rows and for the gate and up product; other types about four 16-byte
// loads a lane. More in flight hold more registers a lane, which costs the 16-bit products (and
// each row's sums) more than the loads' overlap buys.
const UNROLL16 = select(2u, 1u, GATE_UP || ROWS > 1u);
const UNROLL = select(1u, select(max(1u, select(4u, 2u, MT == DT_F32 || MT == DT_Q8) / STREAMS), UNROLL16,
                                 MT == DT_BF16 || MT == DT_F16), VEC);

// The words of oct q of a matrix row at element `base` of binding b: as stored (VEC), else the
// values themselves as f32 bits, zero past the row's end.
fn load(b: u32, base: u32, q: u32, ins: u32) -> OctWords {
  if (VEC) { return oct_words(b, MT, base + 8u * q); }
  var w: OctWords;
  for (var i = 0u; i < 4u; i++) {
    if (8u * q + i < ins) { w.a[i] = bitcast<u32>(welem_t(b, MT, base + 8u * q + i)); }
    if (8u * q + 4u + i < ins) { w.b[i] = bitcast<u32>(welem_t(b, MT, base + 8u * q + 4u + i)); }
  }
  return w;
}
// A lane's words for one step of the product's loop at oct q: UNROLL octs of each stream, a
// team's stride S apart.
const S = 32u * TEAMS;  // the stride between a team's runs
fn step_words(bind: array<u32, STREAMS>, base: array<u32, STREAMS>, q: u32, ins: u32) -> array<OctWords, UNROLL * STREAMS> {
  var w: array<OctWords, UNROLL * STREAMS>;
  for (var u = 0u; u < UNROLL; u++) {
    for (var s = 0u; s < STREAMS; s++) { w[u * STREAMS + s] = load(bind[s], base[s], q + u * S, ins); }
  }
  return w;
}
// Each stream's words of step word u of w, and of oct q alone.
fn stream_words(w: array<OctWords, UNROLL * STREAMS>, u: u32) -> array<OctWords, STREAMS> {
  var ws: array<OctWords, STREAMS>;
  for (var s = 0u; s < STREAMS; s++) { ws[s] = w[u * STREAMS + s]; }
  return ws;
}
fn stream_oct(bind: array<u32, STREAMS>, base: array<u32, STREAMS>, q: u32, ins: u32) -> array<OctWords, STREAMS> {
  var ws: array<OctWords, STREAMS>;
  for (var s = 0u; s < STREAMS; s++) { ws[s] = load(bind[s], base[s], q, ins); }
  return ws;
}
fn decode(w: OctWords, e: u32) -> Oct {
  if (VEC) { return oct_of(MT, w, e); }
  return Oct(bitcast<vec4<f32>>(w.a), bitcast<vec4<f32>>(w.b), 1.0);
}
// Elements 8q .. 8q + 7 of the input row at x (zero past its end), and of the input norm.
fn input8(x: u32, q: u32, ins: u32) -> mat2x4<f32> {
  if (VEC) { return mat2x4<f32>(A[x / 4u + 2u * q], A[x / 4u + 2u * q + 1u]); }
  var v: mat2x4<f32>;
  for (var i = 0u; i < 8u; i++) {
    if (8u * q + i < ins) { v[i / 4u][i % 4u] = af(x + 8u * q + i); }
  }
  return v;
}
fn norm8(q: u32, ins: u32) -> mat2x4<f32> {
  if (VEC) { return woct(3u, 8u * q); }
  var v: mat2x4<f32>;
  for (var i = 0u; i < 8u; i++) {
    if (8u * q + i < ins) { v[i / 4u][i % 4u] = welem(3u, 8u * q + i); }
  }
  return v;
}

// acc[s][r] += stream s's oct q . h[r], h the input (normed: times the norm, its squares summed
// into sq); with PRE (one row), the join's sums too. The norm goes on each row's input, or, where
// the kernel takes more rows than a team has streams, on each stream's weights once (FOLD).
fn oct_dots(acc: ptr<function, array<array<f32, ROWS>, STREAMS>>, sq: ptr<function, array<f32, ROWS>>,
            w: array<Oct, STREAMS>, q: u32, rows: u32, ins: u32, x: u32) {
  const FOLD = NORMED && ROWS > STREAMS;
  var nw = mat2x4<f32>(vec4<f32>(1.0), vec4<f32>(1.0));
  if (NORMED) { nw = norm8(q, ins); }
  var pw: mat2x4<f32>;
  if (PRE) { pw = woct(4u, 8u * q); }
  var wf = w;  // the weights the rows' dots take: with FOLD, times the norm
  if (FOLD) {
    for (var s = 0u; s < STREAMS; s++) {
      wf[s].lo = w[s].lo * nw[0];
      wf[s].hi = w[s].hi * nw[1];
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      var xv: mat2x4<f32>;
      if (STAGE > 0u) { xv = staged8(r, q, ins); } else { xv = input8(x + r * ins, q, ins); }
      if (PRE) {
        let d = pre_delta(r, q, ins);
        let t0 = d[0] * pw[0]; let t1 = d[1] * pw[1];
        var ps = vec4<f32>(0.0, 0.0, dot(xv[0], t0) + dot(xv[1], t1), dot(t0, t0) + dot(t1, t1));
        for (var s = 0u; s < STREAMS; s++) {
          ps[s] = (dot(w[s].lo, t0 * nw[0]) + dot(w[s].hi, t1 * nw[1])) * w[s].scale;
        }
        pre_sums[r] += ps;
      }
      if (NORMED) { (*sq)[r] += dot(xv[0], xv[0]) + dot(xv[1], xv[1]); }
      var h = xv;
      if (!FOLD) { h = mat2x4<f32>(xv[0] * nw[0], xv[1] * nw[1]); }
      for (var s = 0u; s < STREAMS; s++) {
        (*acc)[s][r] += (dot(wf[s].lo, h[0]) + dot(wf[s].hi, h[1])) * w[s].scale;
      }
    }
  }
}

// Row r's 8-bit input oct q: from the stage (Q8), else from P.x (Q8_IN).
fn q8_word_at(r: u32, q: u32, octs: u32) -> vec4<u32> {
  if (Q8_IN) { return bitcast<vec4<u32>>(A[P.x / 4u + r * octs + q]); }
  return q8_in[r * octs + q];
}

// Q8W: acc[s][r] += stream s's oct q (its words w[s], its row at element base[s]) . row r's 8-bit
// input oct, four products an instruction (dot4I8Packed): the nibbles of even and of odd elements
// against the input's, the offset of 8 taken off through the oct's sum, then both scales.
fn oct_dots_q8(acc: ptr<function, array<array<f32, ROWS>, STREAMS>>, w: array<OctWords, STREAMS>,
               base: array<u32, STREAMS>, q: u32, rows: u32, octs: u32) {
  var sc: array<f32, STREAMS>;
  var ev: array<u32, STREAMS>;
  var od: array<u32, STREAMS>;
  for (var s = 0u; s < STREAMS; s++) {
    sc[s] = unpack2x16float(w[s].a.x >> (((base[s] + 8u * q) >> 1u) & 16u)).x;
    ev[s] = w[s].a.y & 0x0f0f0f0fu;
    od[s] = (w[s].a.y >> 4u) & 0x0f0f0f0fu;
  }
  // Rows outside streams: each row's input word is read once for all streams.
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      let x = q8_word_at(r, q, octs);
      let d = bitcast<f32>(x.z);
      let m = 8.0 * bitcast<f32>(x.w);
      for (var s = 0u; s < STREAMS; s++) {
        let i = dot4I8Packed(ev[s], x.x) + dot4I8Packed(od[s], x.y);
        (*acc)[s][r] += (d * f32(i) - m) * sc[s];
      }
    }
  }
}

// The sums a team reduces. A row's sums are a vec4 (products 0 and 1, squares 2, delta squares 3);
// with PRE (one row: JoinPlaceFor, which keeps the exchange below within
// kMatVecOwnWorkgroupBytes, dispatch_policy.h) that vec4 and the join's. Otherwise only the
// PER_ROW values a row uses (its streams' products, then its squares where the norm is made here:
// with Q8 the stage made it) are summed, the rows packed one after another into PACKS vec4s: every
// add of a reduction then carries four values.
const PER_ROW = STREAMS + select(0u, 1u, NORMED && Q8 == 0u);
const PACKS = (ROWS * PER_ROW + 3u) / 4u;
const SUMS = select(PACKS, 2u * ROWS, PRE);
// Where value j of a row sits in its vec4 of sums: its streams' products first, then its squares.
fn sum_slot(j: u32) -> u32 { return select(j, 2u, j >= STREAMS); }
// Row r's PER_ROW values of s (a row's vec4 of sums) into the packed sums, and back.
fn pack_row(sums: ptr<function, array<vec4<f32>, SUMS>>, r: u32, s: vec4<f32>) {
  for (var j = 0u; j < PER_ROW; j++) {
    let i = r * PER_ROW + j;
    (*sums)[i / 4u][i % 4u] = s[sum_slot(j)];
  }
}
fn unpack_row(sums: array<vec4<f32>, SUMS>, r: u32) -> vec4<f32> {
  var s = vec4<f32>(0.0);
  for (var j = 0u; j < PER_ROW; j++) {
    let i = r * PER_ROW + j;
    s[sum_slot(j)] = sums[min(i / 4u, SUMS - 1u)][i % 4u];
  }
  return s;
}

// With TEAMS > 1: each of v's sums (valid in each team's lane 0) summed over a feature's teams,
// valid in its first team's lane 0; every row's sums (and the join's) go in one exchange, one
// barrier for all of them. slice: the team's place among its feature's teams. Called by the whole
// workgroup, once.
var<workgroup> teams_partial: array<array<vec4<f32>, SUMS>, 8>;
fn teams_sum(team: u32, lane: u32, slice: u32, v: ptr<function, array<vec4<f32>, SUMS>>) {
  if (lane == 0u) { teams_partial[team] = *v; }
  workgroupBarrier();
  if (lane == 0u && slice == 0u) {
    for (var t = 1u; t < TEAMS; t++) {
      for (var k = 0u; k < SUMS; k++) { (*v)[k] += teams_partial[team + t][k]; }
    }
  }
}

// Row r's outputs of the team whose first feature is o, from its sums s = (products, squares,
// delta squares) and the join's p.
fn write_row(r: u32, o: u32, s: vec4<f32>, p: vec4<f32>, second: bool) {
  var v = s.xy;
  var ss = s.z;
  if (PRE) {
    let j = pre_combine(s.xyz, p, s.w, r, P.ins, o == 0u);
    v = j.xy;
    ss = j.z;
  }
  if (NORMED && Q8 == 0u) { v *= 1.0 / sqrt(ss / f32(P.ins) + P.eps); }
  if (GATE_UP) {
    afset(P.dst + r * P.outs + o, gelu_tanh(v.x) * v.y);
    return;
  }
  for (var f = 0u; f < FEATS; f++) {
    let feat = o + f;
    if (feat < P.outs) {
      var y = v[f];
      if (GELU) { y = gelu_tanh(y) * af(P.mul + r * P.mul_stride + feat); }
      if (!TWO) {
        afset(P.dst + r * P.outs + feat, y);
      } else if (second) {
        afset(P.dst2 + r * (P.outs - P.first) + feat - P.first, y);
      } else {
        afset(P.dst + r * P.first + feat, y);
      }
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let slice = team % TEAMS;  // which of its features' teams this is
  let g = kv_norm_first(wid(wg, n), lid.x, lane);
  if (g == KV_NORMED) { return; }
  let o = (g * NB * (8u / TEAMS) + team / TEAMS) * FEATS;  // the team's first output feature
  let rows = P.rows; let outs = P.outs; let ins = P.ins; let x = P.x;
  let second = TWO && o >= P.first;  // the team's matrix is W2
  // Each stream's binding and matrix row (an element offset); features past the end read the
  // last row again (not written).
  var bind: array<u32, STREAMS>;
  var base: array<u32, STREAMS>;
  for (var s = 0u; s < STREAMS; s++) {
    var row = min(o + select(s, 0u, GATE_UP), outs - 1u);
    if (second) { row -= P.first; }
    if (ROW_IDS) { row = u32(af(P.ids + row)); }
    bind[s] = select(select(1u, 2u, second), 1u + s, GATE_UP);
    base[s] = row * ins;
  }
  var acc: array<array<f32, ROWS>, STREAMS>;
  var sq: array<f32, ROWS>;
  let octs = (ins + 7u) / 8u;
  var q = slice * 32u + lane;
  // The words of the loop's first step. With a stage they are loaded before the join is made, so
  // that their trip to memory overlaps the join's (nothing in the join depends on them).
  var w: array<OctWords, UNROLL * STREAMS>;
  var loaded = STAGE > 0u && o < outs && q + (UNROLL - 1u) * S < octs;
  if (loaded) { w = step_words(bind, base, q, ins); }
  if (STAGE > 0u) { stage_join(lid.x, lane, g == 0u); }
  if (Q8 > 0u) { q8_stage(lid.x, lane); }
  if (o < outs) {
    for (; q + (UNROLL - 1u) * S < octs; q += UNROLL * S) {
      if (!loaded) { w = step_words(bind, base, q, ins); }
      loaded = false;
      for (var u = 0u; u < UNROLL; u++) {
        if (Q8W) {
          oct_dots_q8(&acc, stream_words(w, u), base, q + u * S, rows, octs);
          continue;
        }
        var os: array<Oct, STREAMS>;
        for (var s = 0u; s < STREAMS; s++) { os[s] = decode(w[u * STREAMS + s], base[s] + 8u * (q + u * S)); }
        oct_dots(&acc, &sq, os, q + u * S, rows, ins, x);
      }
    }
    for (; q < octs; q += S) {
      if (Q8W) {
        oct_dots_q8(&acc, stream_oct(bind, base, q, ins), base, q, rows, octs);
        continue;
      }
      var os: array<Oct, STREAMS>;
      for (var s = 0u; s < STREAMS; s++) { os[s] = decode(load(bind[s], base[s], q, ins), base[s] + 8u * q); }
      oct_dots(&acc, &sq, os, q, rows, ins, x);
    }
  }
  // Each row's sums (products, squares, delta squares) and the join's, over the team, then over
  // the feature's teams.
  var sums: array<vec4<f32>, SUMS>;
  for (var r = 0u; r < ROWS; r++) {
    var s = vec4<f32>(0.0, 0.0, sq[r], pre_dd[r]);
    for (var k = 0u; k < STREAMS; k++) { s[k] = acc[k][r]; }
    if (PRE) {
      sums[r] = s;
      sums[ROWS + r] = pre_sums[r];
    } else {
      pack_row(&sums, r, s);
    }
  }
  for (var k = 0u; k < SUMS; k++) { sums[k] = team_sums(lid.x, lane, sums[k]); }
  if (TEAMS > 1u) { teams_sum(team, lane, slice, &sums); }
  for (var r = 0u; r < ROWS; r++) {
    var s = vec4<f32>(0.0);
    var p = vec4<f32>(0.0);
    if (PRE) {
      s = sums[min(r, SUMS - 1u)];
      p = sums[min(ROWS + r, SUMS - 1u)];
    } else {
      s = unpack_row(sums, r);
    }
    if (lane == 0u && slice == 0u && o < outs && r < rows) { write_row(r, o, s, p, second); }
  }
  if (PRE) { pre_write(lane, o == 0u && slice == 0u, rows, ins, x); }
  for (var b = 1u; b < NB; b++) { gate_up_block(g * NB + b, lid.x, team, lane); }
}

// NB > 1 (GATE_UP, Q8, a team a feature): the workgroup's block k, from the stage made for
// its first. Called by the whole workgroup.
fn gate_up_block(k: u32, local: u32, team: u32, lane: u32) {
  let o = k * 8u + team;
  let rows = P.rows; let outs = P.outs; let ins = P.ins; let octs = ins / 8u;
  let row = min(o, outs - 1u);
  var bind: array<u32, STREAMS>;
  var base: array<u32, STREAMS>;
  for (var s = 0u; s < STREAMS; s++) {
    bind[s] = 1u + s;
    base[s] = row * ins;
  }
  var acc = array<array<f32, ROWS>, STREAMS>();
  if (o < outs) {
    var q = lane;
    for (; q + (UNROLL - 1u) * S < octs; q += UNROLL * S) {
      let w = step_words(bind, base, q, ins);
      for (var u = 0u; u < UNROLL; u++) { oct_dots_q8(&acc, stream_words(w, u), base, q + u * S, rows, octs); }
    }
    for (; q < octs; q += S) { oct_dots_q8(&acc, stream_oct(bind, base, q, ins), base, q, rows, octs); }
  }
  // The rows' products packed as the first block's are: the gate's and the up projection's (blocks
  // run only for GATE_UP with Q8: two streams, no squares, no join on the way, so SUMS is PACKS).
  var sums: array<vec4<f32>, SUMS>;
  for (var r = 0u; r < ROWS; r++) { pack_row(&sums, r, vec4<f32>(acc[0][r], acc[STREAMS - 1u][r], 0.0, 0.0)); }
  for (var k = 0u; k < PACKS; k++) { sums[k] = team_sums(local, lane, sums[k]); }
  for (var r = 0u; r < ROWS; r++) {
    if (lane == 0u && o < outs && r < rows) { write_row(r, o, unpack_row(sums, r), vec4<f32>(0.0), false); }
  }
}
