// scripts/probe-matvec.mjs on lavapipe, its shapes shrunk: every variant asked for is timed for
// every shape and rows count, and its sampled outputs match the float64 products (a wrong one
// would print WRONG and exit 1): one of two features a lane group, its lanes' sums through
// workgroup memory (128 lanes, past lavapipe's subgroups of 4), and one of four loads in flight
// whose lanes are one subgroup (shuffles alone). Bad options are refused, naming the option.
// What it measures means something only on a GPU (docs/PERFORMANCE.md has the H200's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';

const probe = (args) => spawnSync(process.execPath, [join(root, 'scripts', 'probe-matvec.mjs'), ...args],
                                  { cwd: root, encoding: 'utf8', timeout: 300000 });

test('every variant asked for is timed and right, for each shape and rows count', () => {
  const r = probe(['--reps', '1', '--max-bytes', '2000000', '--shrink', '64', '--rows', '1,3',
                   '--only', 'lanes 128, 2 features, 1 load|lanes 4, 4 loads']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /WRONG|failed|not made|does not fit/);
  const shapes = r.stdout.match(/^\S.*, [13] rows?: \d+ x \d+, .* plain read [\d.]+ us/gm) ?? [];
  assert.equal(shapes.length, 12, r.stdout);
  for (const name of ['lanes 128, 2 features, 1 load', 'lanes 4, 4 loads']) {
    const timed = r.stdout.match(new RegExp(`^ {2}${name} +\\d+ groups: [\\d.]+ us, [\\d.]+x the read`, 'gm')) ?? [];
    assert.equal(timed.length, 12, `${name}:\n${r.stdout}`);
  }
});

test('bad options are refused, naming the option', () => {
  for (const [args, named] of [[['--reps', '0'], /--reps must be a whole number from 1 to 32, not '0'/],
                               [['--reps', '33'], /--reps must be a whole number from 1 to 32, not '33'/],
                               [['--shrink', '3'], /--shrink must be a power of two [^\n]*, not '3'/],
                               [['--rows', '1,9'], /--rows must be a whole number from 1 to 8, not '9'/],
                               [['--rows', ''], /--rows must be a whole number from 1 to 8, not ''/],
                               [['--shrink', '1.5'], /--shrink must be a whole number from 1 to 256, not '1\.5'/],
                               [['--max-bytes', '10'], /--max-bytes must be a whole number/],
                               [['--foo'], /Unknown option '--foo'/]]) {
    const r = probe(args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, named);
  }
});
