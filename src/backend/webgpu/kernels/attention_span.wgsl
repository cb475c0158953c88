// Shared by attention.wgsl and attention_wide.wgsl (P as theirs): which (row, head) and which
// split of its visible positions workgroup t takes, and where a position's key or value starts.

// Where position p's key (or value) of kv head `kv` starts, in floats: the cache ring, or the new rows.
fn kv_at(p: i32, kv: u32, cache: u32, fresh: u32) -> u32 {
  let d = pu(9u); let kv_row = pu(8u) * d; let start = i32(pu(11u));
  if (p < start) { return cache + u32(p % i32(pu(13u))) * kv_row + kv * d; }
  return fresh + u32(p - start) * kv_row + kv * d;
}

// Workgroup t < rows * heads * splits: (row, head) pair rh, its kv head, and positions slo..shi
// of split t % splits. A query at position p sees p - window + 1 .. p (p - 1 last when past_only).
struct Span { rh: u32, kv: u32, slo: i32, shi: i32 }
fn attention_span(t: u32) -> Span {
  let heads = pu(7u); let kvh = pu(8u); let splits = pu(14u);
  let sp = t % splits; let rh = t / splits; let r = rh / heads; let h = rh % heads;
  let window = i32(pu(10u) & 0x7fffffffu); let start = i32(pu(11u)); let cached = i32(pu(12u));
  let pos = start + i32(r);
  var hi = pos;
  if ((pu(10u) >> 31u) != 0u) { hi = pos - 1; }
  var lo = max(start - cached, 0);
  if (window > 0) { lo = max(lo, hi - window + 1); }
  let per = (max(hi - lo + 1, 0) + i32(splits) - 1) / i32(splits);
  let slo = lo + i32(sp) * per;
  return Span(rh, h / (heads / kvh), slo, min(hi, slo + per - 1));
}
