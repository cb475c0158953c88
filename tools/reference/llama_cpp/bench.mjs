// The llama.cpp peer figures for bench: prefill and greedy decode through node-llama-cpp (the npm
// package that ships llama.cpp's prebuilt CPU, CUDA and Vulkan builds) on a GGUF that to_gguf.py
// made from the same folder `gemma4 synth` writes. Prints one JSON object a line.
//
//   node tools/reference/llama_cpp/bench.mjs --gguf FILE [--gpu cuda|vulkan|cpu]
//       [--prompt-tokens 512] [--decode-tokens 64] [--reps 3] [--flash-attention auto|on|off]
//       [--threads N] [--modules DIR] [--golden golden.json]
//
// - One context serves every rep (its history cleared between them), so that llama.cpp's
//   per-context GPU state (cuBLAS handles, memory pools, CUDA graphs) is set up in the warm-up
//   rep, which is not counted.
// - prefill: the time from handing over the prompt to its first greedy token (the whole prompt in
//   one batch); decode: tokens a second over the greedy tokens after that one. Medians over reps.
//   Greedy is node-llama-cpp's temperature 0 (a greedy sampler, no penalties); the eos does not
//   stop a rep short of its tokens without saying so (`stopped_early`).
// - --flash-attention: `auto` lets llama.cpp check that its device supports it, `on` asks for it
//   regardless; what llama.cpp warns of (an op that falls back to the CPU) goes to stderr.
// - --golden: instead of timing, generates each golden prompt's greedy tokens (its eos included)
//   and prints how many agree with the reference's before the first that differs, with the
//   reference's margin between its two best logits there.
// - --threads: the CPU threads llama.cpp computes with (default: node-llama-cpp's choice, which
//   can exceed the cores a small machine has free).
// - --modules: the node_modules that holds node-llama-cpp (default .peers/llama/node_modules).
import { parseArgs } from 'node:util';
import { readFileSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { resolve, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const { values: o } = parseArgs({ options: {
  gguf: { type: 'string' }, gpu: { type: 'string', default: 'cuda' },
  'prompt-tokens': { type: 'string', default: '512' }, 'decode-tokens': { type: 'string', default: '64' },
  reps: { type: 'string', default: '3' }, threads: { type: 'string' }, 'flash-attention': { type: 'string', default: 'auto' },
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
const flash = { auto: 'auto', on: true, off: false }[o['flash-attention']];
if (flash === undefined) fail(`--flash-attention must be auto, on or off, got '${o['flash-attention']}'`);
const promptTokens = count('prompt-tokens'), decodeTokens = count('decode-tokens'), reps = count('reps');
const threads = o.threads === undefined ? 0 : count('threads');
const say = (kv) => console.log(JSON.stringify(kv));

const modules = resolve(o.modules);
const entry = join(modules, 'node-llama-cpp', 'dist', 'index.js');
const { getLlama } = await import(pathToFileURL(entry)).catch((e) => fail(`${entry}: ${e.message}`));

// The libraries a build links that this machine's loader does not find.
function missingLibraries() {
  const bins = join(modules, '@node-llama-cpp', `linux-x64${o.gpu === 'cpu' ? '' : `-${o.gpu}`}`, 'bins');
  try {
    const dir = join(bins, readdirSync(bins)[0]);
    const libs = readdirSync(dir).filter((f) => f.endsWith('.so') || f.endsWith('.node')).map((f) => join(dir, f));
    const out = spawnSync('ldd', libs, { encoding: 'utf8' }).stdout ?? '';
    return [...new Set(out.split('\n').filter((l) => l.includes('not found')).map((l) => l.trim().split(' ')[0]))];
  } catch (e) {
    return [`${bins}: ${e.message}`];
  }
}

const llama = await getLlama({ gpu: o.gpu === 'cpu' ? false : o.gpu, build: 'never', skipDownload: true, logLevel: 'warn' })
  .catch((e) => fail(`no ${o.gpu} build of llama.cpp runs here (${e.name}: ${e.message}); ` +
                     `libraries not found: ${missingLibraries().join(', ') || 'none'}`));
const model = await llama.loadModel({ modelPath: resolve(o.gguf), gpuLayers: o.gpu === 'cpu' ? 0 : 'max' })
  .catch((e) => fail(`${o.gguf}: ${e.message}`));
if (o.gpu !== 'cpu' && model.gpuLayers === 0) fail(`${o.gguf}: llama.cpp put no layer on the ${o.gpu} device`);
const vocab = Number(model.fileInfo.tensorInfo?.find((t) => t.name === 'token_embd.weight')?.dimensions?.[1]);
if (!(vocab > 16)) fail(`${o.gguf}: no token_embd.weight with a vocabulary of more than 16 ids`);

// One context for the longest generation asked for; each generation clears its history first.
async function makeContext(tokens, batch) {
  return model.createContext({ contextSize: tokens + 16, batchSize: batch, sequences: 1, flashAttention: flash,
                               ...(threads ? { threads } : {}) });
}
async function generate(sequence, prompt, n) {
  await sequence.clearHistory();
  const tokens = [], at = [];
  const start = performance.now();
  for await (const t of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
    tokens.push(t);
    at.push(performance.now() - start);
    if (tokens.length >= n) break;
  }
  return { tokens, at };
}

say({ peer: 'llama.cpp', via: 'node-llama-cpp', gpu: llama.gpu, gguf: o.gguf, flash_attention: o['flash-attention'],
      vocab, gpu_layers: model.gpuLayers, threads: threads || 'default' });
if (o.golden) {
  const golden = JSON.parse(readFileSync(o.golden, 'utf8'));
  const longest = Math.max(...golden.prompts.map((p) => p.prompt_ids.length + p.greedy_tokens.length));
  const context = await makeContext(longest, Math.max(...golden.prompts.map((p) => p.prompt_ids.length)));
  const sequence = context.getSequence();
  for (const p of golden.prompts) {
    const { tokens } = await generate(sequence, p.prompt_ids, p.greedy_tokens.length);
    let same = 0;
    while (same < tokens.length && tokens[same] === p.greedy_tokens[same]) same++;
    say({ golden: o.golden, prompt_tokens: p.prompt_ids.length, agree: same, of: p.greedy_tokens.length,
          reference_margin_there: same < p.greedy_tokens.length ? p.margins?.[same] ?? null : null });
  }
  await context.dispose();
} else {
  // A fixed prompt of ordinary ids (past the first 16, which hold the special ones).
  let x = 12345;
  const prompt = Array.from({ length: promptTokens }, () => 16 + ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % (vocab - 16)));
  const context = await makeContext(promptTokens + decodeTokens + 1, promptTokens);
  const sequence = context.getSequence();
  const prefill = [], decode = [];
  let stoppedEarly = false;
  for (let r = 0; r <= reps; r++) {
    const { tokens, at } = await generate(sequence, prompt, decodeTokens + 1);
    if (tokens.length < decodeTokens + 1) stoppedEarly = true;
    if (r === 0) continue;  // the warm-up
    prefill.push(at[0]);
    if (tokens.length > 1) decode.push((tokens.length - 1) / ((at[at.length - 1] - at[0]) / 1000));
  }
  await context.dispose();
  const median = (a) => (a.length ? [...a].sort((p, q) => p - q)[a.length >> 1] : NaN);
  say({ prefill_ms: +median(prefill).toFixed(2), prefill_tokens_per_s: Math.round(promptTokens / (median(prefill) / 1000)),
        decode_tokens_per_s: +median(decode).toFixed(1), prompt_tokens: promptTokens, decode_tokens: decodeTokens,
        reps, stopped_early: stoppedEarly, prefill_all_ms: prefill.map((v) => +v.toFixed(2)),
        decode_all: decode.map((v) => +v.toFixed(1)) });
}
await model.dispose();
await llama.dispose();
