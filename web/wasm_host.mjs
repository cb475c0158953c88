// Node host: WASI from node:wasi with the file system preopened at /, starting in the working
// directory. stdout: a file descriptor for the module's standard output (default: this process's).
// On a CPU driver the device's waits leave the CPUs to its work (yieldWhileWaiting).
import { readFileSync } from 'node:fs';
import { runModule } from './runtime.mjs';
import { yieldWhileWaiting } from './dawn_toggles.mjs';

export async function runCli(wasmPath, argv, { device = null, onExit = null, stdout = 1 } = {}) {
  const emitWarning = process.emitWarning;
  process.emitWarning = (w, ...rest) => { if (!String(w).includes('WASI')) emitWarning.call(process, w, ...rest); };
  yieldWhileWaiting(device);
  const { WASI } = await import('node:wasi');
  const wasi = new WASI({ version: 'preview1', args: ['gemma4', ...argv], env: { PWD: process.cwd() },
                          preopens: { '/': '/' }, returnOnExit: true, stdout });
  // The module calls node:wasi's functions through JavaScript closures, never directly: Node 20
  // dies of SIGSEGV now and then (under CPU load) after WebAssembly calls them directly, at the
  // next property read of the JavaScript that follows.
  const imports = Object.fromEntries(Object.entries(wasi.wasiImport).map(([name, f]) => [name, (...a) => f(...a)]));
  return runModule(readFileSync(wasmPath), argv, {
    device,
    onExit,
    wasi: { imports, initialize: (instance) => wasi.initialize(instance) },
  });
}
