// Runs the Node CLI (bin/gemma4.mjs) and returns the JSON object on its last line of output;
// a failure carries the CLI's exit status, signal and stderr.
import { execFileSync } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'bin', 'gemma4.mjs');

export function runJson(args) {
  let out;
  try {
    out = execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8' });
  } catch (e) {
    throw new Error(`gemma4 ${args.join(' ')} failed (status ${e.status}, signal ${e.signal}, ` +
                    `${(e.stdout || '').length} bytes of output):\n${e.stderr}`);
  }
  const lines = out.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}
