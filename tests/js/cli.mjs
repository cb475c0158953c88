// Runs the Node CLI (bin/gemma4.mjs) and returns the JSON object on its last line of output;
// a failure carries the CLI's exit status, signal and stderr.
//
// A run killed by SIGSEGV is run once more, and says so on stderr. WebAssembly cannot fault its
// host, so such a death is Node's own (seen once in CI, after the CLI had printed its whole JSON
// line, on a run that passes thousands of times here); a second death, or any other failure,
// fails the test.
import { execFileSync } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
