// Elementwise ops over count floats, a thread each:
//   op 0: dst = a + b; 1: dst = a * s (scale); 2: dst = a (copy); 3: dst = s * tanh(a / s) (softcap; a NaN
//   stays NaN, as tanh keeps it, where clamp might make it finite);
//   4: dst = s (fill); 5: thread i rounds oct i of rows of b values at a to 8 bits (into dst):
//   each oct's values become round(x * (127 / m)) * (m / 127), m its largest magnitude, ties to
//   even (base/quant.h's RoundOctsToInt8); count is then the octs; 6: dst = a[k * count ..], k the
//   integer held as a float at b (0 below 0 or not a number: CopyRow)
struct Params {
  op: u32,
  count: u32,
  dst: u32,
  a: u32,
  b: u32,
  s: f32,
}
// An oct holding a NaN or an infinity keeps a NaN whatever m a max that ignores NaN gives: a NaN
// stays NaN rounded or left, an infinite m makes its values 0 x inf; a product it enters is NaN, as
// the reference's is.
fn round_oct(k: u32) {
  let per = (P.b + 7u) / 8u;
  let c0 = (k % per) * 8u;
  let at = (k / per) * P.b + c0;
  let n = min(8u, P.b - c0);
  var m = 0.0;
  for (var j = 0u; j < n; j++) { m = max(m, abs(af(P.a + at + j))); }
  if (!(m > 0.0)) { return; }
  let inv = 127.0 / m; let d = m / 127.0;
  for (var j = 0u; j < n; j++) { afset(P.dst + at + j, round(af(P.a + at + j) * inv) * d); }
}
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = gid(id, n);
  if (i >= P.count) { return; }
  let s = P.s;
  if (P.op == 4u) { afset(P.dst + i, s); return; }
  if (P.op == 5u) { round_oct(i); return; }
  if (P.op == 6u) { afset(P.dst + i, af(P.a + position_shift(P.b + 1u) * P.count + i)); return; }
  let a = af(P.a + i);
  switch P.op {
    case 0u: { afset(P.dst + i, a + af(P.b + i)); }
    case 1u: { afset(P.dst + i, a * s); }
    case 2u: { afset(P.dst + i, a); }
    default: { afset(P.dst + i, select(safe_tanh(a / s) * s, a, is_nan(a))); }
  }
}
