#!/usr/bin/env node
// This runtime and its peers on one GPU machine, one after the other in one run, on the same
// synthetic E2B pair, ending in one table (docs/PERFORMANCE.md keeps one a run):
//   1. this runtime's bench (Node + Dawn, validation off) on the bf16 pair and its q4 export;
//   2. transformers (tools/reference/bench_transformers.py: prefill, decode, assisted);
//   3. llama.cpp through node-llama-cpp (tools/reference/llama_cpp/gpu_bench.sh: bf16 GGUF,
//      CUDA and Vulkan), when unpack.sh has put it in /tmp/llama-gpu; and llama.cpp's own
//      llama-bench on CUDA (cuda_bench.sh), when cuda_build.sh's folder is carried
//      (.peers/llama/cuda/carry);
//   4. this runtime's bf16 bench again, so that a drift of the machine over the run shows.
// Each run's output is kept in WORK/peers-N-NAME.txt.
//
//   node scripts/bench-peers.mjs [--work /tmp/e2b] [--native build/gemma4] [--prompt-tokens 512]
//       [--decode-tokens 64] [--only ours,transformers,llama]
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseOurs, parseTransformers, parseLlama } from './peers_parse.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({ options: {
  work: { type: 'string', default: '/tmp/e2b' }, native: { type: 'string', default: join(root, 'build', 'gemma4') },
  'prompt-tokens': { type: 'string', default: '512' }, 'decode-tokens': { type: 'string', default: '64' },
  only: { type: 'string', default: 'ours,transformers,llama' },
} });
const only = new Set(o.only.split(','));
for (const w of only) if (!['ours', 'transformers', 'llama'].includes(w)) throw new Error(`--only: no peer '${w}'`);
const work = resolve(o.work), P = o['prompt-tokens'], D = o['decode-tokens'];
mkdirSync(work, { recursive: true });
const bf16 = join(work, 'bf16'), assistant = join(work, 'bf16-a'), q4 = join(work, 'q4');

let n = 0;
// Runs one step, keeps its output in WORK; its stdout, or (failed) its output's tail printed and
// what stdout it gave, or null where `strict`.
function run(name, cmd, args, env = {}, strict = false) {
  const started = Date.now();
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 28, env: { ...process.env, ...env } });
  const out = `${r.stdout ?? ''}${r.stderr ? `\n--- stderr\n${r.stderr}` : ''}${r.error ? `\n--- ${r.error.message}` : ''}`;
  writeFileSync(join(work, `peers-${++n}-${name}.txt`), out);
  console.log(`== ${name}: exit ${r.status ?? r.signal ?? r.error?.code}, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (r.status === 0) return r.stdout;
  console.log(out.slice(-2000));
  return strict ? null : r.stdout ?? '';
}

// The pair and its q4 export, made once and kept in WORK for later runs; without them nothing
// after can run, so a failure here ends the run.
function prepare(name, args) {
  if (run(name, o.native, args, {}, true) === null) {
    console.error(`bench-peers: ${name} (${o.native} ${args[0]}) failed; its output is in ${work}`);
    process.exit(1);
  }
}
if (!existsSync(join(bf16, 'model.safetensors'))) prepare('synth', ['synth', '--shape', 'e2b', '--out', bf16]);
if ((only.has('ours') || only.has('transformers')) && !existsSync(join(assistant, 'model.safetensors'))) prepare('synth-assistant', ['synth', '--shape', 'e2b-assistant', '--out', assistant]);
if (only.has('ours') && !existsSync(q4)) prepare('export-q4', ['export', '--model', bf16, '--assistant', assistant, '--quant', 'q4', '-o', q4]);

const rows = [];
const ours = (label, model, asst) => {
  const out = run(`ours-${label.replace(/\W+/g, '-')}`, process.execPath, [join(root, 'bin', 'gemma4.mjs'), 'bench', '--model', model, '--assistant', asst,
                  '--prompt-tokens', P, '--decode-tokens', D, '--gpu-validation', 'off']);
  const figures = parseOurs(out);
  if ([figures.prefill, figures.decode, figures.stepMs].some(Number.isFinite)) rows.push({ who: `this runtime, ${label}`, ...figures });
};
if (only.has('ours')) {
  ours('bf16', bf16, assistant);
  ours('q4', q4, join(q4, 'assistant'));
}
if (only.has('transformers')) {
  const out = run('transformers', 'python3', [join(root, 'tools', 'reference', 'bench_transformers.py'), '--model', bf16,
                  '--assistant', assistant, '--prompt-tokens', P, '--decode-tokens', String(Math.min(Number(D), 32)), '--reps', '3']);
  rows.push(...parseTransformers(out));
}
if (only.has('llama')) {
  const tools = join(root, 'tools', 'reference', 'llama_cpp');
  if (!existsSync('/tmp/llama-gpu/env.sh')) console.log('== llama.cpp: not unpacked (tools/reference/llama_cpp/unpack.sh), left out');
  else rows.push(...parseLlama(run('llama.cpp', 'bash', [join(tools, 'gpu_bench.sh'), bf16, '--prompt-tokens', P, '--decode-tokens', D])));
  if (!existsSync(join(root, '.peers', 'llama', 'cuda', 'carry', 'llama-bench'))) {
    console.log('== llama.cpp on CUDA (llama-bench): not carried (tools/reference/llama_cpp/cuda_build.sh), left out');
  } else {
    rows.push(...parseLlama(run('llama.cpp-cuda', 'bash', [join(tools, 'cuda_bench.sh'), bf16, '--prompt-tokens', P, '--decode-tokens', D])));
  }
}
if (only.has('ours')) ours('bf16, again', bf16, assistant);

const cell = (v, digits = 0) => (v === undefined || v === null || Number.isNaN(v) ? '' : Number(v).toLocaleString('en-US', { maximumFractionDigits: digits }));
console.log(`\n${P} prompt tokens, ${D} decoded; GPU figures are timestamps around each submit's pass\n`);
console.log('| who | prefill tokens/s | decode tokens/s | GPU step ms | round ms (x step) | with the assistant tokens/s |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const round = r.roundMs ? `${cell(r.roundMs, 3)} (${cell(r.roundMs / r.stepMs, 2)}x)` : '';
  const assisted = [r.fixed && `fixed ${cell(r.fixed, 1)}`, r.adaptive && `adaptive ${cell(r.adaptive, 1)}`, r.assisted && cell(r.assisted, 1)]
    .filter(Boolean).join(', ');
  console.log(`| ${r.who} | ${cell(r.prefill)} | ${cell(r.decode, 1)} | ${cell(r.stepMs, 3)} | ${round} | ${assisted} |`);
}
if (rows.length === 0) {
  console.error(`bench-peers: no run gave figures; each run's output is in ${work}`);
  process.exit(1);
}
