// out[r, o] = gelu_tanh(h[r] . gate[o]) * (h[r] . up[o]), h = rmsnorm(in) * W3, for a few rows
// (decode, verification): the MLP's norm, two input projections and their product in one
// dispatch. Eight teams of 32 threads per workgroup, a team per output feature reading its gate
// row (W1) and up row (W2) once for all rows, as matvec.wgsl does for one matrix, and summing the
// squares of the inputs on the way. P: out, in, rows, out_features, in_features, eps. PRE
// (residual_add.wgsl, its norm in W4; rows of even length) joins a residual into the input first.
const ROWS = VARIANTu;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let o = (wg.x + wg.y * n.x) * 8u + team;
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  let x = pu(1u);
  var g: array<f32, ROWS>;
  var u: array<f32, ROWS>;
  var sq: array<f32, ROWS>;
  if (o < outs) {
    if ((ins & 1u) == 0u) {
      let half = ins >> 1u;
      let base = o * half;
      // Two words of each matrix per lane in flight, then the rest one at a time.
      var j = lane;
      for (; j + 32u < half; j += 64u) {
        let g0 = w1p(base + j); let g1 = w1p(base + j + 32u);
        let u0 = lp2(base + j); let u1 = lp2(base + j + 32u);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xi = x + r * ins + 2u * j;
            let xv = vec4<f32>(A[xi], A[xi + 1u], A[xi + 64u], A[xi + 65u]);
            sq[r] += dot(xv, xv);
            let nw = vec4<f32>(lp3(j), lp3(j + 32u));
            let a = xv * nw;
            g[r] += dot(vec4<f32>(g0, g1), a);
            u[r] += dot(vec4<f32>(u0, u1), a);
            if (PRE) {
              let t = vec4<f32>(pre_t2(r, j, ins), pre_t2(r, j + 32u, ins));
              let tn = t * nw;
              pre_sums[r] += vec4<f32>(dot(vec4<f32>(g0, g1), tn), dot(vec4<f32>(u0, u1), tn), dot(xv, t), dot(t, t));
            }
          }
        }
      }
      for (; j < half; j += 32u) {
        let gw = w1p(base + j); let uw = lp2(base + j);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xi = x + r * ins + 2u * j;
            let xv = vec2<f32>(A[xi], A[xi + 1u]);
            sq[r] += dot(xv, xv);
            let nw = lp3(j);
            let a = xv * nw;
            g[r] += dot(gw, a);
            u[r] += dot(uw, a);
            if (PRE) {
              let t = pre_t2(r, j, ins);
              let tn = t * nw;
              pre_sums[r] += vec4<f32>(dot(gw, tn), dot(uw, tn), dot(xv, t), dot(t, t));
            }
          }
        }
      }
    } else {
      let base = o * ins;
      for (var i = lane; i < ins; i += 32u) {
        let gw = w1(base + i); let uw = ld2(base + i);
        for (var r = 0u; r < ROWS; r++) {
          if (r < rows) {
            let xv = A[x + r * ins + i];
            sq[r] += xv * xv;
            g[r] += gw * xv * ld3(i);
            u[r] += uw * xv * ld3(i);
          }
        }
      }
    }
  }
  gate_up_end(lid.x, lane, o, g, u, sq);
}
