// Elementwise ops. P: op, count, out, a, b, s
//   op 0: out = a + b; 1: out = a * s (scale); 2: out = a (copy); 3: out = s * tanh(a / s) (softcap);
//   4: out = s (fill)
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  if (i >= pu(1u)) { return; }
  let s = pf(5u);
  if (pu(0u) == 4u) { A[pu(2u) + i] = s; return; }
  let a = A[pu(3u) + i];
  switch pu(0u) {
    case 0u: { A[pu(2u) + i] = a + A[pu(4u) + i]; }
    case 1u: { A[pu(2u) + i] = a * s; }
    case 2u: { A[pu(2u) + i] = a; }
    default: { A[pu(2u) + i] = safe_tanh(a / s) * s; }
  }
}
