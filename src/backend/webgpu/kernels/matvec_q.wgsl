// out[r, o] = sum_i in[r, i] * w[o, i] for a few rows (decode, verification) with w quantized
// (quant.wgsl). TEAMS teams of 32 threads per output feature (each over every TEAMS-th run of 32
// words, as in matvec_wide.wgsl), each lane taking one whole word of values at a time (four in
// flight) and applying its group's scale once.
// P: out, in, rows, out_features, in_features, eps, mul, mul_stride (GELU as in matvec.wgsl). ROWS
// (1 to 4, or 8), TEAMS (1, 2, 4 or 8) and quant.wgsl's BITS are fixed when compiled; NORMED as in
// matvec.wgsl (the input rms-normed with the weight W2 on the way in); PRE (with VEC_IN;
// residual_add.wgsl, its norm in W3, or W4 with TWO) joins a residual into the input first. TWO:
// output features from P7 on come from a second matrix of the same width and type, W3, and go to
// P6 (GELU off), as in matvec_wide.wgsl.
const ROWS = VARIANTu;
const TEAMS = TEAMSv;
const NORMED = NORMEDv;
const GELU = GELUv;
const VEC_IN = VEC_INv;  // the arena seen as vec4s: the input's offset and row length are multiples of 4
const TWO = TWOv;

// Word k of the team's matrix (second: W3).
fn qword(second: bool, k: u32) -> u32 {
  if (TWO && second) { return w3word(k); }
  return w1word(k);
}

// acc[r] += s * (the word's values . in[r, xi ..]) for each row (columns col ..; normed: the inputs
// times the norm weight, their squares summed into sq).
fn word_dot(acc: ptr<function, array<f32, ROWS>>, sq: ptr<function, array<f32, ROWS>>, v: u32, s: f32, xi: u32,
            col: u32, rows: u32, ins: u32) {
  var q: array<vec4<f32>, PER_WORD / 4u>;
  var nw: array<vec4<f32>, PER_WORD / 4u>;
  var pw: array<vec4<f32>, PER_WORD / 4u>;
  for (var j = 0u; j < PER_WORD / 4u; j++) {
    q[j] = unpack_word(v, j);
    nw[j] = vec4<f32>(1.0);
    if (NORMED) {
      let c = col + 4u * j;
      nw[j] = vec4<f32>(ld2(c), ld2(c + 1u), ld2(c + 2u), ld2(c + 3u));
    }
    if (PRE) { pw[j] = pre_w4(col / 4u + j); }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      var d = 0.0;
      for (var j = 0u; j < PER_WORD / 4u; j++) {
        let b = xi + r * ins + 4u * j;
        var xv: vec4<f32>;
        if (VEC_IN) {
          xv = a4(b / 4u);
        } else {
          xv = vec4<f32>(af(b), af(b + 1u), af(b + 2u), af(b + 3u));
        }
        if (PRE) {
          let t = pre_t4(r, col / 4u + j, ins, pw[j]);
          pre_sums[r] += vec4<f32>(dot(q[j], t * nw[j]) * s, 0.0, dot(xv, t), dot(t, t));
        }
        if (NORMED) {
          (*sq)[r] += dot(xv, xv);
          d += dot(q[j], xv * nw[j]);
        } else {
          d += dot(q[j], xv);
        }
      }
      (*acc)[r] += d * s;
    }
  }
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
  let x = pu(1u);
  var acc: array<f32, ROWS>;
  var sq: array<f32, ROWS>;
  // With TWO, the team's matrix (second: W3) and its row in it.
  let second = TWO && o >= pu(7u);
  let row = select(o, o - pu(7u), second);
  if (o < outs) {
    let base = row * ins;
    let words = ins / PER_WORD;
    // Four words per lane in flight, then the rest one at a time.
    const S = 32u * TEAMS;  // the stride between a team's runs
    var t = slice * 32u + lane;
    for (; t + 3u * S < words; t += 4u * S) {
      var v: array<u32, 4>;
      var s: array<f32, 4>;
      for (var k = 0u; k < 4u; k++) {
        let e = base + (t + S * k) * PER_WORD;
        s[k] = q_scale(qword(second, q_scale_word(e)), e);
        v[k] = qword(second, q_value_word(e));
      }
      for (var k = 0u; k < 4u; k++) {
        let col = (t + S * k) * PER_WORD;
        word_dot(&acc, &sq, v[k], s[k], x + col, col, rows, ins);
      }
    }
    for (; t < words; t += S) {
      let e = base + t * PER_WORD;
      word_dot(&acc, &sq, qword(second, q_value_word(e)), q_scale(qword(second, q_scale_word(e)), e),
               x + t * PER_WORD, t * PER_WORD, rows, ins);
    }
  }
  let v = teams_finish(lid.x, team, lane, slice, o, acc, sq);
  if (lane == 0u && slice == 0u && o < outs) {
    for (var r = 0u; r < rows; r++) {
      let at = teams_out_at(r, o, row, TWO, second);
      afset(at, v[r]);
    }
  }
  if (PRE) { pre_write(lane, o == 0u && slice == 0u, rows, ins, x); }
}
