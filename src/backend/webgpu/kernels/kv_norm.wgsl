// A layer's new keys' and values' norms (NormMatMulKvNorms): the first P.kv_groups workgroups of
// matvec.wgsl with KV_NORMS, ahead of the product's, or kv_norms.wgsl's. Workgroup t < kv_groups
// (of 256 threads) norms row t / (2 kv_heads) of kv head (t / 2) % kv_heads: of the keys
// (k = rope(rmsnorm(k) * W4)) for even t, of the values (v = rmsnorm(v)) for odd, in place.
//! uses weights, team
//! variant KV_NORMS: bool  the first P.kv_groups workgroups norm a layer's new keys and values
const KV_NORMED = 0xffffffffu;

// For the product kernels: workgroup g's place among the product's workgroups, or KV_NORMED once
// it has normed keys or values (with KV_NORMS, the first P.kv_groups do). Called by the whole
// workgroup.
fn kv_norm_first(g: u32, local: u32, lane: u32) -> u32 {
  if (!KV_NORMS) { return g; }
  if (g < P.kv_groups) {
    kv_norm(g, local, lane);
    return KV_NORMED;
  }
  return g - P.kv_groups;
}

var<workgroup> kv_teams: array<f32, 8>;
fn kv_norm(t: u32, local: u32, lane: u32) {
  let kvh = P.kv_heads; let half = P.kv_half; let d = 2u * half;
  let r = t / (2u * kvh); let values = (t & 1u) == 1u;
  let base = select(P.kv_k, P.kv_v, values) + (t / 2u) * d;  // rows of kv_heads heads: (r, head) is t / 2
  var s = 0.0;
  for (var i = local; i < d; i += 256u) { let e = af(base + i); s += e * e; }
  let sums = team_sums(local, lane, vec4<f32>(s, 0.0, 0.0, 0.0));
  if (lane == 0u) { kv_teams[local >> 5u] = sums.x; }
  workgroupBarrier();
  var ss = 0.0;
  for (var j = 0u; j < 8u; j++) { ss += kv_teams[j]; }
  let inv = 1.0 / sqrt(ss / f32(d) + P.eps);
  if (values) {
    for (var i = local; i < d; i += 256u) { afset(base + i, af(base + i) * inv); }
    return;
  }
  let pos = f32(table_position(P.kv_positions, r));
  for (var i = local; i < half; i += 256u) {
    let ra = reduce_angle(af(P.kv_freqs + i) * pos); let c = cos(ra); let sn = sin(ra);
    let a = af(base + i) * inv * welem(4u, i); let b = af(base + i + half) * inv * welem(4u, i + half);
    afset(base + i, a * c - b * sn);
    afset(base + i + half, b * c + a * sn);
  }
}
