// scripts/probe-q4dot.mjs on lavapipe, its shapes shrunk: each kind of q4 product asked for (the
// f32 unpacking, 8-bit inputs by dot4I8Packed an oct or a group a lane, made apart or staged by
// the workgroup over several blocks of features; the weights and input bound as the runtime binds
// them) is timed for every shape and rows count, and its sampled outputs match the float64
// products of its input (a wrong one would print WRONG and exit 1). Bad options are refused,
// naming the option. What it measures means something only on a GPU (docs/PERFORMANCE.md has the
// H200's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';

const probe = (args) => spawnSync(process.execPath, [join(root, 'scripts', 'probe-q4dot.mjs'), ...args],
                                  { cwd: root, encoding: 'utf8', timeout: 300000 });
const kinds = ['f32, lanes 64, 2 in flight', 'dot4, lanes 32, 4 in flight', 'run, lanes 8, 2 in flight',
               'pdot4, lanes 128, 2 in flight', 'pdot4, lanes 32, 4 in flight, v, rw',
               'sdot4, lanes 64, 2 in flight, 4 blocks'];

test('every kind asked for is timed and right, for each shape and rows count', () => {
  const r = probe(['--reps', '1', '--max-bytes', '2000000', '--shrink', '64', '--rows', '1,3', '--only', kinds.join('|')]);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /WRONG|failed/);
  const shapes = r.stdout.match(/^\S.*, [13] rows?: \d+ x \d+, .* plain read [\d.]+ us/gm) ?? [];
  assert.equal(shapes.length, 16, r.stdout);
  for (const name of kinds) {
    const timed = r.stdout.match(new RegExp(`^ {2}${name} +\\d+ groups: [\\d.]+ us, [\\d.]+x the read`, 'gm')) ?? [];
    const skipped = r.stdout.match(new RegExp(`^ {2}${name}: not made: the rows' stage does not fit`, 'gm')) ?? [];
    assert.equal(timed.length + skipped.length, 16, `${name}:\n${r.stdout}`);
    assert.ok(timed.length >= 12, `${name}:\n${r.stdout}`);
  }
});

test('bad options are refused, naming the option', () => {
  for (const [args, named] of [[['--reps', '0'], /--reps must be a whole number from 1 to 32, not '0'/],
                               [['--shrink', '3'], /--shrink must be a power of two [^\n]*, not '3'/],
                               [['--rows', '1,9'], /--rows must be a whole number from 1 to 8, not '9'/],
                               [['--max-bytes', '10'], /--max-bytes must be a whole number/],
                               [['--foo'], /Unknown option '--foo'/]]) {
    const r = probe(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, named);
  }
});
