// A layer's new keys' and values' norms in a dispatch of their own (NormMatMulKvNorms over many
// rows): kv_norm.wgsl's workgroups alone. W4: the keys' norm weight.
//! uses kv_norm
struct Params {
  eps: f32,           // the norms' epsilon
  kv_groups: u32,     // workgroups: rows x kv_heads x 2 (keys and values)
  kv_k: u32,          // the new keys: (rows, kv_heads, head_dim), normed and rotated in place
  kv_v: u32,          // the new values, normed in place
  kv_heads: u32,      // kv heads a row
  kv_half: u32,       // half the head dim
  kv_positions: u32,  // the rows' positions table (prelude's table_position)
  kv_freqs: u32,      // RoPE's inverse frequencies (half of them)
}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wid(wg, n);
  if (t >= P.kv_groups) { return; }
  kv_norm(t, lid.x, lid.x & 31u);
}
