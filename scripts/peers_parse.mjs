// Reads the figures bench-peers.mjs tabulates out of each peer's output: this runtime's bench
// (text lines), transformers' bench_transformers.py and llama.cpp's bench.mjs (JSON lines).

const num = (s) => (s === undefined ? undefined : Number(s.replaceAll(',', '')));

// bench's prefill and decode lines, the GPU time of a plain step and of a round (timestamps
// around each submit's pass) and decode with the assistant under each policy.
export function parseOurs(out) {
  const gpu = out.slice(out.indexOf('GPU time (timestamps around each submit'));
  return {
    prefill: num(out.match(/^prefill: .* = ([0-9.,]+) tokens\/s/m)?.[1]),
    decode: num(out.match(/^decode: .* = ([0-9.,]+) tokens\/s/m)?.[1]),
    stepMs: num(gpu.match(/^\s*plain decode step\s+([0-9.]+) ms/m)?.[1]),
    roundMs: num(gpu.match(/^\s*round\s+([0-9.]+) ms/m)?.[1]),
    fixed: num(out.match(/^decode with the assistant, fixed policy .*?: ([0-9.]+) tokens\/s/m)?.[1]),
    adaptive: num(out.match(/^decode with the assistant, adaptive policy .*?: ([0-9.]+) tokens\/s/m)?.[1]),
  };
}

const jsonLines = (out) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => {
  try { return JSON.parse(l); } catch { return null; }
}).filter(Boolean);

// A row for each attention implementation: its best prefill and decode over the caches.
export function parseTransformers(out) {
  const byAttn = new Map();
  for (const j of jsonLines(out)) {
    if (!j.attn || j.error) continue;
    const r = byAttn.get(j.attn) ?? { who: `transformers, ${j.attn}` };
    const best = (key, v) => { if (!(r[key] >= v)) r[key] = v; };
    if (j.what === 'prefill') best('prefill', j.tokens_per_s);
    if (j.what === 'decode') best('decode', j.tokens_per_s);
    if (j.what === 'assisted') best('assisted', j.tokens_per_s);
    byAttn.set(j.attn, r);
  }
  return [...byAttn.values()];
}

// A row for each of gpu_bench.sh's runs ({"run": ...} then bench.mjs's figures).
export function parseLlama(out) {
  const rows = [];
  let who = null;
  for (const j of jsonLines(out)) {
    if (j.run) who = j.run;
    else if (j.prefill_tokens_per_s !== undefined && who) {
      rows.push({ who, prefill: j.prefill_tokens_per_s, decode: j.decode_tokens_per_s });
    }
  }
  return rows;
}
