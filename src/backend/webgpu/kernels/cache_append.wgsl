// Rows of new K/V into the cache ring (only the last `capacity` land).
// P: k_cache, v_cache, k_new, v_new, rows, row_size, start, capacity
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = pu(4u); let rs = pu(5u); let start = pu(6u); let cap = pu(7u);
  if (t >= rows * rs) { return; }
  let r = t / rs; let c = t % rs;
  if (rows > cap && r < rows - cap) { return; }
  let slot = (start + r) % cap;
  A[pu(0u) + slot * rs + c] = A[pu(2u) + t];
  A[pu(1u) + slot * rs + c] = A[pu(3u) + t];
}
