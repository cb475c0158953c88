// Runs build-wasm/gemma4.wasm (a WASI reactor, asyncified around gpu.read_buffer) in Node: WASI
// for files, clocks and output; the WebGPU bridge for the GPU; asyncify for the awaits a GPU read
// needs, so that the C++ side can read back synchronously.
import { readFileSync } from 'node:fs';
import { createGpuImports } from './gpu_bridge.mjs';

const ASYNCIFY_STACK = 1 << 20;

export async function runCli(wasmPath, argv, { device = null } = {}) {
  const emitWarning = process.emitWarning;
  process.emitWarning = (w, ...rest) => { if (!String(w).includes('WASI')) emitWarning.call(process, w, ...rest); };
  const { WASI } = await import('node:wasi');
  const wasi = new WASI({ version: 'preview1', args: ['gemma4', ...argv], env: { PWD: process.cwd() },
                          preopens: { '/': '/' }, returnOnExit: true });
  let instance;
  const memory = () => instance.exports.memory;
  const pending = { promise: null };
  let gpu = null;
  const gpuImports = new Proxy({}, {
    get(_t, name) {
      return (...args) => {
        if (!gpu) throw new Error('gemma4: this command needs a GPU device and none was set up');
        if (name === 'read_buffer') return asyncImport(() => gpu.read_buffer(...args));
        return gpu[name](...args);
      };
    },
  });
  // asyncify: the first call starts the read and unwinds; the rewind returns its result.
  let rewinding = false, result = 0, dataPtr = 0;
  function asyncImport(start) {
    if (rewinding) {
      instance.exports.asyncify_stop_rewind();
      rewinding = false;
      return result;
    }
    start();
    instance.exports.asyncify_start_unwind(dataPtr);
    return 0;
  }
  const module = await WebAssembly.compile(readFileSync(wasmPath));
  instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport, gpu: gpuImports });
  wasi.initialize(instance);
  if (device) gpu = createGpuImports(device, memory, pending);
  const ex = instance.exports;
  dataPtr = ex.malloc(ASYNCIFY_STACK + 8);
  new Uint32Array(memory().buffer, dataPtr, 2).set([dataPtr + 8, dataPtr + 8 + ASYNCIFY_STACK]);
  // argv in wasm memory.
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
  return code;
}
