// gate_up.wgsl for 16-bit gate (W1) and up (W2) matrices in one binding each, rows of a multiple
// of 8, an input offset a multiple of 4: each lane loads 16-byte words (eight weights) of both,
// two of each in flight, and the inputs as vec4s, as matvec_wide.wgsl does for one matrix. h = rmsnorm(in) * W3. P: out, in, rows, out_features,
// in_features, eps. ROWS (1 to 4, or 8) is fixed when compiled; PRE (residual_add.wgsl, its norm in
// W4) joins a residual into the input first.
const ROWS = VARIANTu;

fn pair16(v: u32) -> vec2<f32> { PAIR16 }

// g[r] += gate word . h[r, 8q ..], u[r] likewise, sq[r] += the squares of in[r, 8q ..].
fn oct_dot(g: ptr<function, array<f32, ROWS>>, u: ptr<function, array<f32, ROWS>>,
           sq: ptr<function, array<f32, ROWS>>, gw: vec4<u32>, uw: vec4<u32>, q: u32, x: u32, rows: u32, ins: u32) {
  let ga = vec4<f32>(pair16(gw.x), pair16(gw.y)); let gb = vec4<f32>(pair16(gw.z), pair16(gw.w));
  let ua = vec4<f32>(pair16(uw.x), pair16(uw.y)); let ub = vec4<f32>(pair16(uw.z), pair16(uw.w));
  let na = vec4<f32>(lp3(4u * q), lp3(4u * q + 1u));
  let nb = vec4<f32>(lp3(4u * q + 2u), lp3(4u * q + 3u));
  var pw: mat2x4<f32>;
  if (PRE) { pw = pre_w(q); }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      let xi = (x + r * ins) / 4u + 2u * q;  // the input in vec4s (its offset a multiple of 4)
      let xa = A[xi]; let xb = A[xi + 1u];
      if (PRE) {
        let t = pre_t(r, q, ins, pw);
        let ta = t[0] * na; let tb = t[1] * nb;
        pre_sums[r] += vec4<f32>(dot(ga, ta) + dot(gb, tb), dot(ua, ta) + dot(ub, tb), dot(xa, t[0]) + dot(xb, t[1]),
                                 dot(t[0], t[0]) + dot(t[1], t[1]));
      }
      (*sq)[r] += dot(xa, xa) + dot(xb, xb);
      let ha = xa * na; let hb = xb * nb;
      (*g)[r] += dot(ga, ha) + dot(gb, hb);
      (*u)[r] += dot(ua, ha) + dot(ub, hb);
    }
  }
}

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
    let octs = ins >> 3u;
    let base = o * octs;
    var q = lane;
    for (; q + 32u < octs; q += 64u) {
      let g0 = W1[base + q]; let g1 = W1[base + q + 32u];
      let u0 = W2[base + q]; let u1 = W2[base + q + 32u];
      oct_dot(&g, &u, &sq, g0, u0, q, x, rows, ins);
      oct_dot(&g, &u, &sq, g1, u1, q + 32u, x, rows, ins);
    }
    for (; q < octs; q += 32u) { oct_dot(&g, &u, &sq, W1[base + q], W2[base + q], q, x, rows, ins); }
  }
  gate_up_end(lid.x, lane, o, g, u, sq);
}
