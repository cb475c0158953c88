// Row norms and residual joins, one workgroup of 256 threads a row:
//   mode 0: dst[r, :] = src[r, :] * (mean(src[r]^2) + eps)^-0.5 * W1   (W1 when weighted)
//   mode 1: dst[r, :] = (dst[r, :] + that) * scale                      (a block's output joining the stream)
//   mode 2: dst[r, :] = (residual[r, :] + that) * scale
//   mode 3: mode 2, then the next block's input norm of the joined row:
//           normed[r, :] = dst[r, :] * (mean(dst[r]^2) + eps2)^-0.5 * W2 (W2 when weighted2)
//! uses weights
struct Params {
  dst: u32,        // (rows, dim)
  src: u32,        // (rows, dim)
  rows: u32,
  dim: u32,
  eps: f32,
  weighted: u32,   // 1: W1 holds the norm's weight
  mode: u32,       // 0 to 3, above
  scale: f32,      // modes 1 to 3: the joined row's scale
  residual: u32,   // modes 2, 3: (rows, dim)
  normed: u32,     // mode 3: (rows, dim)
  eps2: f32,       // mode 3
  weighted2: u32,  // mode 3: 1: W2 holds the second norm's weight
}
var<workgroup> partial: array<f32, 256>;

// The sum of every thread's s, for all of them.
fn row_sum(lid: u32, s: f32) -> f32 {
  partial[lid] = s;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k >>= 1u) {
    if (lid < k) { partial[lid] += partial[lid + k]; }
    workgroupBarrier();
  }
  let total = partial[0];
  workgroupBarrier();  // every thread has read it before partial is written again
  return total;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wid(wg, n);
  if (r >= P.rows) { return; }
  let dim = P.dim;
  let src = P.src + r * dim; let dst = P.dst + r * dim;
  var s = 0.0;
  for (var i = lid.x; i < dim; i += 256u) { let v = af(src + i); s += v * v; }
  let inv = 1.0 / sqrt(row_sum(lid.x, s) / f32(dim) + P.eps);
  let res = select(dst, P.residual + r * dim, P.mode >= 2u);
  var s2 = 0.0;
  for (var i = lid.x; i < dim; i += 256u) {
    var w = 1.0;
    if (P.weighted != 0u) { w = welem(1u, i); }
    let y = af(src + i) * inv * w;
    if (P.mode != 0u) {
      let x = (af(res + i) + y) * P.scale;
      afset(dst + i, x);
      s2 += x * x;
    } else {
      afset(dst + i, y);
    }
  }
  if (P.mode != 3u) { return; }
  // Each thread reads back only the elements it wrote.
  let inv2 = 1.0 / sqrt(row_sum(lid.x, s2) / f32(dim) + P.eps2);
  let normed = P.normed + r * dim;
  for (var i = lid.x; i < dim; i += 256u) {
    var w = 1.0;
    if (P.weighted2 != 0u) { w = welem(2u, i); }
    afset(normed + i, af(dst + i) * inv2 * w);
  }
}
