// Choosing tokens on WebGPU (Dawn on lavapipe) through the JS API: weights holding NaN reject the
// request with the error naming the position (the argmax and top-k kernels flag the row) and the
// runtime serves the next; drafts from a NaN assistant are rejected; temperatures from the
// smallest float to 1000 give tokens, small ones greedy's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cli.mjs';

const models = join(root, 'testdata', 'models');
const notFinite = (position) => new RegExp(`logits at position ${position} are not finite; the weights may be corrupt`);

// model.safetensors's bytes with `count` elements of float tensor `name` from `first` set to NaN.
function withNaN(file, name, first = 0, count = 1) {
  const bytes = new Uint8Array(readFileSync(file));
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const t = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)))[name];
  const nan = { BF16: [0xc0, 0x7f], F16: [0x00, 0x7e], F32: [0x00, 0x00, 0xc0, 0x7f] }[t.dtype];
  assert.ok(nan, `${name}: ${t.dtype}`);
  const at = 8 + n + t.data_offsets[0];
  for (let i = first; i < first + count; ++i) bytes.set(nan, at + i * nan.length);
  return bytes;
}

// A model's files as the API takes them (Blobs by name), `name` (when given) holding a NaN.
function files(dir, name) {
  const out = {};
  for (const f of ['config.json', 'generation_config.json', 'model.safetensors']) {
    if (existsSync(join(dir, f))) out[f] = new Blob([readFileSync(join(dir, f))]);
  }
  if (name) out['model.safetensors'] = new Blob([withNaN(join(dir, 'model.safetensors'), name)]);
  return out;
}

test('WebGPU: NaN weights reject the request and the runtime serves the next; small temperatures are greedy',
     { timeout: 240000 }, async () => {
  const { createGemma4Mtp } = await import(join(root, 'dist', 'gemma4-mtp.mjs'));
  const messages = [{ role: 'user', content: 'Hi' }];
  const g = await createGemma4Mtp();
  // demo: a vocabulary of 6144, which the argmax and top-k kernels take in two passes; greedy
  // speculative rounds run on the GPU, sampled ones on the host.
  const demo = join(models, 'demo');
  await g.load({ target: files(demo, 'model.layers.1.post_feedforward_layernorm.weight'),
                 assistant: files(join(demo, 'assistant')), tokenizer: join(demo, 'tokenizer.json') });
  for (const sampling of [{ temperature: 0 }, { temperature: 1, top_k: 5, mtp: false }, { temperature: 1 }]) {
    await assert.rejects(g.chat.completions.create({ messages, max_tokens: 4, seed: 1, ...sampling }), notFinite('\\d+'),
                         JSON.stringify(sampling));
  }
  await assert.rejects(async () => {
    for await (const _ of await g.chat.completions.create({ messages, max_tokens: 4, stream: true })) { /* none */ }
  }, notFinite('\\d+'));
  await g.unload();
  assert.equal(g.stats().gpu_buffers, 0);

  // e2b_mini with an assistant whose logits are NaN (the centroid head's keyed argmax flags them):
  // no draft is accepted, and every small temperature gives the greedy text.
  const model = join(models, 'e2b_mini');
  await g.load({ target: model, assistant: files(join(model, 'assistant_centroid'), 'model.layers.0.mlp.down_proj.weight'),
                 tokenizer: join(root, 'testdata/tokenizers/mini/tokenizer.json') });
  const n = 6;
  const greedy = (await g.chat.completions.create({ messages, max_tokens: n, temperature: 0, mtp: false })).choices[0].message.content;
  for (const sampling of [{ temperature: 0 }, { temperature: 1e-45, mtp: false }, { temperature: 1e-20, top_k: 40, mtp: false },
                          { temperature: 1e-30 }]) {
    const r = await g.chat.completions.create({ messages, max_tokens: n, seed: 1, ...sampling });
    assert.equal(r.choices[0].message.content, greedy, JSON.stringify(sampling));
    assert.equal(r.usage.speculative.accepted, 0, JSON.stringify(sampling));
  }
  const hot = await g.chat.completions.create({ messages, max_tokens: n, temperature: 1000, top_k: 40, seed: 1 });
  assert.equal(hot.usage.completion_tokens, n);
  assert.ok(hot.usage.speculative.drafted > 0);
  assert.equal(hot.usage.speculative.accepted, 0);
  await g.unload();
});
