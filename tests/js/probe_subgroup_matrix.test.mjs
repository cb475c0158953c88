// scripts/probe-subgroup-matrix.mjs on a machine without subgroup matrices (lavapipe, whose
// Mesa has shader-f16 but no subgroup matrices): it says what the adapter lacks and measures
// nothing; and bad options are refused, naming the option. Its measurement itself needs a GPU
// with matrix units (docs/PERFORMANCE.md has the H200's); on one, the first test would fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';

const probe = (args) => spawnSync(process.execPath, [join(root, 'scripts', 'probe-subgroup-matrix.mjs'), ...args],
                                  { cwd: root, encoding: 'utf8' });

test('without subgroup matrices it names what is missing and measures nothing', () => {
  const r = probe(['--reps', '2']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /not measured: the adapter lacks [^\n]*chromium-experimental-subgroup-matrix/);
  assert.doesNotMatch(r.stdout, /TFLOP\/s/);
});

test('bad options are refused, naming the option', () => {
  for (const [option, most] of [['--reps', 1000], ['--per-pass', 64]]) {
    for (const value of ['0', 'x', '1.5', '1e2', String(most + 1)]) {
      const r = probe([option, value]);
      assert.equal(r.status, 2);
      assert.match(r.stderr, new RegExp(`${option} must be a whole number from 1 to ${most}, not '${value.replace('.', '\\.')}'`));
    }
  }
  for (const [args, named] of [[['--foo'], /Unknown option '--foo'/], [['--reps'], /Option '--reps[^']*' argument/],
                               [['x'], /Unexpected argument 'x'/], [['--reps', '3', '--reps', '4'], /--reps is given more than once/],
                               [['--per-pass', '3', '--per-pass', '4'], /--per-pass is given more than once/]]) {
    const r = probe(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, named);
  }
});
