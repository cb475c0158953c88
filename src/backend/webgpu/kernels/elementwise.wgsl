// Elementwise ops over count floats, a thread each:
//   op 0: dst = a + b; 1: dst = a * s (scale); 2: dst = a (copy); 3: dst = s * tanh(a / s) (softcap; a NaN
//   stays NaN, as tanh keeps it, where clamp might make it finite);
//   4: dst = s (fill)
struct Params {
  op: u32,
  count: u32,
  dst: u32,
  a: u32,
  b: u32,
  s: f32,
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  if (i >= P.count) { return; }
  let s = P.s;
  if (P.op == 4u) { afset(P.dst + i, s); return; }
  let a = af(P.a + i);
  switch P.op {
    case 0u: { afset(P.dst + i, a + af(P.b + i)); }
    case 1u: { afset(P.dst + i, a * s); }
    case 2u: { afset(P.dst + i, a); }
    default: { afset(P.dst + i, select(safe_tanh(a / s) * s, a, is_nan(a))); }
  }
}
