// Rows of new keys and values into the cache rings of several layers (only the last `capacity`
// land). A table in the host region holds six words a layer: k_cache, v_cache, k_new, v_new,
// row_size, capacity. A thread per (layer, row, column of the widest row).
struct Params {
  table: u32,   // the layers' entries (u32)
  layers: u32,
  rows: u32,    // new rows, at positions start ..
  start: u32,
  widest: u32,  // the widest row_size
  shift: u32,   // the position shift's place (prelude's position_shift)
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = gid(id, n);
  let rows = P.rows; let widest = P.widest;
  let per_layer = rows * widest;
  let layer = t / per_layer;
  if (layer >= P.layers) { return; }
  let e = P.table + 6u * layer;
  let rs = au(e + 4u); let cap = au(e + 5u);
  let r = (t % per_layer) / widest; let c = t % widest;
  if (c >= rs || (rows > cap && r < rows - cap)) { return; }
  let slot = (P.start + position_shift(P.shift) + r) % cap;
  afset(au(e) + slot * rs + c, af(au(e + 2u) + r * rs + c));
  afset(au(e + 1u) + slot * rs + c, af(au(e + 3u) + r * rs + c));
}
