// matvec_wide.wgsl for 2 to 8 rows over very many output features (verification's LM head): each
// team takes FEATS features, so an input word a lane loads serves FEATS weight words. With one
// feature a team, every weight byte costs two bytes of input per row from the cache; E2B's 3-row
// LM head (262,144 features) took 0.41 ms on the H200 that way, 0.26 ms this way. Products with
// few features lose more from having half the teams than they gain (see kRowsFeatures).
// Same layout and parameters as matvec_wide.wgsl (P: out, in, rows, out_features, in_features, eps,
// mul, mul_stride); ROWS, TEAMS, NORMED and GELU as there; no pending join, no second matrix.
const ROWS = VARIANTu;
const TEAMS = TEAMSv;  // 1, 2, 4 or 8
const NORMED = NORMEDv;
const GELU = GELUv;
const FEATS = 2u;

fn pair16(v: u32) -> vec2<f32> { PAIR16 }
fn unpack8(w: vec4<u32>) -> mat2x4<f32> {
  return mat2x4<f32>(vec4<f32>(pair16(w.x), pair16(w.y)), vec4<f32>(pair16(w.z), pair16(w.w)));
}

// acc[f][r] += feature f's eight weights of word q (w[f]) . in[r, 8q ..] (normed: times the norm,
// squares into sq).
fn oct_dots(acc: ptr<function, array<array<f32, ROWS>, FEATS>>, sq: ptr<function, array<f32, ROWS>>,
            w: array<vec4<u32>, FEATS>, q: u32, x: u32, rows: u32, ins: u32) {
  var wm: array<mat2x4<f32>, FEATS>;
  for (var f = 0u; f < FEATS; f++) { wm[f] = unpack8(w[f]); }
  var na = vec4<f32>(1.0); var nb = vec4<f32>(1.0);
  if (NORMED) {
    na = vec4<f32>(lp2(4u * q), lp2(4u * q + 1u));
    nb = vec4<f32>(lp2(4u * q + 2u), lp2(4u * q + 3u));
  }
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      let xi = (x + r * ins) / 4u + 2u * q;  // the input in vec4s (its offset a multiple of 4)
      var xa = A[xi]; var xb = A[xi + 1u];
      if (NORMED) {
        (*sq)[r] += dot(xa, xa) + dot(xb, xb);
        xa *= na; xb *= nb;
      }
      for (var f = 0u; f < FEATS; f++) { (*acc)[f][r] += dot(wm[f][0], xa) + dot(wm[f][1], xb); }
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let slice = team % TEAMS;  // which of its features' teams this is
  let o = ((wg.x + wg.y * n.x) * (8u / TEAMS) + team / TEAMS) * FEATS;  // the team's first feature
  let rows = pu(2u); let outs = pu(3u); let ins = pu(4u);
  let x = pu(1u);
  var acc: array<array<f32, ROWS>, FEATS>;
  var sq: array<f32, ROWS>;
  if (o < outs) {
    let octs = ins >> 3u;
    var base: array<u32, FEATS>;  // features past the end read the last row again (not written)
    for (var f = 0u; f < FEATS; f++) { base[f] = min(o + f, outs - 1u) * octs; }
    const S = 32u * TEAMS;  // the stride between a team's runs
    var q = slice * 32u + lane;
    // Two words of each feature in flight, then the rest one at a time.
    for (; q + S < octs; q += 2u * S) {
      var w0: array<vec4<u32>, FEATS>; var w1: array<vec4<u32>, FEATS>;
      for (var f = 0u; f < FEATS; f++) { w0[f] = W1[base[f] + q]; w1[f] = W1[base[f] + q + S]; }
      oct_dots(&acc, &sq, w0, q, x, rows, ins);
      oct_dots(&acc, &sq, w1, q + S, x, rows, ins);
    }
    for (; q < octs; q += S) {
      var w0: array<vec4<u32>, FEATS>;
      for (var f = 0u; f < FEATS; f++) { w0[f] = W1[base[f] + q]; }
      oct_dots(&acc, &sq, w0, q, x, rows, ins);
    }
  }
  for (var f = 0u; f < FEATS; f++) {
    let v = teams_finish(lid.x, team, lane, slice, o + f, acc[f], sq);
    if (lane == 0u && slice == 0u && o + f < outs) {
      for (var r = 0u; r < rows; r++) {
        let at = pu(0u) + r * outs + o + f;
        A[at >> 2u][at & 3u] = v[r];
      }
    }
  }
}
