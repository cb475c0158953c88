// The llama.cpp peer figures for bench: prefill and greedy decode through node-llama-cpp (the npm
// package that ships llama.cpp's prebuilt CPU, CUDA and Vulkan builds) on a GGUF that to_gguf.py
// made from the same folder `gemma4 synth` writes. Prints one JSON object a line.
//
//   node tools/reference/llama_cpp/bench.mjs --gguf FILE [--gpu cuda|vulkan|cpu]
//       [--prompt-tokens 512] [--decode-tokens 64] [--reps 3] [--flash-attention on|off]
//       [--threads N] [--modules DIR] [--golden golden.json]
//
// - prefill: the time from handing over the prompt to its first greedy token (one batch of the
//   whole prompt); decode: tokens a second over the greedy tokens after that one. Each rep has a
//   context of its own; the figures are medians over reps after one warm-up.
// - --golden: instead of timing, generates each golden prompt's greedy tokens and prints how many
//   agree with the reference's before the first that differs, with the reference's margin there.
// - --threads: the CPU threads llama.cpp computes with (default: node-llama-cpp's choice, which
//   can exceed the cores a small machine has free).
// - --modules: the node_modules that holds node-llama-cpp (default .peers/llama/node_modules).
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values: o } = parseArgs({ options: {
  gguf: { type: 'string' }, gpu: { type: 'string', default: 'cuda' },
  'prompt-tokens': { type: 'string', default: '512' }, 'decode-tokens': { type: 'string', default: '64' },
  reps: { type: 'string', default: '3' }, threads: { type: 'string' }, 'flash-attention': { type: 'string', default: 'on' },
  modules: { type: 'string', default: '.peers/llama/node_modules' }, golden: { type: 'string' },
} });
const fail = (msg) => { console.error(`bench.mjs: ${msg}`); process.exit(2); };
const count = (name) => {
  const n = Number(o[name]);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got '${o[name]}'`);
  return n;
};
if (!o.gguf) fail('--gguf FILE is required');
if (!['cuda', 'vulkan', 'cpu'].includes(o.gpu)) fail(`--gpu must be cuda, vulkan or cpu, got '${o.gpu}'`);
if (!['on', 'off'].includes(o['flash-attention'])) fail(`--flash-attention must be on or off`);
const promptTokens = count('prompt-tokens'), decodeTokens = count('decode-tokens'), reps = count('reps');
const threads = o.threads === undefined ? 0 : count('threads');
const flashAttention = o['flash-attention'] === 'on';
const say = (kv) => console.log(JSON.stringify(kv));

const entry = join(resolve(o.modules), 'node-llama-cpp', 'dist', 'index.js');
const { getLlama } = await import(pathToFileURL(entry)).catch((e) => fail(`${entry}: ${e.message}`));
const llama = await getLlama({ gpu: o.gpu === 'cpu' ? false : o.gpu, build: 'never', skipDownload: true,
                               logLevel: 'error' })
  .catch((e) => fail(`no ${o.gpu} build of llama.cpp runs here (${e.message}); for cuda, source the env.sh unpack.sh wrote`));
const model = await llama.loadModel({ modelPath: resolve(o.gguf), gpuLayers: o.gpu === 'cpu' ? 0 : 'max' })
  .catch((e) => fail(`${o.gguf}: ${e.message}`));
if (o.gpu !== 'cpu' && model.gpuLayers === 0) fail(`${o.gguf}: llama.cpp put no layer on the ${o.gpu} device`);
const vocab = Number(model.fileInfo.tensorInfo?.find((t) => t.name === 'token_embd.weight')?.dimensions?.[1]);
if (!(vocab > 16)) fail(`${o.gguf}: no token_embd.weight with a vocabulary of more than 16 ids`);
say({ peer: 'llama.cpp', via: 'node-llama-cpp', gpu: llama.gpu, gguf: o.gguf, flash_attention: flashAttention,
      vocab, gpu_layers: model.gpuLayers, threads: threads || 'default' });

// Runs one greedy generation of `n` tokens after `prompt`; returns the tokens and the time of each.
async function generate(prompt, n) {
  const context = await model.createContext({ contextSize: prompt.length + n + 16, batchSize: prompt.length,
                                              sequences: 1, flashAttention, ...(threads ? { threads } : {}) });
  try {
    const tokens = [], at = [];
    const start = performance.now();
    for await (const t of context.getSequence().evaluate(prompt, { temperature: 0 })) {
      tokens.push(t);
      at.push(performance.now() - start);
      if (tokens.length >= n) break;
    }
    return { tokens, at };
  } finally {
    await context.dispose();
  }
}

if (o.golden) {
  const golden = JSON.parse(readFileSync(o.golden, 'utf8'));
  for (const p of golden.prompts) {
    const { tokens } = await generate(p.prompt_ids, p.greedy_tokens.length);
    let same = 0;
    while (same < tokens.length && tokens[same] === p.greedy_tokens[same]) same++;
    say({ golden: o.golden, prompt_tokens: p.prompt_ids.length, agree: same, of: p.greedy_tokens.length,
          reference_margin_there: same < p.greedy_tokens.length ? p.margins?.[same] ?? null : null });
  }
} else {
  // A fixed prompt of ordinary ids (past the first 16, which hold the special ones).
  let x = 12345;
  const prompt = Array.from({ length: promptTokens }, () => 16 + ((x = (x * 1103515245 + 12345) >>> 0) % (vocab - 16)));
  const prefill = [], decode = [];
  for (let r = 0; r <= reps; r++) {
    const { tokens, at } = await generate(prompt, decodeTokens + 1);
    if (r === 0) continue;
    prefill.push(at[0]);
    decode.push((tokens.length - 1) / ((at[at.length - 1] - at[0]) / 1000));
  }
  const median = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
  say({ prefill_ms: +median(prefill).toFixed(2), prefill_tokens_per_s: Math.round(promptTokens / (median(prefill) / 1000)),
        decode_tokens_per_s: +median(decode).toFixed(1), prompt_tokens: promptTokens, decode_tokens: decodeTokens,
        reps, prefill_all_ms: prefill.map((v) => +v.toFixed(2)), decode_all: decode.map((v) => +v.toFixed(1)) });
}
await model.dispose();
await llama.dispose();
