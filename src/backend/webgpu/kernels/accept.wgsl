// Greedy acceptance: result = (m, target[m]), m the length of the longest prefix of the drafts
// equal to the target's tokens. One thread. P: result, drafts, target, k
@compute @workgroup_size(1)
fn main() {
  let k = pu(3u);
  var m = 0u;
  loop {
    if (m >= k || A[pu(1u) + m] != A[pu(2u) + m]) { break; }
    m++;
  }
  A[pu(0u)] = f32(m);
  A[pu(0u) + 1u] = A[pu(2u) + m];
}
