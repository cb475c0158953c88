// A workgroup's flag that a value that is not finite was seen (argmax, argmax_keyed, topk_values):
// any thread sets it (atomicStore(&bad, 1u)); it is read after a barrier. Workgroup memory is not
// assumed zeroed (Dawn's disable_workgroup_init skips zeroing it), so each workgroup clears the
// flag first.
var<workgroup> bad: atomic<u32>;

// Clears the flag for the whole workgroup; called by every thread before any sets it.
fn clear_bad(local: u32) {
  if (local == 0u) { atomicStore(&bad, 0u); }
  workgroupBarrier();
}
