#!/usr/bin/env node
// Benchmarks the four builds of dist/ through the JavaScript API (Node; WebGPU through Dawn):
// for each build, one load and a greedy chat completion, with prefill and decode speed, time to
// first token, the speculative counters (mtp builds) and the kernel profile (profile builds).
// A build whose artifacts or source record are missing or stale (scripts/manifest.mjs) is
// reported as "pending", never with another build's figures.
//   node scripts/bench-web.mjs [--dist DIR] [--model DIR] [--assistant DIR] [--tokenizer FILE]
//                              [--prompt TEXT] [--tokens N] [--backend webgpu|cpu] [--sample] [--json]
// --sample adds sampled decoding (temperature 1): top-k 64 (picked on the GPU) and whole rows.
//   node scripts/bench-web.mjs --sweep [--draft-tokens-sweep A-B] [--prompts FILE] [--tokens N] [--backend webgpu|cpu]
//                              [--dist DIR] [--model DIR] [--assistant DIR] [--tokenizer FILE] [--json]
// --sweep measures speculative decoding end to end through the mtp build, as `gemma4 bench
// --draft-tokens-sweep` does (docs/CLI.md): a fixed set of chat prompts, greedy, N new tokens each
// (64 by default), decoded plain and with the assistant for each K in A..B (1-4 by default) under
// the fixed draft policy, then under the adaptive one at K = B; by default on the demo pair.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILDS, ROOT, verifyManifest } from './manifest.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const dist = opt('dist', join(ROOT, 'dist'));
const sweep = args.includes('--sweep') || args.includes('--draft-tokens-sweep');
const model = opt('model', join(ROOT, sweep ? 'testdata/models/demo' : 'testdata/models/e2b_mini'));
const assistant = opt('assistant', join(model, sweep ? 'assistant' : 'assistant_centroid'));
const tokenizer = opt('tokenizer', args.includes('--model') || sweep ? undefined : join(ROOT, 'testdata/tokenizers/mini/tokenizer.json'));
const prompt = opt('prompt', 'Tell me a story about a cat.');
const tokens = Number(opt('tokens', sweep ? 64 : 32));
const backend = opt('backend', 'webgpu');

const verdict = verifyManifest(dist);
if (sweep) {
  const mtp = BUILDS.find((b) => b.mtp && !b.profile);
  if (verdict.builds[mtp.name] !== 'ok') {
    console.error(`bench-web: the ${mtp.name} build is ${verdict.builds[mtp.name]} (scripts/build-web.sh)`);
    process.exit(1);
  }
  const { runSweep, printSweep } = await import('./bench-sweep.mjs');
  const mod = await import(pathToFileURL(join(dist, `${mtp.file}.mjs`)).href);
  const factory = Object.values(mod).find((f) => typeof f === 'function');
  let result;
  try {
    result = await runSweep(factory, { backend, model, assistant, tokenizer, tokens,
                                       range: opt('draft-tokens-sweep', '1-4'), promptsFile: opt('prompts') });
  } catch (e) {
    console.error(`bench-web: ${e.message}`);
    process.exit(1);
  }
  console.log(args.includes('--json') ? JSON.stringify(result) : printSweep(result));
  process.exit(0);
}
const report = [];
for (const b of BUILDS) {
  const state = verdict.builds[b.name];
  if (state !== 'ok') {
    report.push({ build: b.name, status: state });
    continue;
  }
  const mod = await import(pathToFileURL(join(dist, `${b.file}.mjs`)).href);
  const factory = Object.values(mod).find((f) => typeof f === 'function');
  const rt = await factory({ backend });
  const t0 = performance.now();
  await rt.load({ target: model, ...(b.mtp ? { assistant } : {}), ...(tokenizer ? { tokenizer } : {}) });
  const loadMs = performance.now() - t0;
  const messages = [{ role: 'user', content: prompt }];
  await rt.chat.completions.create({ messages, max_tokens: 2, temperature: 0 });  // kernels compiled
  const r = await rt.chat.completions.create({ messages, max_tokens: tokens, temperature: 0 });
  const u = r.usage;
  const row = { build: b.name, status: 'ok', load_ms: loadMs, prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens, prefill_tokens_per_s: u.prefill_tokens_per_s,
                decode_tokens_per_s: u.decode_tokens_per_s, time_to_first_token_ms: u.time_to_first_token_ms };
  if (b.mtp) Object.assign(row, { rounds: u.speculative.rounds, acceptance_rate: u.speculative.acceptance_rate });
  if (args.includes('--sample')) {
    const sampled = async (extra) => (await rt.chat.completions.create({ messages, max_tokens: tokens, temperature: 1, seed: 1,
                                                                         mtp: false, ...extra })).usage.decode_tokens_per_s;
    row.sampled_top_k_64_tokens_per_s = await sampled({ top_k: 64, top_p: 0.95 });
    row.sampled_whole_rows_tokens_per_s = await sampled({ top_k: 0, top_p: 1 });
  }
  if (b.profile) {
    const p = rt.stats().profile;
    row.profile = { supported: p.supported, fresh: p.fresh, total_kernel_ms: p.total_kernel_ms,
                    top: Object.entries(p.ops).slice(0, 5).map(([k, v]) => `${k} ${v.ms.toFixed(2)} ms/${v.calls}`) };
  }
  await rt.unload();
  report.push(row);
}
if (args.includes('--json')) {
  console.log(JSON.stringify(report));
} else {
  for (const r of report) {
    if (r.status !== 'ok') {
      console.log(`${r.build.padEnd(14)} ${r.status}`);
      continue;
    }
    let line = `${r.build.padEnd(14)} load ${r.load_ms.toFixed(0)} ms, prefill ${r.prefill_tokens_per_s.toFixed(1)} tok/s ` +
      `(${r.prompt_tokens} tokens), decode ${r.decode_tokens_per_s.toFixed(1)} tok/s (${r.completion_tokens}), ` +
      `first token ${r.time_to_first_token_ms.toFixed(0)} ms`;
    if (r.rounds !== undefined) line += `, ${r.rounds} rounds, acceptance ${(100 * r.acceptance_rate).toFixed(1)}%`;
    if (r.sampled_top_k_64_tokens_per_s !== undefined) {
      line += `\n${''.padEnd(15)}sampled decode: top-k 64 ${r.sampled_top_k_64_tokens_per_s.toFixed(1)} tok/s, ` +
        `whole rows ${r.sampled_whole_rows_tokens_per_s.toFixed(1)} tok/s`;
    }
    if (r.profile) line += `\n${''.padEnd(15)}kernels ${r.profile.total_kernel_ms.toFixed(2)} ms: ${r.profile.top.join(', ')}`;
    console.log(line);
  }
}
