// A pending residual join made by a matrix-vector kernel as it reads its input (variant PRE):
// in[r, :] = (x_in[r, :] + rmsnorm(delta[r, :]) * norm) * scale. With t = delta * norm and
// inv = rms(delta)^-1, in = scale * (x_in + inv * t): the kernel sums its products with x_in and
// with t apart (and x_in . t, t . t for the input's own norm) in the one pass over the weights,
// and combines them once inv is known, so no workgroup waits for the delta's norm first. The
// first team of workgroup 0 then writes the joined input to x_out. x_in is the kernel's input P1;
// P8: delta, P9: x_out, P10: eps, P11: scale; the norm is the weight binding PRE_LP reads.
// Offsets and row lengths are multiples of 4.
const PRE = PREv;
var<private> pre_sums: array<vec4<f32>, 8>;  // per row: (first product . t, second product . t, x_in . t, t . t)
var<private> pre_dd: array<f32, 8>;          // per row: delta . delta
var<workgroup> pre_inv: array<f32, 8>;       // per row: inv, for the writing team

// The norm's elements 8q .. 8q + 7, as two vec4s.
fn pre_w(q: u32) -> mat2x4<f32> { return mat2x4<f32>(pre_w4(2u * q), pre_w4(2u * q + 1u)); }

// t of row r, elements 8q .. 8q + 7, as two vec4s (w: pre_w(q)); sums delta^2 into pre_dd.
fn pre_t(r: u32, q: u32, ins: u32, w: mat2x4<f32>) -> mat2x4<f32> {
  let d = (pu(8u) + r * ins) / 4u + 2u * q;
  let da = a4(d); let db = a4(d + 1u);
  pre_dd[r] += dot(da, da) + dot(db, db);
  return mat2x4<f32>(da * w[0], db * w[1]);
}

// The same for the four elements 4v .. 4v + 3 (w: the norm's, from pre_w4(v)).
fn pre_w4(v: u32) -> vec4<f32> { return vec4<f32>(PRE_LP(2u * v), PRE_LP(2u * v + 1u)); }
fn pre_t4(r: u32, v: u32, ins: u32, w: vec4<f32>) -> vec4<f32> {
  let d = a4((pu(8u) + r * ins) / 4u + v);
  pre_dd[r] += dot(d, d);
  return d * w;
}

// The same for the two elements 2j, 2j + 1.
fn pre_t2(r: u32, j: u32, ins: u32) -> vec2<f32> {
  let i = pu(8u) + r * ins + 2u * j;
  let d = vec2<f32>(af(i), af(i + 1u));
  pre_dd[r] += dot(d, d);
  return d * PRE_LP(j);
}

// A row's two products with the joined input and its sum of squares, from the sums apart:
// x = (the products with x_in, x_in . x_in), p = pre_sums[r] and dd = pre_dd[r], summed over the
// team. The first team keeps the row's inv for pre_write.
fn pre_combine(x: vec3<f32>, p: vec4<f32>, dd: f32, r: u32, ins: u32, first: bool) -> vec3<f32> {
  let inv = 1.0 / sqrt(dd / f32(ins) + pf(10u));
  if (first) { pre_inv[r] = inv; }
  let sc = pf(11u);
  return vec3<f32>(sc * (x.x + inv * p.x), sc * (x.y + inv * p.y), sc * sc * (x.z + 2.0 * inv * p.z + inv * inv * p.w));
}

// After every row's inv is in pre_inv: the first team writes x_out. Called by the whole workgroup.
fn pre_write(lane: u32, wr: bool, rows: u32, ins: u32, x: u32) {
  workgroupBarrier();
  if (wr) {
    for (var r = 0u; r < rows; r++) {
      let inv = pre_inv[r];
      for (var v = lane; v < ins / 4u; v += 32u) {
        let d = a4((pu(8u) + r * ins) / 4u + v);
        let y = (a4((x + r * ins) / 4u + v) + d * inv * pre_w4(v)) * pf(11u);
        let at = pu(9u) + r * ins + 4u * v;
        afset(at, y.x); afset(at + 1u, y.y); afset(at + 2u, y.z); afset(at + 3u, y.w);
      }
    }
  }
}
