// matvec.wgsl for 16-bit weights (bf16, f16) in one binding, rows of a multiple of 8, and an
// input whose offset is a multiple of 4: each lane loads 16-byte words (eight weights, four words
// in flight) and the matching inputs as two vec4s (the arena seen as vec4s). TEAMS teams of 32
// threads per output feature, each over every TEAMS-th run of 32 words of the row (a long row, or
// few output features, gets more of the GPU's threads), eight teams per workgroup. P: out, in,
// rows, out_features, in_features, eps, mul, mul_stride. ROWS (1 to 4, or 8) and TEAMS (1, 2, 4
// or 8) are fixed when compiled; NORMED and GELU as in matvec.wgsl; PRE
// (residual_add.wgsl, its norm in W3) joins a residual into the input first. TWO: output features
// from P7 on come from a second matrix, W3, of the same width, and go to P6 (GELU off; PRE's norm
// in W4). KV_NORMS: the first P12 workgroups norm a layer's new keys and values in place instead
// (kv_norm.wgsl), and the product's start after them.
const ROWS = VARIANTu;
const TEAMS = TEAMSv;  // 1, 2, 4 or 8
const NORMED = NORMEDv;
const GELU = GELUv;
const TWO = TWOv;

fn pair16(v: u32) -> vec2<f32> { PAIR16 }

// acc[r] += the eight weights of word w . in[r, 8q ..] (normed: times the norm, squares into sq).
fn oct_dot(acc: ptr<function, array<f32, ROWS>>, sq: ptr<function, array<f32, ROWS>>, w: vec4<u32>, q: u32,
           x: u32, rows: u32, ins: u32) {
  let wa = vec4<f32>(pair16(w.x), pair16(w.y));
  let wb = vec4<f32>(pair16(w.z), pair16(w.w));
  var na = vec4<f32>(1.0); var nb = vec4<f32>(1.0);
  if (NORMED) {
    na = vec4<f32>(lp2(4u * q), lp2(4u * q + 1u));
    nb = vec4<f32>(lp2(4u * q + 2u), lp2(4u * q + 3u));
  }
  var pw: mat2x4<f32>;
  if (PRE) { pw = pre_w(q); }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      let xi = (x + r * ins) / 4u + 2u * q;  // the input in vec4s (its offset a multiple of 4)
      let xa = A[xi]; let xb = A[xi + 1u];
      if (PRE) {
        let t = pre_t(r, q, ins, pw);
        pre_sums[r] += vec4<f32>(dot(wa, t[0] * na) + dot(wb, t[1] * nb), 0.0, dot(xa, t[0]) + dot(xb, t[1]),
                                 dot(t[0], t[0]) + dot(t[1], t[1]));
      }
      if (NORMED) { (*sq)[r] += dot(xa, xa) + dot(xb, xb); }
      (*acc)[r] += dot(wa, xa * na) + dot(wb, xb * nb);
    }
  }
}

// 16-byte word k of the team's matrix.
fn wrow(second: bool, k: u32) -> vec4<u32> {
  if (TWO && second) { return W3_VEC4; }
  return W1[k];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let slice = team % TEAMS;  // which of its output feature's teams this is
  let g = kv_norm_first(wg.x + wg.y * n.x, lid.x, lane);
  if (g == KV_NORMED) { return; }
  let o = g * (8u / TEAMS) + team / TEAMS;
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  // With TWO, the team's matrix (second: W3) and its row in it.
  let second = TWO && o >= pu(7u);
  let row = select(o, o - pu(7u), second);
  let x = pu(1u);
  var acc: array<f32, ROWS>;
  var sq: array<f32, ROWS>;
  if (o < outs) {
    let octs = ins >> 3u;
    let base = row * octs;
    const S = 32u * TEAMS;  // the stride between a team's runs
    var q = slice * 32u + lane;
    for (; q + 3u * S < octs; q += 4u * S) {
      let w0 = wrow(second, base + q); let w1 = wrow(second, base + q + S);
      let w2 = wrow(second, base + q + 2u * S); let w3 = wrow(second, base + q + 3u * S);
      oct_dot(&acc, &sq, w0, q, x, rows, ins);
      oct_dot(&acc, &sq, w1, q + S, x, rows, ins);
      oct_dot(&acc, &sq, w2, q + 2u * S, x, rows, ins);
      oct_dot(&acc, &sq, w3, q + 3u * S, x, rows, ins);
    }
    for (; q < octs; q += S) { oct_dot(&acc, &sq, wrow(second, base + q), q, x, rows, ins); }
  }
  let v = teams_finish(lid.x, team, lane, slice, o, acc, sq);
  if (lane == 0u && slice == 0u && o < outs) {
    for (var r = 0u; r < rows; r++) {
      let at = teams_out_at(r, o, row, TWO, second);
      A[at >> 2u][at & 3u] = v[r];
    }
  }
  if (PRE) { pre_write(lane, o == 0u && slice == 0u, rows, ins, x); }
}
