// Row norms and residual joins, one workgroup of 256 threads a row:
//   mode 0: dst[r, :] = src[r, :] * (mean(src[r]^2) + eps)^-0.5 * W1   (W1 when weighted)
//   mode 1: dst[r, :] = (dst[r, :] + that) * scale                      (a block's output joining the stream)
//   mode 2: dst[r, :] = (residual[r, :] + that) * scale
//   mode 3: mode 2, then the next block's input norm of the joined row:
//           normed[r, :] = dst[r, :] * (mean(dst[r]^2) + eps2)^-0.5 * W2 (W2 when weighted2)
//! uses weights, team
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
var<workgroup> partial: array<f32, 8>;

// The sum of every thread's s, for all of them: each team's (team.wgsl: subgroup adds where the
// device has them), then the eight teams' in one exchange, added in the same order by every
// thread.
fn row_sum(lid: u32, s: f32) -> f32 {
  let t = team_sums(lid, lid & 31u, vec4<f32>(s, 0.0, 0.0, 0.0));
  if ((lid & 31u) == 0u) { partial[lid >> 5u] = t.x; }
  workgroupBarrier();
  var total = 0.0;
  for (var k = 0u; k < 8u; k++) { total += partial[k]; }
  workgroupBarrier();  // every thread has read them before partial is written again
  return total;
}

// Elements of a row a thread keeps in registers (rows of up to 2,048): its loads of the row, of
// the residual and of the norm's weights all go out before the row's sum waits on them, and the
// joined values stay for the next norm. Longer rows read the rest again.
const KEEP = 8u;

// The norm's weight at element i (1 where unweighted) from binding b.
fn norm_w(b: u32, weighted: u32, i: u32) -> f32 {
  if (weighted != 0u) { return welem(b, i); }
  return 1.0;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let r = wid(wg, n);
  if (r >= P.rows) { return; }
  let dim = P.dim; let t = lid.x; let join = P.mode != 0u;
  let src = P.src + r * dim; let dst = P.dst + r * dim;
  let res = select(dst, P.residual + r * dim, P.mode >= 2u);
  var xs: array<f32, KEEP>;
  var rs: array<f32, KEEP>;
  var ws: array<f32, KEEP>;
  var s = 0.0;
  for (var k = 0u; k < KEEP; k++) {
    let i = t + 256u * k;
    if (i < dim) {
      xs[k] = af(src + i);
      if (join) { rs[k] = af(res + i); }
      ws[k] = norm_w(1u, P.weighted, i);
      s += xs[k] * xs[k];
    }
  }
  for (var i = t + 256u * KEEP; i < dim; i += 256u) { let v = af(src + i); s += v * v; }
  let inv = 1.0 / sqrt(row_sum(t, s) / f32(dim) + P.eps);
  var s2 = 0.0;
  for (var k = 0u; k < KEEP; k++) {
    let i = t + 256u * k;
    if (i < dim) {
      let y = xs[k] * inv * ws[k];
      if (join) {
        xs[k] = (rs[k] + y) * P.scale;
        afset(dst + i, xs[k]);
        s2 += xs[k] * xs[k];
      } else {
        afset(dst + i, y);
      }
    }
  }
  for (var i = t + 256u * KEEP; i < dim; i += 256u) {
    let y = af(src + i) * inv * norm_w(1u, P.weighted, i);
    if (join) {
      let x = (af(res + i) + y) * P.scale;
      afset(dst + i, x);
      s2 += x * x;
    } else {
      afset(dst + i, y);
    }
  }
  if (P.mode != 3u) { return; }
  // The joined row's norm: from the kept values, past them from what this thread wrote.
  let inv2 = 1.0 / sqrt(row_sum(t, s2) / f32(dim) + P.eps2);
  let normed = P.normed + r * dim;
  for (var k = 0u; k < KEEP; k++) {
    let i = t + 256u * k;
    if (i < dim) { afset(normed + i, xs[k] * inv2 * norm_w(2u, P.weighted2, i)); }
  }
  for (var i = t + 256u * KEEP; i < dim; i += 256u) {
    afset(normed + i, af(dst + i) * inv2 * norm_w(2u, P.weighted2, i));
  }
}
