#!/usr/bin/env -S node --no-warnings
// gemma4 for Node: the same command line as the native binary, running the C++ core compiled to
// WebAssembly (build-wasm/gemma4.wasm, made by scripts/build-wasm.sh). Files are reached through
// WASI with the file system preopened, so paths mean what they mean to the shell.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// node:wasi is stable enough for this use; keep its experimental-feature warning off stderr.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  if (!String(warning).includes('WASI')) emitWarning.call(process, warning, ...rest);
};
const { WASI } = await import('node:wasi');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const wasmPath = process.env.G4_WASM || join(root, 'build-wasm', 'gemma4.wasm');
if (!existsSync(wasmPath)) {
  process.stderr.write(`gemma4: ${wasmPath} is missing: run scripts/build-wasm.sh\n`);
  process.exit(1);
}
// The module sees the host's file system at / and starts in the host's working directory.
const wasi = new WASI({
  version: 'preview1',
  args: ['gemma4', ...process.argv.slice(2)],
  env: { PWD: process.cwd() },
  preopens: { '/': '/' },
  returnOnExit: true,
});
const module = await WebAssembly.compile(readFileSync(wasmPath));
const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
process.exitCode = wasi.start(instance);
