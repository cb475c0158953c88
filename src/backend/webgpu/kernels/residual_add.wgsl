// A pending residual join made by a matrix-vector kernel as it reads its input (variant PRE):
// in[r, :] = (x_in[r, :] + rmsnorm(delta[r, :]) * norm) * scale, every workgroup making it for
// itself and the first team of workgroup 0 (which reads every element) writing it to x_out.
// x_in is the kernel's input P1; P8: delta, P9: x_out, P10: eps, P11: scale; the norm is the weight binding PRE_LP reads.
// Offsets are multiples of 4 and the arena is seen as vec4s.
const PRE = PREv;
var<workgroup> pre_partial: array<f32, 256>;
var<private> pre_inv: array<f32, 8>;

// pre_inv[r] = 1 / rms(delta[r, :]) for r < rows. Called by the whole workgroup.
fn pre_begin(tid: u32, rows: u32, dim: u32) {
  for (var r = 0u; r < rows; r++) {
    let d = (pu(8u) + r * dim) / 4u;
    var s = 0.0;
    for (var i = tid; i < dim / 4u; i += 256u) { let v = A[d + i]; s += dot(v, v); }
    pre_partial[tid] = s;
    workgroupBarrier();
    for (var k = 128u; k > 0u; k >>= 1u) {
      if (tid < k) { pre_partial[tid] += pre_partial[tid + k]; }
      workgroupBarrier();
    }
    pre_inv[r] = 1.0 / sqrt(pre_partial[0] / f32(dim) + pf(10u));
    workgroupBarrier();
  }
}

// The joined input's vec4 v (elements 4v .. 4v + 3) of row r, from x_in's vec4 x; written to
// x_out when `write`.
fn pre_join(x: vec4<f32>, r: u32, v: u32, dim: u32, write: bool) -> vec4<f32> {
  let d = A[(pu(8u) + r * dim) / 4u + v];
  let w = vec4<f32>(PRE_LP(2u * v), PRE_LP(2u * v + 1u));
  let y = (x + d * pre_inv[r] * w) * pf(11u);
  if (write) { A[(pu(9u) + r * dim) / 4u + v] = y; }
  return y;
}
