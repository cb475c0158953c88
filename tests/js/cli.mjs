// Runs the Node CLI (bin/gemma4.mjs) and returns the JSON object on its last line of output;
// a failure carries the CLI's exit status, signal and stderr. runJsonHere does the same inside
// this process (below).
//
// A run killed by SIGSEGV is run once more, and says so on stderr. WebAssembly cannot fault its
// host, so such a death is Node's own (seen once in CI, after the CLI had printed its whole JSON
// line, on a run that passes thousands of times here); a second death, or any other failure,
// fails the test.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../web/wasm_host.mjs';
import { nodeDevice } from '../../web/node_device.mjs';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'bin', 'gemma4.mjs');

export function runJson(args, attempt = 1) {
  let out;
  try {
    out = execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8' });
  } catch (e) {
    if (e.signal === 'SIGSEGV' && attempt === 1) {
      process.stderr.write(`gemma4 ${args.join(' ')}: node died of SIGSEGV; running it once more\n`);
      return runJson(args, 2);
    }
    throw new Error(`gemma4 ${args.join(' ')} failed (status ${e.status}, signal ${e.signal}, ` +
                    `${(e.stdout || '').length} bytes of output):\n${e.stderr}`);
  }
  const lines = out.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

// The CLI's module (build-wasm/gemma4.wasm) run inside this process with `--backend webgpu`, on one
// WebGPU device made as bin/gemma4.mjs makes it and kept for every run of the process: Dawn makes
// each pipeline once a device, so a file's runs after its first neither start Node and Dawn again
// nor load their kernels again. Runs one at a time (the module binds the device's arena to its
// last backend). WebGPU runs only: CPU-backend runs grow the module's memory, and a dozen of them
// in one process have crashed Node 20 (a segmentation fault inside V8), so those keep a process
// each (runJson).
let device, queue = Promise.resolve();
export function runJsonHere(args) {
  const run = queue.then(async () => {
    device ??= await nodeDevice();
    if (!device) throw new Error('no WebGPU adapter (source .lavapipe/env.sh)');
    const argv = [...args, '--backend', 'webgpu'];
    const dir = mkdtempSync(join(tmpdir(), 'g4-cli-'));
    try {
      const fd = openSync(join(dir, 'stdout'), 'w');
      let code;
      try {
        code = await runCli(join(root, 'build-wasm', 'gemma4.wasm'), argv, { device, stdout: fd });
      } finally {
        closeSync(fd);
      }
      const out = readFileSync(join(dir, 'stdout'), 'utf8');
      if (code !== 0) throw new Error(`gemma4 ${argv.join(' ')} exited with ${code}:\n${out}`);
      const lines = out.trim().split('\n');
      return JSON.parse(lines[lines.length - 1]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  queue = run.catch(() => {});
  return run;
}

// The drafts of each round of a reference trace (`rounds`: { drafts, accepted }) that a run
// ending with `tokens` and `stopReason` emitted: the accepted ones, but in a last round whose
// stop token was one of them, those up to and with it (what the runtime's counters count).
export function emittedDrafts(rounds, tokens, stopReason) {
  return rounds.map((r, i) => {
    if (i !== rounds.length - 1 || stopReason !== 'eos') return r.accepted;
    const j = r.drafts.slice(0, r.accepted).indexOf(tokens.at(-1));
    return j >= 0 ? j + 1 : r.accepted;
  });
}
