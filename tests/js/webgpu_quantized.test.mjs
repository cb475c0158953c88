// Quantized artifacts (made by the native `gemma4 export`) on WebGPU: the same greedy tokens and
// speculative rounds as the native CPU backend on the same artifact, and logits within tolerance.
// The WebGPU runs are the CLI's module inside this process (cli.mjs: runJsonHere).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runJsonHere, root } from './cli.mjs';

const native = join(root, 'build', 'gemma4');
const model = join(root, 'testdata', 'models', 'e2b_mini');
const assistant = join(model, 'assistant_centroid');
const prompt = '2,105,236,107,451,106,107,105,436,107';
// q4's GateUp and LM head round their input to 8 bits an oct: where the backends' inputs differ in
// their last bit at a rounding boundary, one value lands a step (max / 127) away, and every logit
// of that step moves by up to a few 1e-2; a backend that did not round the LM head's input would
// be that far off at nearly every step. So a step's logits are either close (CLOSE, q8's bound at
// every step) or, at no more than FLIPS[quant] of the 20 steps, within FAR.
const CLOSE = 2e-3;
const FAR = 5e-2;
const FLIPS = { q8: 0, q4: 2 };

function nativeJson(args) {
  const lines = execFileSync(native, args, { encoding: 'utf8' }).trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

for (const quant of ['q8', 'q4']) {
  test(`${quant} artifact: webgpu equals the native CPU backend`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'g4-quant-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const art = join(dir, 'artifact');
    execFileSync(native, ['export', '--model', model, '--assistant', assistant, '--quant', quant, '-o', art]);
    const args = ['generate', '--model', art, '--prompt-ids', prompt, '--max-new-tokens', '20', '--top-logits', '3', '--json'];
    const cpu = nativeJson(args);
    const gpu = await runJsonHere(args);
    assert.equal(gpu.stats.backend, 'webgpu');
    assert.deepEqual(gpu.tokens, cpu.tokens);
    const flipped = [];
    for (let j = 0; j < cpu.top_logits.length; j++) {
      let worst = 0;
      for (let k = 0; k < cpu.top_logits[j].length; k++) {
        assert.equal(gpu.top_logits[j][k][0], cpu.top_logits[j][k][0]);
        worst = Math.max(worst, Math.abs(gpu.top_logits[j][k][1] - cpu.top_logits[j][k][1]));
      }
      assert.ok(worst <= FAR, `step ${j}: a logit ${worst} away`);
      if (worst > CLOSE) flipped.push(`step ${j}: ${worst}`);
    }
    assert.ok(flipped.length <= FLIPS[quant], `${flipped.length} steps' logits more than ${CLOSE} away: ${flipped.join(', ')}`);
    const spec = ['generate', '--model', art, '--assistant', join(art, 'assistant'), '--draft-tokens', '2',
                  '--draft-policy', 'fixed', '--prompt-ids', prompt, '--max-new-tokens', '20', '--json'];
    const cpuSpec = nativeJson(spec);
    const gpuSpec = await runJsonHere(spec);
    assert.deepEqual(cpuSpec.tokens, cpu.tokens);
    assert.deepEqual(gpuSpec.tokens, cpu.tokens);
    assert.deepEqual(gpuSpec.stats.accepted_per_round, cpuSpec.stats.accepted_per_round);
  });
}
