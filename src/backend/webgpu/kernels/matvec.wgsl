// out[r, o] = sum_i in[r, i] * w[o, i] for a few rows (decode, verification): the weight matrix is
// read once for all of them. Eight teams of 32 threads per workgroup, a team per output feature,
// reading the weights two elements per 32-bit word when the rows have an even length.
// P: out, in, rows, out_features, in_features, eps, mul, mul_stride. ROWS (1 to 4, or 8) is fixed
// when compiled. GELU: out = gelu_tanh(product) * A[mul + r * mul_stride + o].
// NORMED: the input is rms-normed with the weight W2 on the way in, out = (w . (in * W2)) * inv_rms(in),
// the sum of squares gathered by the same loop (every team reads all of its rows' inputs).
const ROWS = VARIANTu;
const NORMED = NORMEDv;
const GELU = GELUv;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let o = (wg.x + wg.y * n.x) * 8u + team;
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  let x = pu(1u);
  var acc: array<f32, ROWS>;
  var sq: array<f32, ROWS>;
  if (o < outs) {
    if ((ins & 1u) == 0u) {
      let half = ins >> 1u;
      let base = o * half;
      // Four words per lane in flight, then the rest one at a time.
      var j = lane;
      for (; j + 96u < half; j += 128u) {
        let w0 = w1p(base + j); let w1 = w1p(base + j + 32u);
        let w2 = w1p(base + j + 64u); let w3 = w1p(base + j + 96u);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xi = x + r * ins + 2u * j;
            if (NORMED) {
              let x0 = vec2<f32>(A[xi], A[xi + 1u]); let x1 = vec2<f32>(A[xi + 64u], A[xi + 65u]);
              let x2 = vec2<f32>(A[xi + 128u], A[xi + 129u]); let x3 = vec2<f32>(A[xi + 192u], A[xi + 193u]);
              sq[r] += dot(x0, x0) + dot(x1, x1) + dot(x2, x2) + dot(x3, x3);
              acc[r] += dot(w0, x0 * lp2(j)) + dot(w1, x1 * lp2(j + 32u)) + dot(w2, x2 * lp2(j + 64u)) +
                        dot(w3, x3 * lp2(j + 96u));
            } else {
              acc[r] += w0.x * A[xi] + w0.y * A[xi + 1u] + w1.x * A[xi + 64u] + w1.y * A[xi + 65u] +
                        w2.x * A[xi + 128u] + w2.y * A[xi + 129u] + w3.x * A[xi + 192u] + w3.y * A[xi + 193u];
            }
          }
        }
      }
      for (; j < half; j += 32u) {
        let w = w1p(base + j);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xi = x + r * ins + 2u * j;
            if (NORMED) {
              let x0 = vec2<f32>(A[xi], A[xi + 1u]);
              sq[r] += dot(x0, x0);
              acc[r] += dot(w, x0 * lp2(j));
            } else {
              acc[r] += w.x * A[xi] + w.y * A[xi + 1u];
            }
          }
        }
      }
    } else {
      let base = o * ins;
      for (var i = lane; i < ins; i += 32u) {
        let w = w1(base + i);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xv = A[x + r * ins + i];
            if (NORMED) {
              sq[r] += xv * xv;
              acc[r] += w * xv * ld2(i);
            } else {
              acc[r] += w * xv;
            }
          }
        }
      }
    }
  }
  for (var r = 0u; r < ROWS; r++) {
    let s = team_sums(lid.x, lane, vec4<f32>(acc[r], sq[r], 0.0, 0.0));
    if (lane == 0u && o < outs && r < rows) {
      var v = s.x;
      if (NORMED) { v *= 1.0 / sqrt(s.y / f32(ins) + pf(5u)); }
      if (GELU) { v = gelu_tanh(v) * A[pu(6u) + r * pu(7u) + o]; }
      A[pu(0u) + r * outs + o] = v;
    }
  }
}
