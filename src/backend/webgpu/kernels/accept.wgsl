// Greedy acceptance: result = (m, verified[m]), m the length of the longest prefix of the drafts
// equal to the target's tokens. One thread.
struct Params {
  result: u32,    // (2)
  drafts: u32,    // (k)
  verified: u32,  // the target's tokens for them: (k + 1)
  k: u32,
}
@compute @workgroup_size(1)
fn main() {
  let k = P.k;
  var m = 0u;
  loop {
    if (m >= k || af(P.drafts + m) != af(P.verified + m)) { break; }
    m++;
  }
  afset(P.result, f32(m));
  afset(P.result + 1u, af(P.verified + m));
}
