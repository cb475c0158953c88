#!/usr/bin/env node
// Writes testdata/tokenizers/mini/tokenizer.json: a Gemma 4 style tokenizer (BPE with byte
// fallback, <|turn>/<turn|> chat tokens, the same specials at the same ids) whose 512 ids fit the
// bundled test models, so text prompts and the chat API run on them. Its merges are learnt here,
// deterministically, from the sentences below.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const VOCAB = 512;
const CORPUS = `The quick brown fox jumps over the lazy dog. Hello there, how are you today?
What is the capital of France? The capital of France is Paris. Tell me a story about a cat.
Once upon a time there was a small model that ran in the browser on the graphics card.
It read its weights from the network, kept them in the cache and answered every question.
Speculative decoding drafts tokens with a small assistant and the target verifies them.`;

const specials = ['<pad>', '<eos>', '<bos>', '<unk>', '<mask>'];
const vocab = new Map(specials.map((s, i) => [s, i]));
const add = (piece) => { if (!vocab.has(piece)) vocab.set(piece, vocab.size); };
for (let c = 32; c < 127; c++) add(c === 32 ? '\u2581' : String.fromCharCode(c));
add('\n');
for (let i = 0; vocab.size < 105; i++) add(`<unused${i}>`);
add('<|turn>');
add('<turn|>');
for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);

// Byte-pair merges over the corpus's words (spaces as U+2581 starting a word), most frequent first,
// ties broken by the pair's text.
let words = CORPUS.replace(/\n/g, ' ').split(' ').filter(Boolean).map((w) => ['\u2581', ...w]);
const merges = [];
while (vocab.size < VOCAB) {
  const counts = new Map();
  for (const w of words) {
    for (let i = 0; i + 1 < w.length; i++) {
      const key = `${w[i]} ${w[i + 1]}`;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
  }
  const best = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
  if (!best) break;
  const [l, r] = best[0].split(' ');
  merges.push([l, r]);
  add(l + r);
  words = words.map((w) => {
    const out = [];
    for (let i = 0; i < w.length; i++) {
      if (i + 1 < w.length && w[i] === l && w[i + 1] === r) { out.push(l + r); i++; } else out.push(w[i]);
    }
    return out;
  });
}
for (let i = 0; vocab.size < VOCAB; i++) add(`<unused_tail${i}>`);

const special = (content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
                                    special: true });
const json = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [...specials, '<|turn>', '<turn|>'].map((s) => special(s, vocab.get(s))),
  normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
  pre_tokenizer: { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<bos>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<bos>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
           { SpecialToken: { id: '<bos>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<bos>': { id: '<bos>', ids: [2], tokens: ['<bos>'] } },
  },
  decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
                                          { type: 'ByteFallback' }, { type: 'Fuse' }] },
  model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab: Object.fromEntries(vocab), merges },
};
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'testdata', 'tokenizers', 'mini', 'tokenizer.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(json, null, 1) + '\n');
console.log(`${out}: ${vocab.size} ids, ${merges.length} merges`);
