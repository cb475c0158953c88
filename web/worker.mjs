// The runtime inside a Web Worker, with the same interface on the page: createGemma4({ worker:
// true }) starts a module worker of the same build (named WORKER_NAME, so the build's module
// serves requests when it finds itself there) and answers with a proxy whose methods post to it.
// Streams arrive chunk by chunk; stats() is the worker's latest figures, sent with every reply.
import { chunkStream } from './stream.mjs';

export const WORKER_NAME = 'gemma4-worker';

// An error as posted ({ name, message, cause }), made an Error again on the page.
const rebuild = (e) => Object.assign(new (e.name === 'TypeError' ? TypeError : Error)(e.message,
                                                                                    e.cause ? { cause: rebuild(e.cause) } : undefined),
                                     { name: e.name });
// An error as the worker posts it: name, message and (a few levels of) cause.
const posted = (e, depth = 0) => ({ name: e?.name ?? 'Error', message: e?.message ?? String(e),
                                    ...(e?.cause !== undefined && depth < 4 ? { cause: posted(e.cause, depth + 1) } : {}) });

export async function workerClient(build, options) {
  // `log` is a function, which cannot be posted: the worker sends its lines back instead.
  const { worker: _worker, log, ...rest } = options;
  if (rest.device) throw new TypeError('gemma4: a worker runtime requests its own device; do not pass one');
  if (typeof Worker === 'undefined') throw new Error('gemma4: this host has no Web Workers');
  const w = new Worker(build.moduleUrl, { type: 'module', name: WORKER_NAME });
  const calls = new Map();
  let nextId = 1, latest = null, broken = null;
  w.onmessage = ({ data: m }) => {
    if (m.log !== undefined) {
      log?.(m.log);
      return;
    }
    if (m.stats !== undefined) latest = m.stats;
    const c = calls.get(m.id);
    if (!c) return;
    if (m.progress) {
      // The caller's onProgress runs here, on the page: a throw fails the load (once the worker
      // has answered it, the model the worker loaded is unloaded), as without a worker.
      try {
        if (!c.thrown) c.onProgress?.(m.progress);
      } catch (e) {
        c.thrown = e;
      }
    } else if (m.chunk) c.chunk(m.chunk);
    else if (m.started) c.resolve(c.iterable);
    else if (m.error) { calls.delete(m.id); c.reject(c.thrown ? progressFailed(c) : rebuild(m.error)); c.end(rebuild(m.error)); }
    else if (m.done && c.thrown) {
      calls.delete(m.id);
      call('unload').then(() => c.reject(progressFailed(c)), () => c.reject(progressFailed(c)));
    } else if (m.done) { calls.delete(m.id); c.resolve(m.value); c.end(null); }
  };
  const progressFailed = (c) => new Error(`gemma4 load: the progress handler threw (${c.thrown?.message ?? c.thrown})`,
                                          { cause: c.thrown });
  // Every call waiting on the worker fails with `error` (a worker that broke or was ended).
  const failAll = (error) => {
    broken = error;
    for (const c of calls.values()) { c.reject(error); c.end(error); }
    calls.clear();
  };
  w.onerror = (e) => failAll(new Error(`gemma4 worker: ${e.message || 'failed'}`));
  const call = (method, args = [], extra = {}) => new Promise((resolve, reject) => {
    if (broken) { reject(broken); return; }
    const id = nextId++;
    calls.set(id, { resolve, reject, chunk() {}, end() {}, ...extra });
    w.postMessage({ id, method, args });
  });
  // An async-iterable fed by the worker's chunks (web/stream.mjs); leaving its loop early
  // interrupts the request and resolves when the worker has answered its end.
  const streamOf = () => {
    let over = false, settle;
    const settled = new Promise((resolve) => { settle = resolve; });
    const chunks = chunkStream(() => {
      if (!over) w.postMessage({ method: 'interrupt' });
      return settled;
    });
    return {
      iterable: chunks.iterable,
      chunk: (c) => chunks.push(c),
      end: (e) => { over = true; chunks.end(e); settle(); },
    };
  };
  try {
    await call('create', [{ ...rest, ...(log ? { log: true } : {}) }]);
  } catch (e) {
    w.terminate();
    throw e;
  }
  return {
    build: { factory: build.factory, mtp: build.mtp, profile: build.profile, worker: true },
    chat: {
      completions: {
        create(params) {
          if (params?.stream) return call('chat', [params], streamOf());
          return call('chat', [params]);
        },
      },
    },
    load(args = {}) {
      const { onProgress, ...clonable } = args;
      return call('load', [{ ...clonable, ...(onProgress ? { onProgress: true } : {}) }], { onProgress });
    },
    unload: () => call('unload'),
    reset: () => call('reset'),
    interrupt() { w.postMessage({ method: 'interrupt' }); },
    stats: () => (latest ? structuredClone(latest) : latest),
    // Ends the worker (and its device); calls still waiting fail; the proxy is unusable afterwards.
    terminate() {
      w.terminate();
      failAll(new Error('gemma4 worker: terminated'));
    },
  };
}

// In a worker named WORKER_NAME: serves the runtime made by `factory` to the page.
export function serveIfWorker(factory) {
  if (typeof WorkerGlobalScope === 'undefined' || !(self instanceof WorkerGlobalScope) || self.name !== WORKER_NAME) return;
  let rt = null;
  self.onmessage = async ({ data: { id, method, args } }) => {
    const reply = (m) => self.postMessage({ id, ...m, stats: rt ? rt.stats() : null });
    const fail = (e) => reply({ error: posted(e) });
    try {
      if (method === 'interrupt') {
        rt?.interrupt();
      } else if (method === 'create') {
        const o = { ...args[0] };
        if (o.log) o.log = (line) => self.postMessage({ log: String(line) });
        rt = await factory(o);
        reply({ done: true });
      } else if (method === 'load') {
        const a = { ...args[0] };
        if (a.onProgress) a.onProgress = (p) => reply({ progress: p });
        await rt.load(a);
        reply({ done: true });
      } else if (method === 'chat') {
        const r = await rt.chat.completions.create(args[0]);
        if (!args[0]?.stream) {
          reply({ done: true, value: r });
          return;
        }
        reply({ started: true });
        try {
          for await (const chunk of r) reply({ chunk });
          reply({ done: true });
        } catch (e) {
          fail(e);
        }
      } else if (method === 'unload' || method === 'reset') {
        await rt[method]();
        reply({ done: true });
      } else {
        throw new Error(`gemma4 worker: unknown call '${method}'`);
      }
    } catch (e) {
      fail(e);
    }
  };
}
