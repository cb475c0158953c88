#!/usr/bin/env -S node --no-warnings
// gemma4 for Node: the same command line as the native binary, running the C++ core compiled to
// WebAssembly (build-wasm/gemma4.wasm, made by scripts/build-wasm.sh; in an installed package its
// copy dist/gemma4-cli.wasm, made by scripts/build-web.sh). Files are reached through
// WASI; the WebGPU backend (the default here, `--backend cpu` for the CPU one inside WebAssembly)
// runs on Dawn (the `webgpu` package). `gemma4 serve` is an OpenAI-compatible HTTP server over the
// JavaScript API instead (dist/, made by scripts/build-web.sh; docs/SERVER.md).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../web/wasm_host.mjs';
import { nodeDevice } from '../web/node_device.mjs';

const argv = process.argv.slice(2);
// --gpu-validation on|off (this front end's own flag, taken out before the core sees the rest):
// whether Dawn validates the runtime's GPU calls, bounds-checks the kernels' array indices and
// zeroes their workgroup memory (web/dawn_toggles.mjs). On by default.
let validation = true;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a !== '--gpu-validation' && !a.startsWith('--gpu-validation=')) continue;
  const eq = a.indexOf('=');
  const value = eq >= 0 ? a.slice(eq + 1) : argv[i + 1];
  if (value !== 'on' && value !== 'off') {
    process.stderr.write(`gemma4: --gpu-validation takes on or off, not '${value ?? ''}'\n`);
    process.exit(2);
  }
  validation = value === 'on';
  argv.splice(i, eq >= 0 ? 1 : 2);
  i--;
}
// `serve`: an OpenAI-compatible HTTP server over the JavaScript API (web/server_cli.mjs).
if (argv[0] === 'serve') {
  const { serveMain } = await import('../web/server_cli.mjs');
  process.exit(await serveMain(argv.slice(1), { gpuValidation: validation }));
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// The module: G4_WASM where set; else a checkout's own build (scripts/build-wasm.sh), else the
// copy an installed package carries in dist/ (scripts/build-web.sh).
const built = join(root, 'build-wasm', 'gemma4.wasm'), packaged = join(root, 'dist', 'gemma4-cli.wasm');
const wasmPath = process.env.G4_WASM || (existsSync(built) || !existsSync(packaged) ? built : packaged);
if (!existsSync(wasmPath)) {
  const fix = process.env.G4_WASM ? 'G4_WASM names no file' : 'run scripts/build-wasm.sh';
  process.stderr.write(`gemma4: ${wasmPath} is missing: ${fix}\n`);
  process.exit(1);
}
// WebGPU is the default backend here (the native binary's is cpu).
if (['generate', 'bench'].includes(argv[0]) && !argv.some((a) => a === '--backend' || a.startsWith('--backend='))) {
  argv.push('--backend', 'webgpu');
}
const backendAt = argv.indexOf('--backend');
const wantsGpu = (backendAt >= 0 && argv[backendAt + 1] === 'webgpu') || argv.includes('--backend=webgpu');
let device = null;
if (wantsGpu) {
  // G4_NO_SUBGROUPS=1 leaves subgroups off (the workgroup-memory reductions), to compare.
  device = await nodeDevice({ validation, subgroups: process.env.G4_NO_SUBGROUPS !== '1' });
  if (!device) {
    process.stderr.write('gemma4: no WebGPU adapter (on a machine without a GPU: source .lavapipe/env.sh)\n');
    process.exit(1);
  }
}
process.exitCode = await runCli(wasmPath, argv, { device });
device?.destroy();
