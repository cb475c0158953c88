// The MoE experts in two passes, each a product of chosen weight rows with a row of activations:
// UP: h[r, j, c] = gelu_tanh(gate_e[c] . x[r]) * (up_e[c] . x[r]), e = indices[r, j]; W1:
// gate_up (experts, 2 * width, hidden), the gate's rows first. DOWN (UP false): out[r, o] =
// sum_j weights[r, j] * (down_e[o] . h[r, j]); W1: down (experts, hidden, width). Eight teams of
// 32 threads a workgroup, a team an output: its lanes take the octs (eight weights) of the
// output's weight rows in turn, so each weight is read once, and the team's sums (team.wgsl)
// give the products, which its first lane finishes and writes.
//! uses weights, team
//! variant UP: bool  the gate and up pass (else the down pass)
//! variant VEC: bool  rows of whole octs and inputs at multiples of 4: 16-byte reads
struct Params {
  dst: u32,      // UP: h (rows, top_k, width); else out (rows, hidden)
  x: u32,        // UP: x (rows, hidden); else h
  indices: u32,  // (rows, top_k), the experts as floats
  weights: u32,  // (rows, top_k)
  rows: u32,
  hidden: u32,
  top_k: u32,
  width: u32,    // moe_intermediate_size
}
const MT = W1_DTYPE;
const STREAMS = select(1u, 2u, UP);  // weight rows an output reads for each expert

// acc[s] += the words w[s] of oct q of weight row s (at element base[s]) . the input's oct q.
fn oct_dots(acc: ptr<function, vec2<f32>>, w: array<OctWords, STREAMS>, base: array<u32, STREAMS>, x: u32, q: u32) {
  let x0 = A[x / 4u + 2u * q]; let x1 = A[x / 4u + 2u * q + 1u];
  for (var s = 0u; s < STREAMS; s++) {
    let o = oct_of(MT, w[s], base[s] + 8u * q);
    (*acc)[s] += (dot(o.lo, x0) + dot(o.hi, x1)) * o.scale;
  }
}

// acc[s] += this lane's share of (weight row at element base[s]) . (input row at x), ins long.
// With VEC, a lane loads two octs of each row before it uses either (its loads in flight together).
fn row_dots(acc: ptr<function, vec2<f32>>, base: array<u32, STREAMS>, x: u32, ins: u32, lane: u32) {
  if (VEC) {
    let octs = ins / 8u;
    var q = lane;
    for (; q + 32u < octs; q += 64u) {
      var w0: array<OctWords, STREAMS>; var w1: array<OctWords, STREAMS>;
      for (var s = 0u; s < STREAMS; s++) {
        w0[s] = oct_words(1u, MT, base[s] + 8u * q);
        w1[s] = oct_words(1u, MT, base[s] + 8u * (q + 32u));
      }
      oct_dots(acc, w0, base, x, q);
      oct_dots(acc, w1, base, x, q + 32u);
    }
    if (q < octs) {
      var w: array<OctWords, STREAMS>;
      for (var s = 0u; s < STREAMS; s++) { w[s] = oct_words(1u, MT, base[s] + 8u * q); }
      oct_dots(acc, w, base, x, q);
    }
    return;
  }
  for (var i = lane; i < ins; i += 32u) {
    let xi = af(x + i);
    for (var s = 0u; s < STREAMS; s++) { (*acc)[s] += welem_t(1u, MT, base[s] + i) * xi; }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(num_workgroups) n: vec3<u32>) {
  let team = lid.x >> 5u; let lane = lid.x & 31u;
  let k = P.top_k; let width = P.width; let hid = P.hidden;
  let outs = select(P.rows * hid, P.rows * k * width, UP);
  let t = wid(wg, n) * 8u + team;  // the team's output: UP (r * k + j) * width + c, else r * hid + o
  var acc = vec2<f32>(0.0);        // UP: (gate, up); else the weighted sum
  if (t < outs) {
    if (UP) {
      let slot = t / width; let c = t % width;
      let e = u32(af(P.indices + slot));
      var base: array<u32, STREAMS>;
      base[0] = (e * 2u * width + c) * hid;
      base[STREAMS - 1u] = base[0] + width * hid;
      row_dots(&acc, base, P.x + (slot / k) * hid, hid, lane);
    } else {
      let r = t / hid; let o = t % hid;
      for (var j = 0u; j < k; j++) {
        let slot = r * k + j;
        let e = u32(af(P.indices + slot));
        var d = vec2<f32>(0.0);
        var base: array<u32, STREAMS>;
        base[0] = (e * hid + o) * width;
        row_dots(&d, base, P.x + slot * width, width, lane);
        acc.x += af(P.weights + slot) * d.x;
      }
    }
  }
  let s = team_sums(lid.x, lane, vec4<f32>(acc, 0.0, 0.0));
  if (lane == 0u && t < outs) { afset(P.dst + t, select(s.x, gelu_tanh(s.x) * s.y, UP)); }
}
