// One instance of a gemma4 WebAssembly module (a WASI reactor, asyncified) in any JavaScript
// host. Imports that may wait (the GPU reads, file reads from Blobs, the host's token callback)
// are called normally; when one answers with a Promise, the module's stack is unwound
// (asyncify), the Promise awaited and the stack rewound, so the C++ side sees a plain call.
// call() runs an export that way. One call at a time per instance.
import { createGpuImports } from './gpu_bridge.mjs';

const ASYNCIFY_STACK = 1 << 20;

// wasi: { imports, initialize(instance) }; host: the "host" module's imports; device: a GPUDevice
// for the WebGPU backend (or null); gpuOptions: createGpuImports' options.
export async function instantiate(wasm, { wasi, device = null, host = {}, gpuOptions = {} }) {
  let instance = null;
  let gpu = null;
  const gpuPending = { promise: null };
  let suspended = null;   // the Promise an import is waiting on
  let rewinding = false, result = 0, dataPtr = 0, running = false;
  const memory = () => instance.exports.memory;
  // Wraps an import: a Promise answer suspends the module until it settles.
  const waiting = (fn) => (...args) => {
    if (rewinding) {
      instance.exports.asyncify_stop_rewind();
      rewinding = false;
      return result;
    }
    const r = fn(...args);
    if (!r || typeof r.then !== 'function') return r;
    suspended = r;
    instance.exports.asyncify_start_unwind(dataPtr);
    return 0;
  };
  const gpuWaits = new Set(['read_finish', 'profile_read']);
  const gpuImports = new Proxy({}, {
    get(_t, name) {
      const call = (...args) => {
        if (!gpu) throw new Error('gemma4: this needs a GPU device and none was set up');
        const r = gpu[name](...args);
        if (!gpuWaits.has(name)) return r;
        const p = gpuPending.promise;
        gpuPending.promise = null;
        return p;
      };
      return gpuWaits.has(name) ? waiting(call) : call;
    },
  });
  const module = wasm instanceof WebAssembly.Module ? wasm : await WebAssembly.compile(wasm);
  // A WASI call the host does not provide answers ENOSYS (52), so that a module linking one it
  // never reaches at run time still instantiates.
  const wasiImports = { ...wasi.imports, fd_read: waiting(wasi.imports.fd_read) };
  for (const { module: from, name, kind } of WebAssembly.Module.imports(module)) {
    if (from === 'wasi_snapshot_preview1' && kind === 'function' && !(name in wasiImports)) wasiImports[name] = () => 52;
  }
  const hostImports = Object.fromEntries(Object.entries(host).map(([k, f]) => [k, waiting(f)]));
  instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasiImports, gpu: gpuImports,
                                                     host: hostImports });
  wasi.initialize(instance);
  if (device) gpu = createGpuImports(device, memory, gpuPending, gpuOptions);
  const ex = instance.exports;
  dataPtr = ex.malloc(ASYNCIFY_STACK + 8);
  new Uint32Array(memory().buffer, dataPtr, 2).set([dataPtr + 8, dataPtr + 8 + ASYNCIFY_STACK]);

  const bytes = () => new Uint8Array(memory().buffer);
  let stopped = null;  // the trap (a WebAssembly RuntimeError) that left the module unusable
  return {
    exports: ex,
    gpu,
    // The trap that stopped the module, or null: after one, nothing more is called in it.
    get stopped() { return stopped; },
    // Runs export `name`, awaiting every suspension; resolves to its return value.
    async call(name, ...args) {
      if (stopped) throw stopped;
      if (running) throw new Error('gemma4: the module is already running a call');
      running = true;
      try {
        let r = ex[name](...args);
        while (ex.asyncify_get_state() === 1) {
          ex.asyncify_stop_unwind();
          const p = suspended;
          suspended = null;
          result = await p;
          rewinding = true;
          ex.asyncify_start_rewind(dataPtr);
          r = ex[name](...args);
        }
        return r;
      } catch (e) {
        if (e instanceof WebAssembly.RuntimeError) stopped = e;
        throw e;
      } finally {
        running = false;
      }
    },
    // Runs an export that answers malloc'd text with its length through a last pointer argument
    // (the C APIs' convention); resolves to the text, freed, or null when the export answered 0.
    async callText(name, ...args) {
      const out = ex.malloc(4);
      try {
        const p = await this.call(name, ...args, out);
        if (!p) return null;
        const s = this.text(p, this.u32(out));
        ex.free(p);
        return s;
      } finally {
        if (!stopped) ex.free(out);
      }
    },
    // Copies bytes (or a string, UTF-8) into malloc'd memory: [ptr, length].
    put(data) {
      const b = typeof data === 'string' ? new TextEncoder().encode(data) : data;
      const p = ex.malloc(Math.max(1, b.length));
      bytes().set(b, p);
      return [p, b.length];
    },
    text(ptr, length) { return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes().subarray(ptr, ptr + length)); },
    cstring(ptr) {
      const m = bytes();
      let end = ptr;
      while (m[end]) end++;
      return new TextDecoder().decode(m.subarray(ptr, end));
    },
    u32(ptr) { return new DataView(memory().buffer).getUint32(ptr, true); },
  };
}
