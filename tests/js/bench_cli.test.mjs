// The Node CLI's bench on WebGPU (lavapipe), the small E2B-shaped pair: it runs to the end and its
// host lines split the host's time for a step and for each kind of speculative work into the
// module's recording and the handing over of its command lists, parts that add up to the whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cli, root } from './cli.mjs';

test('bench splits the host time of a step and of a round', () => {
  const r = spawnSync(process.execPath, [cli, 'bench', '--model', join(root, 'testdata/models/e2b_mini'),
                                         '--assistant', join(root, 'testdata/models/e2b_mini/assistant_centroid'),
                                         '--prompt-tokens', '8', '--decode-tokens', '8', '--gpu-validation', 'off'],
                      { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const num = '([0-9.]+)';
  const split = new RegExp(`host, (a step|plain decode step|draft step|3-token verification|round): ${num} ms = ` +
                           `recording ${num} ms \\(${num} us a dispatch\\) \\+ handing over ${num} ms \\(${num} us a dispatch\\)`, 'g');
  const seen = new Set();
  for (const m of r.stdout.matchAll(split)) {
    const [, what, total, recording, recPer, handing, handPer] = m.slice(0, 7).map((x, i) => (i > 1 ? Number(x) : x));
    seen.add(what);
    assert.ok(recording > 0 && handing > 0, `${what}: ${m[0]}`);
    assert.ok(Math.abs(recording + handing - total) <= 0.002, `${what}: the parts add up to the whole: ${m[0]}`);
    // Per dispatch: the same dispatch count divides both parts.
    assert.ok(Math.abs(recording / handing - recPer / handPer) <= 0.05 * (recording / handing), `${what}: ${m[0]}`);
  }
  assert.deepEqual([...seen].sort(), ['3-token verification', 'a step', 'draft step', 'plain decode step', 'round']);
});
