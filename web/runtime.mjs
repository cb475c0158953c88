// Runs the gemma4 command line (build-wasm/gemma4.wasm, a WASI reactor exporting g4_main,
// asyncified around the GPU reads) in any JavaScript host: the host supplies the WASI imports
// and, for the WebGPU backend, a GPUDevice.
import { instantiate } from './module.mjs';

// wasi: { imports, initialize(instance) }; onExit(gpu) sees the GPU bridge after the run.
// Returns g4_main's exit code.
export async function runModule(wasmBytes, argv, { wasi, device = null, onExit = null }) {
  const m = await instantiate(wasmBytes, { wasi, device });
  const ex = m.exports;
  const args = ['gemma4', ...argv].map((a) => m.put(a + '\0')[0]);
  const ptrs = ex.malloc(4 * args.length);
  new Uint32Array(ex.memory.buffer, ptrs, args.length).set(args);
  const code = await m.call('g4_main', args.length, ptrs);
  ex.g4_flush?.();
  onExit?.(m.gpu);
  return code;
}
