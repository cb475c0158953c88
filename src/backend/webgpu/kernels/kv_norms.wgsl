// A layer's new keys' and values' norms in a dispatch of their own (NormMatMulKvNorms over many
// rows): kv_norm.wgsl's workgroups alone, P as there.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let t = wg.x + wg.y * n.x;
  if (t >= pu(12u)) { return; }
  kv_norm(t, lid.x, lid.x & 31u);
}
