// Merges the splits attention.wgsl left for each (row, head): out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M the largest m_s. A workgroup of 256 a (row, head) and 64 of its
// dimensions: a thread a split reads its m_s and l_s and finds its weight e^(m_s - M) (splits
// <= 64); four groups of 64 threads, a thread a dimension, sum every fourth split each (so four
// times the reads are in flight; the first EARLY of them read with the maxima) and the first
// group adds the four.
//! uses attention_span
var<workgroup> wt: array<f32, 64>;     // the splits' m_s, then their weights e^(m_s - M)
var<workgroup> lsum: array<f32, 64>;   // e^(m_s - M) l_s
var<workgroup> part: array<f32, 256>;  // the groups' sums
const EARLY = 4u;                      // splits a group's threads load before the weights are known
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wid(wg, n);
  let d = P.head_dim; let splits = P.splits;
  let chunks = (d + 63u) / 64u;
  let rh = t / chunks; let chunk = t % chunks;
  if (rh >= P.rows * P.heads) { return; }
  let stride = d + 2u;
  let base = P.partials + rh * splits * stride;
  // The thread's dimension of its group's first EARLY splits (g, g + 4, ...), loaded with the
  // maxima and sums below (neither depends on the other).
  let g = lid.x >> 6u;
  let i = chunk * 64u + (lid.x & 63u);
  var early: array<f32, EARLY>;
  for (var j = 0u; j < EARLY; j++) {
    early[j] = af(base + min(g + 4u * j, splits - 1u) * stride + 2u + min(i, d - 1u));
  }
  var ms = -3.0e38;
  var ls = 0.0;
  if (lid.x < splits) {
    ms = af(base + lid.x * stride);
    ls = af(base + lid.x * stride + 1u);
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
  var o = 0.0;
  if (i < d) {
    for (var j = 0u; j < EARLY; j++) {
      if (g + 4u * j < splits) { o += wt[g + 4u * j] * early[j]; }
    }
    for (var s = g + 4u * EARLY; s < splits; s += 4u) { o += wt[s] * af(base + s * stride + 2u + i); }
  }
  part[lid.x] = o;
  workgroupBarrier();
  if (lid.x < 64u && i < d) {
    var l = 0.0;
    for (var s = 0u; s < splits; s++) { l += lsum[s]; }
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    afset(P.dst + rh * d + i, (part[lid.x] + part[lid.x + 64u] + part[lid.x + 128u] + part[lid.x + 192u]) * inv);
  }
}
