// The start of every kernel (shader_library.cc puts it first): the bindings and the helpers all
// kernels share. Each kernel file declares its own `struct Params`.
//
// Binding 0, the arena: every float32 activation and cache, and small host inputs (ids,
// positions, frequencies) stored as u32 bit patterns, seen as vec4s. Single floats are read and
// written through af and afset; offsets are in floats.
@group(0) @binding(0) var<storage, read_write> A: array<vec4<f32>>;
// Binding 1: this dispatch's parameters.
@group(0) @binding(1) var<uniform> P: Params;
// Bindings 2 to 5: up to four weights in their stored bytes, as 16-byte words (weights.wgsl reads
// them in their stored types). A kernel's file says what each holds.
@group(0) @binding(2) var<storage, read> W1: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> W2: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> W3: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> W4: array<vec4<u32>>;

fn af(i: u32) -> f32 { return A[i >> 2u][i & 3u]; }
fn au(i: u32) -> u32 { return bitcast<u32>(A[i >> 2u][i & 3u]); }
fn afset(i: u32, v: f32) { A[i >> 2u][i & 3u] = v; }

// The linear index of a thread of a 64-wide workgroup in a dispatch of n workgroups (x, then y).
fn gid(id: vec3<u32>, n: vec3<u32>) -> u32 { return id.x + id.y * n.x * 64u; }
// The linear index of a workgroup.
fn wid(wg: vec3<u32>, n: vec3<u32>) -> u32 { return wg.x + wg.y * n.x; }

// Positions held on the device (Backend::SetPositionShift): `place` is 0 for none, else 1 + the
// arena float holding the shift, an integer as a float (0 below 0 or not a number).
fn position_shift(place: u32) -> u32 {
  if (place == 0u) { return 0u; }
  let v = af(place - 1u);
  return select(0u, u32(v), v > 0.0);
}
// Row r's position from a positions table (RopeTables): the shift's place, then the rows'
// positions as u32.
fn table_position(table: u32, r: u32) -> u32 { return au(table + 1u + r) + position_shift(au(table)); }

// An angle reduced to [-pi, pi] (x - 2 pi k, 2 pi in three parts): GPUs' sin and cos may be
// accurate only near 0, and RoPE's angles reach thousands of radians.
fn reduce_angle(x: f32) -> f32 {
  let k = round(x * 0.15915494);
  return fma(-k, 1.0253132e-11, fma(-k, 0.0019353072, fma(-k, 6.28125, x)));
}
fn reduce_angle4(x: vec4<f32>) -> vec4<f32> {
  let k = round(x * 0.15915494);
  return fma(-k, vec4<f32>(1.0253132e-11), fma(-k, vec4<f32>(0.0019353072), fma(-k, vec4<f32>(6.28125), x)));
}

// Whether x is finite, or a NaN, read from its bits: comparisons with NaN, min, max and clamp
// may be compiled as though no NaN existed.
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

// tanh that stays finite for large inputs on every driver.
fn safe_tanh(x: f32) -> f32 { return tanh(clamp(x, -15.0, 15.0)); }
fn gelu_tanh(x: f32) -> f32 { return 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
