// Speculative decoding against plain decoding, end to end, through the JavaScript API (the mtp
// build), as `gemma4 bench --draft-tokens-sweep` measures it natively (src/cli/bench_sweep.cc,
// docs/CLI.md): the same prompts, greedy, a fixed number of new tokens each; for each K in A..B a
// load with draftTokens K and the fixed policy (every round drafts K), then the adaptive policy at
// K = B; plain and speculative requests alternate prompt by prompt. Used by scripts/bench-web.mjs --sweep.
import { readFileSync } from 'node:fs';

// Neutral questions in the register of the demo model's corpus (State of the Union addresses).
export const SWEEP_PROMPTS = ['Tell me about the economy.', 'What should we do about our schools?',
                              'What should Congress do this year?', 'How can we help working families?',
                              'What is the state of our union?'];

// "A-B" or "A" with 1 <= A <= B <= 8 (draftTokens' range).
export function parseRange(text) {
  const m = /^(\d{1,3})(?:-(\d{1,3}))?$/.exec(text ?? '');
  const lo = m ? Number(m[1]) : NaN, hi = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(lo >= 1 && hi <= 8 && lo <= hi)) {
    throw new Error(`--draft-tokens-sweep must be A-B (or A), integers with 1 <= A <= B <= 8, not '${text}'`);
  }
  return [lo, hi];
}

function readPrompts(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`--prompts ${path}: cannot read (${e.code ?? e.message})`);
  }
  const prompts = text.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim());
  if (!prompts.length) throw new Error(`${path}: --prompts holds no prompt (one a line)`);
  return prompts;
}

// Totals over the prompts of one configuration, from each request's usage.
function tally(usages) {
  let decoded = 0, ms = 0, rounds = 0, drafted = 0, accepted = 0;
  const acceptedAt = [], reached = [], roundsPerK = [];
  for (const u of usages) {
    const n = u.completion_tokens - 1;
    decoded += n;
    ms += u.decode_tokens_per_s > 0 ? (1000 * n) / u.decode_tokens_per_s : 0;
    const s = u.speculative;
    if (!s?.enabled) continue;
    rounds += s.rounds;
    drafted += s.drafted;
    accepted += s.accepted;
    (s.rounds_per_k ?? []).forEach((r, d) => {
      roundsPerK[d] = (roundsPerK[d] ?? 0) + r;
      for (let j = 0; j < d; j++) reached[j] = (reached[j] ?? 0) + r;  // a round of d drafts reaches 0..d-1
    });
    (s.accepted_per_position ?? []).forEach((a, j) => { acceptedAt[j] = (acceptedAt[j] ?? 0) + a; });
  }
  return { tokensPerS: ms > 0 ? (1000 * decoded) / ms : 0, tokensPerRound: rounds ? decoded / rounds : 0, rounds,
           drafted, accepted, acceptanceRate: drafted ? accepted / drafted : 0, roundsPerK,
           acceptanceByPosition: Array.from(reached, (r, j) => (r ? (acceptedAt[j] ?? 0) / r : 0)) };
}

export async function runSweep(factory, { backend, model, assistant, tokenizer, tokens, range, promptsFile }) {
  const [kMin, kMax] = parseRange(range);
  if (!Number.isInteger(tokens) || tokens < 2) throw new Error(`--tokens must be an integer >= 2, not ${tokens}`);
  const prompts = promptsFile ? readPrompts(promptsFile) : SWEEP_PROMPTS;
  const rt = await factory({ backend });
  const configs = [];
  for (let k = kMin; k <= kMax; k++) configs.push({ k, policy: 'fixed' });
  configs.push({ k: kMax, policy: 'adaptive' });
  const rows = [];
  try {
    for (const { k, policy } of configs) {
      await rt.load({ target: model, assistant, ...(tokenizer ? { tokenizer } : {}), draftTokens: k, draftPolicy: policy });
      const ask = (content, mtp, maxTokens) => rt.chat.completions.create({
        messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0, mtp });
      // Kernels compiled before anything is timed: plain steps, and rounds of every size either
      // policy may choose (a request's first round wants k drafts and drafts what its budget
      // still holds, so budgets of 2 to k + 2 tokens make rounds of 0 to k drafts).
      await ask(prompts[0], false, Math.min(tokens, 2 * kMax + 2));
      for (let budget = 2; budget <= k + 2; budget++) await ask(prompts[0], true, budget);
      const plain = [], spec = [];
      let differing = 0, first = null;
      for (let p = 0; p < prompts.length; p++) {
        const a = await ask(prompts[p], false, tokens);
        const b = await ask(prompts[p], true, tokens);
        plain.push(a.usage);
        spec.push(b.usage);
        // Generation stops at an eos: both must then stop at the same one.
        const ta = a.choices[0].message.content, tb = b.choices[0].message.content;
        if (ta !== tb || a.usage.completion_tokens !== b.usage.completion_tokens) {
          if (!differing++) {
            let at = 0;
            while (at < ta.length && ta[at] === tb[at]) at++;
            first = { prompt: p, char: at };
          }
        }
      }
      const off = tally(plain), on = tally(spec);
      rows.push({ k, policy, plain_decode_tokens_per_s: off.tokensPerS, mtp_decode_tokens_per_s: on.tokensPerS,
                  speedup: off.tokensPerS ? on.tokensPerS / off.tokensPerS : 0, tokens_per_round: on.tokensPerRound,
                  rounds: on.rounds, drafted: on.drafted, accepted: on.accepted, acceptance_rate: on.acceptanceRate,
                  acceptance_by_position: on.acceptanceByPosition, rounds_per_k: on.roundsPerK,
                  completion_tokens: spec.reduce((n, u) => n + u.completion_tokens, 0),
                  same_text_as_plain: differing === 0, ...(first ? { first_difference: first } : {}) });
      await rt.unload();
    }
  } finally {
    if (rt.stats().loaded) await rt.unload();
  }
  return { backend, model, assistant, prompts, new_tokens: tokens, rows };
}

export function printSweep(r) {
  const lines = [`speculative decoding end to end (JavaScript API, mtp build): ${r.prompts.length} chat prompts, greedy, ` +
                 `up to ${r.new_tokens} new tokens each; backend ${r.backend}`,
                 'decode tokens/s over the tokens after the first; acceptance by draft position: of the rounds that ' +
                 'drafted a token there, those that accepted it',
                 `${'K'.padEnd(3)}${'policy'.padEnd(10)}${'plain tok/s'.padStart(12)}${'MTP tok/s'.padStart(12)}` +
                 `${'speedup'.padStart(9)}${'tokens/round'.padStart(14)}${'acceptance'.padStart(11)}   ` +
                 `${'acceptance by position'.padEnd(24)} same text as plain`];
  for (const w of r.rows) {
    lines.push(`${String(w.k).padEnd(3)}${w.policy.padEnd(10)}${w.plain_decode_tokens_per_s.toFixed(2).padStart(12)}` +
               `${w.mtp_decode_tokens_per_s.toFixed(2).padStart(12)}${(w.speedup.toFixed(2) + 'x').padStart(9)}` +
               `${w.tokens_per_round.toFixed(2).padStart(14)}${w.acceptance_rate.toFixed(2).padStart(11)}   ` +
               `${w.acceptance_by_position.map((a) => a.toFixed(2)).join(' ').padEnd(24)} ${w.same_text_as_plain ? 'yes' : 'no'}`);
  }
  for (const w of r.rows.filter((x) => !x.same_text_as_plain)) {
    lines.push(`note: K=${w.k} ${w.policy}: the text differs from plain decoding, first prompt ${w.first_difference.prompt} ` +
               `at character ${w.first_difference.char} (a near tie of two logits)`);
  }
  return lines.join('\n');
}
