// The Node CLI's bench on WebGPU (lavapipe), the small E2B-shaped pair: it runs to the end, and
// its host lines split the host's time for a step and for each kind of speculative work into the
// module's recording and the handing over of its command lists, over as many dispatches as the
// step and the round have (the counts bench prints from its kernel profiles). With --leave-out,
// the step's and round's GPU time is timed again without the kernels named, each set apart: as
// many fewer dispatches as the kernel profiles give those kernels; a set that names no kernel
// says so; and the whole work is timed again after the sets, every dispatch back. The figures
// scripts/bench-peers.mjs tabulates are read from the same output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cli, root } from './cli.mjs';
import { parseOurs } from '../../scripts/peers_parse.mjs';

// A run killed by SIGSEGV (Node's own, as in cli.mjs) is run once more.
function bench(args) {
  let r = spawnSync(process.execPath, [cli, 'bench', ...args], { cwd: root, encoding: 'utf8' });
  if (r.signal === 'SIGSEGV') r = spawnSync(process.execPath, [cli, 'bench', ...args], { cwd: root, encoding: 'utf8' });
  return r;
}

test('bench splits the host time of a step and of a round', () => {
  const r = bench(['--model', join(root, 'testdata/models/e2b_mini'),
                   '--assistant', join(root, 'testdata/models/e2b_mini/assistant_centroid'),
                   '--prompt-tokens', '8', '--decode-tokens', '8', '--gpu-validation', 'off',
                   '--leave-out', 'attention_wide,attention_combine/matvec.gate_up/no_such_kernel']);
  assert.equal(r.status, 0, r.stderr);
  const counts = {
    'a step': Number(r.stdout.match(/dispatches per decoded token: ([0-9.]+)/)?.[1]),
    round: Number(r.stdout.match(/dispatches per round: ([0-9.]+)/)?.[1]),
  };
  assert.ok(counts['a step'] > 0 && counts.round > counts['a step'], JSON.stringify(counts));
  const num = '([0-9.]+)';
  const split = new RegExp(`host, (a step|plain decode step|draft step|3-token verification|round): ${num} ms = ` +
                           `recording ${num} ms \\(${num} us a dispatch\\) \\+ handing over ${num} ms \\(${num} us a dispatch\\)`, 'g');
  const seen = new Set();
  for (const m of r.stdout.matchAll(split)) {
    const what = m[1];
    const [total, recording, recPer, handing, handPer] = m.slice(2, 7).map(Number);
    seen.add(what);
    assert.ok(recording > 0 && handing > 0, `${what}: ${m[0]}`);
    assert.ok(Math.abs(recording + handing - total) <= 0.002, `${what}: the parts add up to the whole: ${m[0]}`);
    // The per-dispatch figures divide by the dispatches of one step (or round) as recorded.
    const dispatches = (1000 * total) / (recPer + handPer);
    const expected = counts[what === 'plain decode step' ? 'a step' : what];
    if (expected) assert.ok(Math.abs(dispatches - expected) <= 0.02 * expected, `${what}: ${dispatches} dispatches, not ${expected}`);
  }
  assert.deepEqual([...seen].sort(), ['3-token verification', 'a step', 'draft step', 'plain decode step', 'round']);

  // Each kind read at once: its time, and the host's part and the wait after it, adding up to it.
  const kinds = ['plain decode step', 'draft step', '3-token verification', 'round'];
  const whole = Object.fromEntries(kinds.map((k) => [k, Number(r.stdout.match(
    new RegExp(`^  ${k}(?: \\([^)]*\\))?: ([0-9.]+) ms`, 'm'))?.[1])]));
  const parts = r.stdout.match(/of which the host's recording and hand-over, then the wait for the GPU and the read:\n(.*)/)?.[1];
  assert.ok(parts, r.stdout);
  for (const k of kinds) {
    const m = parts.match(new RegExp(`${k} ([0-9.]+) \\+ ([0-9.]+) ms`));
    assert.ok(m, `${k}: ${parts}`);
    const [host, waited] = [Number(m[1]), Number(m[2])];
    assert.ok(host > 0 && waited > 0, `${k}: ${parts}`);
    assert.ok(Math.abs(host + waited - whole[k]) <= 0.05 * whole[k] + 0.02, `${k}: ${host} + ${waited} ms against ${whole[k]}`);
  }

  // The calls per unit of each kernel in the profile that follows `title` (its indented lines).
  const profileCalls = (title) => {
    const at = r.stdout.indexOf(title);
    assert.ok(at >= 0, title);
    const calls = new Map();
    for (const line of r.stdout.slice(at).split('\n').slice(1)) {
      const m = line.match(/^  (\S+) +[0-9.]+ ms +([0-9.]+) calls/);
      if (m) calls.set(m[1], Number(m[2]));
      else if (!line.startsWith('   ')) break;
    }
    return calls;
  };
  const step = profileCalls('GPU kernel time per decoded token');
  const round = profileCalls('GPU kernel time per round');
  const full = {};
  for (const m of r.stdout.matchAll(/^    (plain decode step|round) +[0-9.]+ ms = [0-9.]+ x a plain step; +([0-9.]+) dispatches/gm)) {
    full[m[1]] = Number(m[2]);
  }
  assert.deepEqual(full, { 'plain decode step': counts['a step'], round: counts.round });
  const sets = [...r.stdout.matchAll(/^    without ([^:]+): (.*)$/gm)];
  assert.deepEqual(sets.map((m) => m[1]), ['attention_wide,attention_combine', 'matvec.gate_up', 'no_such_kernel']);
  assert.match(sets[2][2], /^no kernel's name starts with these/);
  for (const [, names, rest] of sets.slice(0, 2)) {
    const prefixes = names.split(',');
    const of = (calls) => [...calls].filter(([k]) => prefixes.some((p) => k.startsWith(p))).reduce((a, [, c]) => a + c, 0);
    const left = {};
    for (const m of rest.matchAll(/(plain decode step|draft step|3-token verification|round) ([0-9.]+) ms \(saves (-?[0-9.]+), ([0-9.]+) dispatches\)/g)) {
      left[m[1]] = Number(m[4]);
    }
    assert.equal(Object.keys(left).length, 4, rest);
    assert.ok(of(step) > 0 && of(round) > 0, `${names}: in the profiles`);
    assert.equal(left['plain decode step'], full['plain decode step'] - of(step), `${names}: ${rest}`);
    assert.equal(left.round, full.round - of(round), `${names}: ${rest}`);
  }
  // The whole work timed again after the sets: every dispatch recorded again.
  const again = r.stdout.match(/^    all of it again: plain decode step [0-9.]+ ms \(([0-9.]+) dispatches\);.* round [0-9.]+ ms \(([0-9.]+) dispatches\)$/m);
  assert.ok(again, 'the whole work timed again');
  assert.deepEqual([Number(again[1]), Number(again[2])], [full['plain decode step'], full.round]);

  const figures = parseOurs(r.stdout);
  for (const [k, v] of Object.entries(figures)) assert.ok(Number.isFinite(v) && v > 0, `bench-peers reads ${k}: ${v}`);
  assert.deepEqual(Object.keys(figures).sort(), ['adaptive', 'decode', 'fixed', 'prefill', 'roundMs', 'stepMs']);
  assert.ok(figures.roundMs > figures.stepMs, JSON.stringify(figures));
});
