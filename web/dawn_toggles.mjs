// Dawn's toggles for the devices this package makes in Node (the `webgpu` package's create()).
// Timestamps: Dawn rounds them to steps of 65.5 us by default (a browser's guard against timing
// attacks); kernel profiles want them as the GPU wrote them. validation false trusts the runtime's
// GPU work: Dawn skips validating its calls (`skip_validation`, less host time per dispatch) and
// compiles its kernels without the bounds checks WebGPU adds to every array index
// (`disable_robustness`) and without zeroing their workgroup memory as they start
// (`disable_workgroup_init`), for less GPU time (docs/PERFORMANCE.md). A bad call or an index out
// of bounds is then undefined instead of an error or a clamped access; no kernel's result depends
// on workgroup memory it has not written (the op tests run every kernel so).
export function dawnToggles({ validation = true } = {}) {
  const toggles = ['disable-dawn-features=timestamp_quantization'];
  if (!validation) toggles.push('enable-dawn-features=skip_validation,disable_robustness,disable_workgroup_init');
  return toggles;
}

// One Dawn instance per set of toggles for the whole process, shared by every runtime (and every
// build's bundle, through globalThis): Dawn's instances must outlive their devices, and each new
// one enumerates the adapters again, printing its warnings (limits "artificially reduced") anew.
export function dawnInstance(webgpu, options = {}) {
  const toggles = dawnToggles(options);
  const instances = (globalThis.__gemma4_dawn ??= new Map());
  const key = toggles.join(' ');
  if (!instances.has(key)) instances.set(key, webgpu.create(toggles));
  return instances.get(key);
}

// Dawn in Node settles its promises (mapAsync, onSubmittedWorkDone, popErrorScope) by processing
// its events from a setImmediate callback that schedules itself again while any is pending, so a
// waiting thread spins a whole core. On a fallback adapter (a CPU driver such as lavapipe) the
// device's work runs on those same cores. There a wait spins for its first millisecond (short
// work returns as fast as before) and then checks Dawn's events every millisecond, leaving the
// CPUs to the work. A GPU adapter keeps Dawn's spin, which answers soonest. Call it with each
// device used in Node; it changes setImmediate once a process, and only for Dawn's callback.
const SPIN_MS = 1;

export function yieldWhileWaiting(device) {
  if (!device?.adapterInfo?.isFallbackAdapter || typeof globalThis.setImmediate !== 'function' ||
      globalThis.__gemma4_dawn_waits) return;
  const immediate = globalThis.setImmediate;
  // Dawn's callback is an anonymous native function; every other caller passes its own. Each
  // function's verdict is kept, so that a callback scheduled again is not stringified again.
  const verdicts = new WeakMap();
  const isDawns = (fn) => {
    let v = verdicts.get(fn);
    if (v === undefined) {
      v = fn.name === '' && Function.prototype.toString.call(fn).endsWith('{ [native code] }');
      verdicts.set(fn, v);
    }
    return v;
  };
  let polling = false, waitStart = 0;
  globalThis.__gemma4_dawn_waits = true;
  globalThis.setImmediate = (fn, ...args) => {
    if (typeof fn !== 'function' || !isDawns(fn)) return immediate(fn, ...args);
    const now = performance.now();
    if (!polling) waitStart = now;  // scheduled from outside a poll: a new wait begins
    const poll = () => {
      polling = true;
      try { fn(...args); } finally { polling = false; }
    };
    return now - waitStart < SPIN_MS ? immediate(poll) : setTimeout(poll, 1);
  };
}
