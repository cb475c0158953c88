// Merges the splits attention.wgsl left for each (row, head): out = sum_s e^(m_s - M) acc_s /
// sum_s e^(m_s - M) l_s, M the largest m_s. P: as attention.wgsl (out, rows, heads, head_dim,
// splits, partials are read).
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let rh = wg.x + wg.y * n.x;
  let d = pu(9u); let splits = pu(14u);
  if (rh >= pu(6u) * pu(7u)) { return; }
  let base = pu(15u) + rh * splits * (d + 2u);
  var mx = -3.0e38;
  for (var s = 0u; s < splits; s++) { mx = max(mx, A[base + s * (d + 2u)]); }
  var l = 0.0;
  for (var s = 0u; s < splits; s++) { l += exp(A[base + s * (d + 2u)] - mx) * A[base + s * (d + 2u) + 1u]; }
  var inv = 0.0;
  if (l > 0.0) { inv = 1.0 / l; }
  for (var i = lid.x; i < d; i += 256u) {
    var o = 0.0;
    for (var s = 0u; s < splits; s++) {
      let b = base + s * (d + 2u);
      o += exp(A[b] - mx) * A[b + 2u + i];
    }
    A[pu(0u) + rh * d + i] = o * inv;
  }
}
