// The Node CLI (bin/gemma4.mjs: the C++ core compiled to WebAssembly) keeps the native contract:
// the same greedy tokens as the reference goldens, speculative decoding equal to plain decoding,
// the same tokenizer ids as the reference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emittedDrafts, runJson, root, cli } from './cli.mjs';

const models = join(root, 'testdata', 'models');

const run = runJson;

for (const name of readdirSync(models).sort()) {
  const dir = join(models, name);
  if (!existsSync(join(dir, 'golden.json'))) continue;
  const golden = JSON.parse(readFileSync(join(dir, 'golden.json'), 'utf8'));
  test(`${name}: greedy tokens equal the reference`, () => {
    for (const p of golden.prompts) {
      const r = run(['generate', '--model', dir, '--prompt-ids', p.prompt_ids.join(','), '--max-new-tokens',
                     String(golden.max_new_tokens), '--backend', 'cpu', '--json']);
      assert.deepEqual(r.tokens, p.greedy_tokens);
      assert.equal(r.stop_reason, p.stop_reason);
      assert.equal(r.stats.backend, 'cpu');
    }
  });
  for (const a of readdirSync(dir).filter((f) => f.startsWith('assistant_')).sort()) {
    const ag = JSON.parse(readFileSync(join(dir, a, 'golden.json'), 'utf8'));
    test(`${name}/${a}: speculative rounds equal the reference`, () => {
      for (const t of ag.traces) {
        const r = run(['generate', '--model', dir, '--assistant', join(dir, a), '--draft-tokens', '2',
                       '--draft-policy', 'fixed', '--prompt-ids', t.prompt_ids.join(','), '--max-new-tokens',
                       String(t.max_new_tokens), '--backend', 'cpu', '--json']);
        assert.deepEqual(r.tokens, t.k2.tokens);
        assert.deepEqual(r.stats.accepted_per_round, emittedDrafts(t.k2.rounds, t.k2.tokens, r.stop_reason));
      }
    });
  }
}

test('tokenize equals the reference ids', () => {
  const tok = join(root, 'node_modules', '@lenml', 'tokenizer-gemma3', 'models', 'tokenizer.json');
  const corpus = JSON.parse(readFileSync(join(root, 'testdata', 'tokenizer', 'corpus.json'), 'utf8'));
  const golden = JSON.parse(readFileSync(join(root, 'testdata', 'tokenizer', 'golden.json'), 'utf8'));
  const dir = mkdtempSync(join(tmpdir(), 'g4js-'));
  for (const i of [2, 3, 10, 13, 45, 60, 90]) {
    const file = join(dir, `t${i}.txt`);
    writeFileSync(file, corpus[i]);
    const r = run(['tokenize', '--tokenizer', tok, '--text-file', file, '--json']);
    assert.deepEqual(r.ids, golden.gemma3[i].ids, `text ${i}`);
  }
});

test('webgpu is the default backend of the Node CLI', () => {
  const r = run(['generate', '--model', join(models, 'dense'), '--prompt-ids', '2,7', '--max-new-tokens', '3', '--json']);
  assert.equal(r.stats.backend, 'webgpu');
  assert.ok(r.stats.gpu_fill >= 1, `gpu_fill ${r.stats.gpu_fill}`);
});

test('--gpu-fill pins the fill: a seeded sampled run repeats; it goes with webgpu only', () => {
  const sampled = ['generate', '--model', join(models, 'dense'), '--assistant', join(models, 'dense', 'assistant_plain'),
                   '--prompt-ids', '2,7,9', '--max-new-tokens', '12', '--temperature', '1.5', '--seed', '4', '--json'];
  const a = run([...sampled, '--gpu-fill', '3']), b = run([...sampled, '--gpu-fill', '3']);
  assert.equal(a.stats.gpu_fill, 3);
  assert.deepEqual(a.tokens, b.tokens);
  const r = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, 'dense'), '--prompt-ids', '2',
                                         '--backend', 'cpu', '--gpu-fill', '3'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /--gpu-fill goes with --backend webgpu/);
  const big = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, 'dense'), '--prompt-ids', '2',
                                           '--gpu-fill', '70000'], { encoding: 'utf8' });
  assert.equal(big.status, 1);
  assert.match(big.stderr, /--gpu-fill must be an integer in \[0, 65536\]/);
});

test('--gpu-validation off gives the reference tokens; a value other than on or off is an error', () => {
  const golden = JSON.parse(readFileSync(join(models, 'dense', 'golden.json'), 'utf8'));
  const p = golden.prompts[0];
  for (const flag of [['--gpu-validation', 'off'], ['--gpu-validation=off'], ['--gpu-validation', 'on']]) {
    const r = run(['generate', '--model', join(models, 'dense'), '--prompt-ids', p.prompt_ids.join(','), '--max-new-tokens',
                   String(golden.max_new_tokens), ...flag, '--json']);
    assert.equal(r.stats.backend, 'webgpu');
    assert.deepEqual(r.tokens, p.greedy_tokens, flag.join(' '));
  }
  for (const bad of [['--gpu-validation', 'no'], ['--gpu-validation']]) {
    const r = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, 'dense'), '--prompt-ids', '2', ...bad],
                        { encoding: 'utf8' });
    assert.equal(r.status, 2, bad.join(' '));
    assert.match(r.stderr, /--gpu-validation takes on or off/);
  }
});

test('errors come back as messages and exit codes', () => {
  const r = spawnSync(process.execPath, [cli, 'generate', '--model', '/nonexistent', '--prompt-ids', '2', '--backend', 'cpu'],
                      { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /\/nonexistent\/config\.json/);
  const u = spawnSync(process.execPath, [cli, 'frobnicate'], { encoding: 'utf8' });
  assert.equal(u.status, 2);
});

test('on the CPU backend in WebAssembly, a cache past what 32-bit sizes hold is refused, not wrapped', () => {
  // 2^24 positions of a 64-float row are 4 GiB, past what a 32-bit size holds.
  for (const [name, n] of [['e2b_mini', '16777213'], ['demo', '8388608']]) {
    const r = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, name), '--prompt-ids', '2,5,6',
                                           '--max-new-tokens', n, '--backend', 'cpu'], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /cache: \d+ positions of layer \d+ take \d+ bytes for keys and as many for values, more than this build can address/);
    assert.equal(r.stdout.trim(), '', 'no token printed');
  }
});

test('on the CPU backend in WebAssembly, a cache past the memory left is refused with what it needs', () => {
  // The demo's full-attention layer at 4,190,003 positions: 2.1 GB each for keys and values,
  // addressable but not both within WebAssembly's 4 GiB.
  const r = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, 'demo'), '--prompt-ids', '2,5,6',
                                         '--max-new-tokens', '4190000', '--backend', 'cpu'], { encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /cache: a context of 4190003 positions needs \d+ bytes of keys and values \(cpu: cannot allocate \d+ bytes\); ask for a shorter prompt, fewer new tokens or a smaller context/);
  assert.equal(r.stdout.trim(), '', 'no token printed');
});

test('a context whose cache does not fit one binding is refused before anything is made', () => {
  const r = spawnSync(process.execPath, [cli, 'generate', '--model', join(models, 'e2b_mini'), '--prompt-ids', '2',
                                         '--max-new-tokens', '16000000', '--backend', 'webgpu'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /a context of 16000001 tokens needs \d+ MiB of K\/V cache and activations in one buffer, but this adapter binds at most \d+ MiB \(maxStorageBufferBindingSize\); ask for a shorter prompt or fewer new tokens/);
  assert.equal(r.stdout, '');
});
