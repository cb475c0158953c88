// The attention kernels' parameters, and what they share: which (row, head) and which split of
// its visible positions a workgroup takes, and where a position's key or value starts. A query
// at position p sees p - window + 1 .. p (all when window is 0; p - 1 last when past_only):
// cached positions in the cache ring (slot = position % capacity) and the new rows' own.
struct Params {
  dst: u32,       // (rows, heads, head_dim)
  q: u32,         // (rows, heads, head_dim)
  k_new: u32,     // the new rows' keys: (rows, kv_heads, head_dim)
  v_new: u32,     // and values
  k_cache: u32,   // (capacity, kv_heads, head_dim)
  v_cache: u32,
  rows: u32,
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  window: u32,    // the sliding window (0: none) | past_only << 31
  start: u32,     // the first new row's position
  cached: u32,    // positions start - cached .. start - 1 are in the cache
  capacity: u32,  // the cache ring's rows
  splits: u32,    // splits of each (row, head)'s positions (attention_combine.wgsl merges them)
  partials: u32,  // the splits' (max, sum, output): (rows, heads, splits, head_dim + 2)
  freqs: u32,     // attention_wide with NORMED: RoPE's inverse frequencies
  eps: f32,       // attention_wide with NORMED: the query norm's epsilon
  shift: u32,     // the position shift's place (prelude's position_shift), added to start and cached
}

// The first new row's position and the cached positions before it (at most capacity), with the
// position shift: one value for the whole workgroup (so that loops over positions that hold
// barriers stay uniform), which every thread of it takes first (`local`: its index).
struct Place { start: i32, cached: i32 }
var<workgroup> shift_shared: u32;
fn workgroup_place(local: u32) -> Place {
  if (local == 0u) { shift_shared = position_shift(P.shift); }
  let shift = workgroupUniformLoad(&shift_shared);
  return Place(i32(P.start + shift), i32(min(P.cached + shift, P.capacity)));
}

// Where position p's key (or value) of kv head `kv` starts, in floats: the cache ring, or the new rows.
fn kv_at(p: i32, start: i32, kv: u32, cache: u32, fresh: u32) -> u32 {
  let d = P.head_dim; let kv_row = P.kv_heads * d;
  if (p < start) { return cache + u32(p % i32(P.capacity)) * kv_row + kv * d; }
  return fresh + u32(p - start) * kv_row + kv * d;
}

// kv_at for position p0 + c of a tile that starts at p0 >= 0 (c >= 0), slot0 = kv_tile_slot(p0):
// the tile's ring slot found once (a division), each position's by an add and a compare. A tile
// starts at or after start - cached, and cached <= capacity (Attend refuses more), so a cached
// position has c < capacity and slot0 + c < 2 capacity.
fn kv_tile_slot(p0: i32) -> u32 { return u32(p0) % P.capacity; }
fn kv_at_tile(p0: i32, slot0: u32, c: i32, start: i32, kv: u32, cache: u32, fresh: u32) -> u32 {
  let d = P.head_dim; let kv_row = P.kv_heads * d; let p = p0 + c;
  if (p >= start) { return fresh + u32(p - start) * kv_row + kv * d; }
  let slot = slot0 + u32(c);
  return cache + select(slot, slot - P.capacity, slot >= P.capacity) * kv_row + kv * d;
}

// The positions the query of row r sees: lo .. hi (empty when hi < lo).
fn row_span(r: u32, pl: Place) -> vec2<i32> {
  let window = i32(P.window & 0x7fffffffu); let start = pl.start;
  var hi = start + i32(r);
  if ((P.window >> 31u) != 0u) { hi -= 1; }
  var lo = max(start - pl.cached, 0);
  if (window > 0) { lo = max(lo, hi - window + 1); }
  return vec2<i32>(lo, hi);
}

// Workgroup t < rows * heads * splits: (row, head) pair rh, its kv head, and positions slo..shi
// of split t % splits.
struct Span { rh: u32, kv: u32, slo: i32, shi: i32 }
fn attention_span(t: u32, pl: Place) -> Span {
  let heads = P.heads; let splits = P.splits;
  let sp = t % splits; let rh = t / splits; let r = rh / heads; let h = rh % heads;
  let span = row_span(r, pl);
  let lo = span.x; let hi = span.y;
  let per = (max(hi - lo + 1, 0) + i32(splits) - 1) / i32(splits);
  let slo = lo + i32(sp) * per;
  return Span(rh, h / (heads / P.kv_heads), slo, min(hi, slo + per - 1));
}
