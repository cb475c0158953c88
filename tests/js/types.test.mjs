// The TypeScript declarations of the package (web/index.d.mts, web/gemma4-types.d.ts, dist/*.d.mts)
// type-check the API as it is used (tests/types/usage.mts) and reject misuse (misuse.mts), with
// Debian's tsc in strict mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';

const tsc = (file) => spawnSync('tsc', ['--strict', '--noEmit', '--module', 'nodenext', '--moduleResolution', 'nodenext',
                                        '--target', 'es2022', '--lib', 'es2022,dom', join(root, 'tests/types', file)],
                                { encoding: 'utf8' });

test('the declarations type-check the API as used', () => {
  const r = tsc('usage.mts');
  assert.equal(r.error, undefined, 'tsc (node-typescript) is installed');
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('the declarations reject a misspelt option and a wrong type', () => {
  const r = tsc('misuse.mts');
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /temperatur/);
  assert.match(r.stdout, /misuse\.mts\(8,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
});
