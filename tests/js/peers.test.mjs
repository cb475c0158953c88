// The llama.cpp peer's CUDA runner (tools/reference/llama_cpp/cuda_bench.sh) and the table
// scripts/bench-peers.mjs makes from it: a stand-in llama-bench (this machine has no GPU) that
// answers as llama.cpp's does (`-o jsonl`: one JSON object a test, with avg_ts, samples_ts,
// n_prompt, n_gen, n_depth) shows that cuda_bench.sh asks for a prefill of P tokens and a decode
// of D after a context of P, with flash attention off and on, and prints the median of the reps
// in lines that parseLlama reads; a llama-bench that fails gives no figures, a line that says so and exit 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { parseLlama } from '../../scripts/peers_parse.mjs';

const script = join(root, 'tools', 'reference', 'llama_cpp', 'cuda_bench.sh');

// A folder as cuda_build.sh makes it, with BENCH as its llama-bench, and a model whose bf16 GGUF
// is already made (so nothing is converted).
function setUp(bench) {
  const dir = mkdtempSync(join(tmpdir(), 'g4-peers-'));
  const carried = join(dir, 'carry');
  mkdirSync(join(carried, 'llama.cpp'), { recursive: true });
  writeFileSync(join(carried, 'llama-bench'), bench);
  chmodSync(join(carried, 'llama-bench'), 0o755);
  mkdirSync(join(dir, 'model'));
  writeFileSync(join(dir, 'model.bf16.gguf'), 'GGUF');
  return { dir, carried, model: join(dir, 'model') };
}

const run = (s, ...args) => spawnSync('bash', [script, s.model, '--carried', s.carried, ...args], { encoding: 'utf8' });

test('cuda_bench.sh runs llama-bench for prefill and for decode after a context, in the form bench-peers reads', () => {
  // Records its arguments, answers with figures that depend on them.
  const s = setUp(`#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls"
echo "ggml_cuda_init: found 1 CUDA devices" >&2
p=0 n=0 d=0
while [ $# -gt 0 ]; do case $1 in -p) p=$2 ;; -n) n=$2 ;; -d) d=$2 ;; -fa) fa=$2 ;; esac; shift; done
ts=$([ "$p" = 0 ] && echo 200 || echo 9000)
[ "$fa" = on ] && ts=$((ts + 1))
# A slow first rep (the GPU's clock still low): the figure is the median, not the mean.
echo '{"build_commit": "x", "n_prompt": '$p', "n_gen": '$n', "n_depth": '$d', "avg_ts": 1, "stddev_ts": 1, "samples_ts": [ '$((ts / 2))', '$ts', '$((ts + 2))' ], "backends": "CUDA", "gpu_info": "stand-in"}'
`);
  try {
    const r = run(s, '--prompt-tokens', '256', '--decode-tokens', '16', '--reps', '3');
    assert.equal(r.status, 0, r.stderr);
    const calls = readFileSync(join(s.carried, 'calls'), 'utf8').trim().split('\n');
    const gguf = `${s.model}.bf16.gguf`;
    assert.deepEqual(calls, [
      `-m ${gguf} -ngl 99 -fa off -p 256 -n 0 -r 3 -o jsonl`, `-m ${gguf} -ngl 99 -fa off -p 0 -n 16 -d 256 -r 3 -o jsonl`,
      `-m ${gguf} -ngl 99 -fa on -p 256 -n 0 -r 3 -o jsonl`, `-m ${gguf} -ngl 99 -fa on -p 0 -n 16 -d 256 -r 3 -o jsonl`]);
    assert.deepEqual(parseLlama(r.stdout), [
      { who: 'llama.cpp cuda (llama-bench), bf16, flash attention off', prefill: 9000, decode: 200 },
      { who: 'llama.cpp cuda (llama-bench), bf16, flash attention on', prefill: 9001, decode: 201 }]);
    const line = r.stdout.split('\n').filter((l) => l.includes('prefill_tokens_per_s')).map((l) => JSON.parse(l))[0];
    assert.equal(line.prompt_tokens, 256);
    assert.equal(line.decode_tokens, 16);
    assert.equal(line.depth, 256);
    assert.equal(line.reps, 3);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('cuda_bench.sh: a llama-bench that fails gives no figures and exit 1', () => {
  const s = setUp('#!/usr/bin/env bash\necho "CUDA error: the provided PTX was compiled with an unsupported toolchain." >&2\nexit 134\n');
  try {
    const r = run(s);
    assert.equal(r.status, 1);
    assert.deepEqual(parseLlama(r.stdout), []);
    assert.equal(r.stdout.split('\n').filter((l) => l.includes('run_failed')).length, 2);
    assert.match(r.stderr, /flash attention off failed \(its log: .*\):\nCUDA error: the provided PTX/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('cuda_bench.sh: a missing llama-bench or an option without its value is named', () => {
  const s = setUp('#!/usr/bin/env bash\nexit 0\n');
  try {
    rmSync(join(s.carried, 'llama-bench'));
    let r = run(s);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /llama-bench is missing \(cuda_build\.sh makes it/);
    r = run(s, '--reps');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--reps needs a value/);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});
