// Merges the splits attention.wgsl left for each (row, head): out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M the largest m_s. A workgroup of 256 per (row, head) and 64 of its
// dimensions: a thread per split reads its m_s and l_s and finds its weight e^(m_s - M) (splits
// <= 64); then four groups of 64 threads, a thread per dimension, sum every fourth split each (so
// four times the reads are in flight) and the first group adds the four. P: as attention.wgsl
// (out, rows, heads, head_dim, splits, partials are read).
var<workgroup> wt: array<f32, 64>;     // the splits' m_s, then their weights e^(m_s - M)
var<workgroup> lsum: array<f32, 64>;   // e^(m_s - M) l_s
var<workgroup> part: array<f32, 256>;  // the groups' sums
@compute @workgroup_size(256)
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
  var ls = 0.0;
  if (lid.x < splits) {
    ms = A[base + lid.x * stride];
    ls = A[base + lid.x * stride + 1u];
  }
  if (lid.x < 64u) { wt[lid.x] = ms; }
  workgroupBarrier();
  var mx = -3.0e38;
  for (var s = 0u; s < splits; s++) { mx = max(mx, wt[s]); }
  workgroupBarrier();
  var w = 0.0;
  if (lid.x < splits) { w = exp(ms - mx); }
  if (lid.x < 64u) {
    wt[lid.x] = w;
    lsum[lid.x] = w * ls;
  }
  workgroupBarrier();
  let g = lid.x >> 6u;
  let i = chunk * 64u + (lid.x & 63u);
  var o = 0.0;
  if (i < d) {
    for (var s = g; s < splits; s += 4u) { o += wt[s] * A[base + s * stride + 2u + i]; }
  }
  part[lid.x] = o;
  workgroupBarrier();
  if (lid.x < 64u && i < d) {
    var l = 0.0;
    for (var s = 0u; s < splits; s++) { l += lsum[s]; }
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    A[pu(0u) + rh * d + i] = (part[lid.x] + part[lid.x + 64u] + part[lid.x + 128u] + part[lid.x + 192u]) * inv;
  }
}
