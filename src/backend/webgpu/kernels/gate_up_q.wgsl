// gate_up.wgsl for quantized gate (W1) and up (W2) matrices of one dtype (quant.wgsl), each in one
// binding, an input offset a multiple of 4: each lane takes whole words of values of both, four of
// each in flight, applies each word's scale once, and reads the inputs as vec4s, as matvec_q.wgsl
// does for one matrix. h = rmsnorm(in) * W3. P: out, in, rows, out_features, in_features, eps.
// ROWS (1 to 4, or 8) is fixed when compiled; PRE (residual_add.wgsl, its norm in W4) joins a
// residual into the input first.
const ROWS = VARIANTu;

// g[r] += gs * (gate word . h[r, col ..]), u[r] likewise, sq[r] += the squares of in[r, col ..].
fn word_dot2(g: ptr<function, array<f32, ROWS>>, u: ptr<function, array<f32, ROWS>>,
             sq: ptr<function, array<f32, ROWS>>, gv: u32, gs: f32, uv: u32, us: f32, col: u32, x: u32,
             rows: u32, ins: u32) {
  var gq: array<vec4<f32>, PER_WORD / 4u>;
  var uq: array<vec4<f32>, PER_WORD / 4u>;
  var nw: array<vec4<f32>, PER_WORD / 4u>;
  var pw: array<vec4<f32>, PER_WORD / 4u>;
  for (var j = 0u; j < PER_WORD / 4u; j++) {
    gq[j] = unpack_word(gv, j);
    uq[j] = unpack_word(uv, j);
    let c = (col + 4u * j) / 2u;
    nw[j] = vec4<f32>(lp3(c), lp3(c + 1u));
    if (PRE) { pw[j] = pre_w4(col / 4u + j); }
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      var dg = 0.0;
      var du = 0.0;
      for (var j = 0u; j < PER_WORD / 4u; j++) {
        let xv = a4((x + r * ins + col) / 4u + j);
        if (PRE) {
          let t = pre_t4(r, col / 4u + j, ins, pw[j]);
          let tn = t * nw[j];
          pre_sums[r] += vec4<f32>(dot(gq[j], tn) * gs, dot(uq[j], tn) * us, dot(xv, t), dot(t, t));
        }
        (*sq)[r] += dot(xv, xv);
        let h = xv * nw[j];
        dg += dot(gq[j], h);
        du += dot(uq[j], h);
      }
      (*g)[r] += dg * gs;
      (*u)[r] += du * us;
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
    let base = o * ins;
    let words = ins / PER_WORD;
    var t = lane;
    for (; t + 96u < words; t += 128u) {  // four words of each matrix per lane in flight
      var gv: array<u32, 4>; var gs: array<f32, 4>;
      var uv: array<u32, 4>; var us: array<f32, 4>;
      for (var k = 0u; k < 4u; k++) {
        let e = base + (t + 32u * k) * PER_WORD;
        gs[k] = q_scale(w1word(q_scale_word(e)), e); gv[k] = w1word(q_value_word(e));
        us[k] = q_scale(w2word(q_scale_word(e)), e); uv[k] = w2word(q_value_word(e));
      }
      for (var k = 0u; k < 4u; k++) {
        word_dot2(&g, &u, &sq, gv[k], gs[k], uv[k], us[k], (t + 32u * k) * PER_WORD, x, rows, ins);
      }
    }
    for (; t < words; t += 32u) {
      let e = base + t * PER_WORD;
      word_dot2(&g, &u, &sq, w1word(q_value_word(e)), q_scale(w1word(q_scale_word(e)), e), w2word(q_value_word(e)),
                q_scale(w2word(q_scale_word(e)), e), t * PER_WORD, x, rows, ins);
    }
  }
  gate_up_end(lid.x, lane, o, g, u, sq);
}
