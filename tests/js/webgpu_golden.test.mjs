// The WebGPU backend (WebAssembly + Dawn, on Mesa lavapipe without a GPU) against the reference
// goldens: greedy tokens identical, the final logits that chose them within tolerance, and the
// speculative rounds of every assistant identical. The CLI's module runs inside this process, on
// one device for all the runs (cli.mjs: runJsonHere).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync, mkdtempSync, cpSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emittedDrafts, runJsonHere, root } from './cli.mjs';

const models = join(root, 'testdata', 'models');
const TOLERANCE = 2e-3;

const run = runJsonHere;

for (const name of readdirSync(models).sort()) {
  const dir = join(models, name);
  if (!existsSync(join(dir, 'golden.json'))) continue;
  const golden = JSON.parse(readFileSync(join(dir, 'golden.json'), 'utf8'));
  test(`${name}: webgpu greedy tokens and logits equal the reference`, async () => {
    for (const p of golden.prompts) {
      const r = await run(['generate', '--model', dir, '--prompt-ids', p.prompt_ids.join(','), '--max-new-tokens',
                     String(golden.max_new_tokens), '--top-logits', '2', '--json']);
      assert.equal(r.stats.backend, 'webgpu');
      assert.deepEqual(r.tokens, p.greedy_tokens);
      // The logits that chose generated token j sit at position prompt_len - 1 + j.
      let checked = 0;
      for (const rec of p.logits) {
        const j = rec.position - (p.prompt_ids.length - 1);
        if (j < 0 || j >= r.top_logits.length) continue;
        for (const [id, value] of r.top_logits[j]) {
          assert.ok(Math.abs(value - rec.values[id]) <= TOLERANCE,
            `position ${rec.position} token ${id}: ${value} vs reference ${rec.values[id]}`);
          checked++;
        }
      }
      assert.ok(checked > 0);
    }
    // Without recorded logits only ids come back, and steps are recorded ahead of each read: the
    // shortest and the longest prompt.
    const byLength = [...golden.prompts].sort((a, b) => a.prompt_ids.length - b.prompt_ids.length);
    for (const p of [byLength[0], byLength.at(-1)]) {
      const ids = await run(['generate', '--model', dir, '--prompt-ids', p.prompt_ids.join(','), '--max-new-tokens',
                       String(golden.max_new_tokens), '--json']);
      assert.deepEqual(ids.tokens, p.greedy_tokens);
      assert.equal(ids.stop_reason, p.stop_reason);
    }
  });
  for (const a of readdirSync(dir).filter((f) => f.startsWith('assistant_')).sort()) {
    const ag = JSON.parse(readFileSync(join(dir, a, 'golden.json'), 'utf8'));
    // Each round is recorded before the read of the one before (its positions and seed taken from
    // that round's verdict on the device); with --decode-ahead 0 it is recorded after that read.
    // The rounds are the same either way. On the E2B-shaped pair the adaptive policy, which mixes
    // plain steps (still recorded ahead) with rounds, runs with --round-ahead 0 too: no round is
    // recorded ahead, and the tokens are greedy's.
    test(`${name}/${a}: webgpu speculative rounds equal the reference`, async () => {
      const adaptive = `${name}/${a}` === 'e2b_mini/assistant_centroid';
      let ahead = 0, other_ways = false;
      for (const t of ag.traces) {
        const ask = (policy) => ['generate', '--model', dir, '--assistant', join(dir, a), '--draft-tokens', '2',
                                 '--draft-policy', policy, '--prompt-ids', t.prompt_ids.join(','), '--max-new-tokens',
                                 String(t.max_new_tokens), '--json'];
        const args = ask('fixed');
        const r = await run(args);
        assert.deepEqual(r.tokens, t.k2.tokens);
        assert.deepEqual(r.stats.accepted_per_round, emittedDrafts(t.k2.rounds, t.k2.tokens, r.stop_reason));
        assert.ok(r.stats.rounds_ahead <= Math.max(0, r.stats.rounds - 1), 'the first round is never recorded ahead');
        ahead += r.stats.rounds_ahead;
        if (other_ways || r.stats.rounds_ahead === 0) continue;
        other_ways = true;
        const off = await run([...args, '--decode-ahead', '0']);
        assert.deepEqual(off.tokens, r.tokens);
        assert.deepEqual(off.stats.accepted_per_round, r.stats.accepted_per_round);
        assert.equal(off.stats.rounds_ahead, 0);
        if (adaptive) {
          const mixed = await run([...ask('adaptive'), '--round-ahead', '0']);
          assert.deepEqual(mixed.tokens, r.tokens);
          assert.equal(mixed.stats.rounds_ahead, 0);
        }
      }
      assert.ok(ahead > 0, 'rounds were recorded ahead');
      assert.ok(other_ways, 'a trace with rounds recorded ahead ran again another way');
    });
  }
}

// An assistant's own KV head fields are not used: its query-only layers read the donor's KV heads.
// The same weights under a config that declares 4 KV heads everywhere (moe_keqv's donors have 2
// and 1) draft, verify and accept the same on WebGPU.
test('moe_keqv/assistant_plain: webgpu rounds do not depend on the config\'s own KV heads', async () => {
  const dir = join(models, 'moe_keqv');
  const other = mkdtempSync(join(tmpdir(), 'g4-kv-'));
  try {
    cpSync(join(dir, 'assistant_plain'), other, { recursive: true });
    const config = JSON.parse(readFileSync(join(other, 'config.json'), 'utf8'));
    const t = config.text_config;
    t.num_key_value_heads = t.num_global_key_value_heads = 4;
    t.attention_k_eq_v = !t.attention_k_eq_v;
    for (const layer of Object.values(t.per_layer_config ?? {})) layer.num_key_value_heads = 4;
    writeFileSync(join(other, 'config.json'), JSON.stringify(config));
    const ag = JSON.parse(readFileSync(join(dir, 'assistant_plain', 'golden.json'), 'utf8'));
    for (const tr of ag.traces.slice(0, 2)) {
      const args = ['generate', '--model', dir, '--draft-tokens', '3', '--draft-policy', 'fixed', '--prompt-ids',
                    tr.prompt_ids.join(','), '--max-new-tokens', String(tr.max_new_tokens), '--json'];
      const a = await run([...args, '--assistant', join(dir, 'assistant_plain')]);
      const b = await run([...args, '--assistant', other]);
      assert.deepEqual(b.tokens, a.tokens);
      assert.deepEqual(b.stats.accepted_per_round, a.stats.accepted_per_round);
      assert.deepEqual(b.stats.drafted_per_round, a.stats.drafted_per_round);
      assert.ok(a.stats.accepted > 0);
    }
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
});
