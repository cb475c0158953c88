// A fixed chain of dependent arithmetic a thread, no memory traffic: a workgroup takes as long
// alone as beside others until the device runs no more at once (WebGpuBackend::Calibrate).
struct Params {
  iterations: u32,
  sink: u32,  // a float written only if the chain ends on a value it never reaches
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  var x = 1.0 + f32(id.x) * 1e-9;
  var y = 0.5;
  for (var i = 0u; i < P.iterations; i++) {
    x = fma(x, 0.9999999, y * 1e-7);
    y = fma(y, 1.0000001, -x * 1e-7);
  }
  if (x == 123.456) { afset(P.sink, y); }
}
