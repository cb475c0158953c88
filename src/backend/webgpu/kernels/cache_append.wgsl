// Rows of new K/V into the cache rings of several layers (only the last `capacity` land).
// P: table, layers, rows, start, widest row. The table (in the host region) holds six words a
// layer: k_cache, v_cache, k_new, v_new, row_size, capacity. A thread per (layer, row, column of
// the widest row).
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = pu(2u); let widest = pu(4u);
  let per_layer = rows * widest;
  let layer = t / per_layer;
  if (layer >= pu(1u)) { return; }
  let e = pu(0u) + 6u * layer;
  let rs = au(e + 4u); let cap = au(e + 5u);
  let r = (t % per_layer) / widest; let c = t % widest;
  if (c >= rs || (rows > cap && r < rows - cap)) { return; }
  let slot = (pu(3u) + r) % cap;
  A[au(e) + slot * rs + c] = A[au(e + 2u) + r * rs + c];
  A[au(e + 1u) + slot * rs + c] = A[au(e + 3u) + r * rs + c];
}
