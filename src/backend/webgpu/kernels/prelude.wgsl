// Shared by every kernel: the activation arena (all float32 activations and caches, with small
// host inputs stored as u32 bit patterns), four read-only weight buffers and the parameters.
// A weight binding is an array of 32-bit words, or of 16-byte words for kernels that read four
// at a time (W1_TYPE, W2_TYPE, W3_TYPE: array<u32> or array<vec4<u32>>); wNword(k) is its word k
// either way.
// The wide kernels see the arena as vec4s (A_TYPE), and read and write floats through af/afset.
@group(0) @binding(0) var<storage, read_write> A: A_TYPE;
@group(0) @binding(1) var<storage, read> W1: W1_TYPE;
@group(0) @binding(2) var<storage, read> W2: W2_TYPE;
@group(0) @binding(3) var<storage, read> W3: W3_TYPE;
@group(0) @binding(4) var<uniform> P: array<vec4<u32>, 8>;
@group(0) @binding(5) var<storage, read> W4: array<u32>;

fn w1word(k: u32) -> u32 { W1_WORD }
fn w2word(k: u32) -> u32 { W2_WORD }
fn w3word(k: u32) -> u32 { W3_WORD }
fn w4word(k: u32) -> u32 { return W4[k]; }

fn pu(i: u32) -> u32 { return P[i / 4u][i % 4u]; }
fn pf(i: u32) -> f32 { return bitcast<f32>(pu(i)); }
fn au(i: u32) -> u32 { return bitcast<u32>(A_ELEMENT); }
fn af(i: u32) -> f32 { return A_ELEMENT; }
fn afset(i: u32, v: f32) { A_ELEMENT = v; }
// Floats 4i .. 4i + 3 of the arena.
fn a4(i: u32) -> vec4<f32> { A_VEC4 }
fn a4set(i: u32, v: vec4<f32>) { A4_SET }

// Element i of each weight binding in its stored type (specialised per dtype when compiled).
fn ld1(i: u32) -> f32 { W1_LOAD }
fn ld2(i: u32) -> f32 { W2_LOAD }
fn ld3(i: u32) -> f32 { W3_LOAD }
fn ld4(i: u32) -> f32 { W4_LOAD }
// Elements 2j and 2j + 1 of each weight binding, from one 32-bit word for 16-bit types.
fn lp1(j: u32) -> vec2<f32> { W1_PAIR }
fn lp2(j: u32) -> vec2<f32> { W2_PAIR }
fn lp3(j: u32) -> vec2<f32> { W3_PAIR }
fn lp4(j: u32) -> vec2<f32> { W4_PAIR }
// The weights a kernel reads. A tensor larger than one binding may be split in up to three
// chunks of pu(15u) elements bound as W1, W2, W3, read through w1 (then w2 and w3 are unused).
fn w1(i: u32) -> f32 { W1_READ }
fn w1p(j: u32) -> vec2<f32> { W1P_READ }
fn w2(i: u32) -> f32 { return ld2(i); }
fn w3(i: u32) -> f32 { return ld3(i); }

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

// tanh that stays finite for large inputs on every driver.
fn safe_tanh(x: f32) -> f32 { return tanh(clamp(x, -15.0, 15.0)); }
fn gelu_tanh(x: f32) -> f32 { return 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

fn gid(id: vec3<u32>, n: vec3<u32>) -> u32 { return id.x + id.y * n.x * 64u; }
