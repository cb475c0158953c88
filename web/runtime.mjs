// Runs a gemma4 WebAssembly module (a WASI reactor exporting g4_main, asyncified around
// gpu.read_buffer) in any JavaScript host: the host supplies the WASI imports and, for the WebGPU
// backend, a GPUDevice. Asyncify lets the C++ side read GPU results as if synchronously.
import { createGpuImports } from './gpu_bridge.mjs';

const ASYNCIFY_STACK = 1 << 20;

// wasi: { imports, initialize(instance) }; onExit(gpu) sees the GPU bridge after the run.
// Returns g4_main's exit code.
export async function runModule(wasmBytes, argv, { wasi, device = null, onExit = null }) {
  let instance;
  const memory = () => instance.exports.memory;
  const pending = { promise: null };
  let gpu = null;
  let rewinding = false, result = 0, dataPtr = 0;
  // The first call starts the read and unwinds the stack; the rewind returns its result.
  const suspending = (start) => {
    if (rewinding) {
      instance.exports.asyncify_stop_rewind();
      rewinding = false;
      return result;
    }
    start();
    instance.exports.asyncify_start_unwind(dataPtr);
    return 0;
  };
  const gpuImports = new Proxy({}, {
    get(_t, name) {
      return (...args) => {
        if (!gpu) throw new Error('gemma4: this command needs a GPU device and none was set up');
        if (name === 'read_buffer' || name === 'profile_read') return suspending(() => gpu[name](...args));
        return gpu[name](...args);
      };
    },
  });
  const module = await WebAssembly.compile(wasmBytes);
  instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.imports, gpu: gpuImports });
  wasi.initialize(instance);
  if (device) gpu = createGpuImports(device, memory, pending);
  const ex = instance.exports;
  dataPtr = ex.malloc(ASYNCIFY_STACK + 8);
  new Uint32Array(memory().buffer, dataPtr, 2).set([dataPtr + 8, dataPtr + 8 + ASYNCIFY_STACK]);
  const args = ['gemma4', ...argv].map((a) => new TextEncoder().encode(a + '\0'));
  const ptrs = ex.malloc(4 * args.length);
  args.forEach((bytes, i) => {
    const p = ex.malloc(bytes.length);
    new Uint8Array(memory().buffer, p, bytes.length).set(bytes);
    new Uint32Array(memory().buffer, ptrs + 4 * i, 1)[0] = p;
  });
  let code = ex.g4_main(args.length, ptrs);
  while (ex.asyncify_get_state() === 1) {
    ex.asyncify_stop_unwind();
    result = await pending.promise;
    rewinding = true;
    ex.asyncify_start_rewind(dataPtr);
    code = ex.g4_main(args.length, ptrs);
  }
  ex.g4_flush?.();
  onExit?.(gpu);
  return code;
}
