// A pending residual join made by matvec.wgsl as it reads its input (PRE):
// x[r, :] = (x_in[r, :] + rmsnorm(delta[r, :]) * norm) * scale. With t = delta * norm and
// inv = rms(delta)^-1, x = scale * (x_in + inv * t): the kernel sums its products with x_in and
// with t apart (and x_in . t, t . t for the input's own norm) in its one pass over the weights,
// and combines them once inv is known, so no workgroup waits for the delta's norm first. The
// first team of workgroup 0 then writes the joined input to P.pre_out. x_in is the kernel's
// input P.x; the norm is W4. Offsets and row lengths are multiples of 4.
//! uses weights
//! variant PRE: bool  a pending residual join made on the way in
var<private> pre_sums: array<vec4<f32>, 8>;  // per row: (first product . t, second product . t, x_in . t, t . t)
var<private> pre_dd: array<f32, 8>;          // per row: delta . delta
var<workgroup> pre_inv: array<f32, 8>;       // per row: inv, for the writing team

// Row r's delta, elements 8q .. 8q + 7; its squares summed into pre_dd.
fn pre_delta(r: u32, q: u32, ins: u32) -> mat2x4<f32> {
  let d = (P.pre_delta + r * ins) / 4u + 2u * q;
  let da = A[d]; let db = A[d + 1u];
  pre_dd[r] += dot(da, da) + dot(db, db);
  return mat2x4<f32>(da, db);
}

// A row's products with the joined input and its sum of squares, from the sums apart:
// x = (the products with x_in, x_in . x_in), p = pre_sums[r] and dd = pre_dd[r], summed over the
// feature's threads. The first team keeps the row's inv for pre_write.
fn pre_combine(x: vec3<f32>, p: vec4<f32>, dd: f32, r: u32, ins: u32, first: bool) -> vec3<f32> {
  let inv = 1.0 / sqrt(dd / f32(ins) + P.pre_eps);
  if (first) { pre_inv[r] = inv; }
  let sc = P.pre_scale;
  return vec3<f32>(sc * (x.x + inv * p.x), sc * (x.y + inv * p.y), sc * sc * (x.z + 2.0 * inv * p.z + inv * inv * p.w));
}

// After every row's inv is in pre_inv: the first team (wr) writes the joined rows. Called by the
// whole workgroup.
fn pre_write(lane: u32, wr: bool, rows: u32, ins: u32, x: u32) {
  workgroupBarrier();
  if (wr) {
    for (var r = 0u; r < rows; r++) {
      let inv = pre_inv[r];
      for (var q = lane; q < ins / 8u; q += 32u) {
        let d = (P.pre_delta + r * ins) / 4u + 2u * q;
        let xi = (x + r * ins) / 4u + 2u * q;
        let o = (P.pre_out + r * ins) / 4u + 2u * q;
        let w = woct(4u, 8u * q);
        A[o] = (A[xi] + A[d] * inv * w[0]) * P.pre_scale;
        A[o + 1u] = (A[xi + 1u] + A[d + 1u] * inv * w[1]) * P.pre_scale;
      }
    }
  }
}
