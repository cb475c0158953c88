// Merges the splits attention.wgsl left for each (row, head): out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M the largest m_s. A workgroup of 64 per (row, head) and 64 of its
// dimensions: a thread per split finds the weights e^(m_s - M) (splits <= 64), then a thread per
// dimension sums over the splits. P: as attention.wgsl (out, rows, heads, head_dim, splits,
// partials are read).
var<workgroup> wt: array<f32, 64>;    // the splits' m_s, then their weights e^(m_s - M)
var<workgroup> lsum: array<f32, 64>;  // e^(m_s - M) l_s
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  let d = pu(9u); let splits = pu(14u);
  let chunks = (d + 63u) / 64u;
  let rh = t / chunks; let chunk = t % chunks;
  if (rh >= pu(6u) * pu(7u)) { return; }
  let stride = d + 2u;
  let base = pu(15u) + rh * splits * stride;
  var ms = -3.0e38;
  if (lid.x < splits) { ms = A[base + lid.x * stride]; }
  wt[lid.x] = ms;
  workgroupBarrier();
  var mx = -3.0e38;
  for (var s = 0u; s < splits; s++) { mx = max(mx, wt[s]); }
  workgroupBarrier();
  var w = 0.0;
  var wl = 0.0;
  if (lid.x < splits) {
    w = exp(ms - mx);
    wl = w * A[base + lid.x * stride + 1u];
  }
  wt[lid.x] = w;
  lsum[lid.x] = wl;
  workgroupBarrier();
  var l = 0.0;
  for (var s = 0u; s < splits; s++) { l += lsum[s]; }
  var inv = 0.0;
  if (l > 0.0) { inv = 1.0 / l; }
  let i = chunk * 64u + lid.x;
  if (i < d) {
    var o = 0.0;
    for (var s = 0u; s < splits; s++) { o += wt[s] * A[base + s * stride + 2u + i]; }
    A[pu(0u) + rh * d + i] = o * inv;
  }
}
