// A pending residual join made by matvec.wgsl in workgroup memory before its product (STAGE > 0,
// rows of whole octs): every workgroup reads each row's residual x_in (P.x), its block output
// delta (P.pre_delta) and the join's norm W4 once, and keeps the joined rows
// x[r, :] = (x_in[r, :] + rmsnorm(delta[r, :]) * W4) * P.pre_scale in `stage`, from which the
// product reads its input; workgroup 0 also writes them to P.pre_out. The join is then paid once a
// workgroup instead of once per weight word and row, with no dispatch of its own (where a product
// stages: JoinPlaceFor in dispatch_policy.h). STAGE is the stage's size in floats, at least
// ROWS * P.ins.
//! uses weights, team
//! variant STAGE: u32  floats of workgroup memory for the rows' joined input; 0: no stage
var<workgroup> stage: array<vec4<f32>, max(STAGE / 4u, 1u)>;
var<workgroup> stage_teams: array<vec4<f32>, 16>;  // each team's sums of squares, rows 0-3 and 4-7

const STAGE_HALVES = select(1u, 2u, ROWS > 4u);  // groups of four rows

// The sums of squares of up to eight rows (ss, each thread's part) over the workgroup, for every
// thread. Called by the whole workgroup.
fn stage_sums(local: u32, lane: u32, ss: array<f32, 8>) -> array<f32, 8> {
  let team = local >> 5u;
  for (var h = 0u; h < STAGE_HALVES; h++) {
    let t = team_sums(local, lane, vec4<f32>(ss[4u * h], ss[4u * h + 1u], ss[4u * h + 2u], ss[4u * h + 3u]));
    if (lane == 0u) { stage_teams[2u * team + h] = t; }
  }
  workgroupBarrier();
  var sums: array<f32, 8>;
  for (var t = 0u; t < 8u; t++) {
    for (var h = 0u; h < STAGE_HALVES; h++) {
      let v = stage_teams[2u * t + h];
      for (var i = 0u; i < 4u; i++) { sums[4u * h + i] += v[i]; }
    }
  }
  return sums;
}

// Fills the stage (writing the joined rows to P.pre_out too when `writes`). Called by the whole
// workgroup; the stage is ready for every thread when it returns.
fn stage_join(local: u32, lane: u32, writes: bool) {
  let rows = P.rows; let ins = P.ins; let octs = ins / 8u;
  // Each row's delta into the stage, and its squares.
  var dd: array<f32, 8>;
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      for (var q = local; q < octs; q += 256u) {
        let d = (P.pre_delta + r * ins) / 4u + 2u * q;
        let a = A[d]; let b = A[d + 1u];
        stage[r * 2u * octs + 2u * q] = a;
        stage[r * 2u * octs + 2u * q + 1u] = b;
        dd[r] += dot(a, a) + dot(b, b);
      }
    }
  }
  let sums = stage_sums(local, lane, dd);
  // Each thread turns the octs it staged into the joined input.
  let sc = P.pre_scale;
  for (var r = 0u; r < ROWS; r++) {
    if (r < rows) {
      let inv = 1.0 / sqrt(sums[r] / f32(ins) + P.pre_eps);
      for (var q = local; q < octs; q += 256u) {
        let w = woct(4u, 8u * q);
        let s = r * 2u * octs + 2u * q;
        let xi = (P.x + r * ins) / 4u + 2u * q;
        let a = (A[xi] + stage[s] * inv * w[0]) * sc;
        let b = (A[xi + 1u] + stage[s + 1u] * inv * w[1]) * sc;
        stage[s] = a;
        stage[s + 1u] = b;
        if (writes) {
          let o = (P.pre_out + r * ins) / 4u + 2u * q;
          A[o] = a;
          A[o + 1u] = b;
        }
      }
    }
  }
  workgroupBarrier();
}

// Elements 8q .. 8q + 7 of row r's joined input.
fn staged8(r: u32, q: u32, ins: u32) -> mat2x4<f32> {
  let s = r * (ins / 4u) + 2u * q;
  return mat2x4<f32>(stage[s], stage[s + 1u]);
}
