// scripts/bench-browser.mjs, its Node side (Dawn on lavapipe) on the small E2B-shaped pair: every
// figure is made and has the shape asked for (prompt length, tokens decoded, K=2 rounds); and its
// options fail closed, naming the option. The browser side is the same module (bench-runtime.mjs)
// run in a page; the demo page tests cover the runtime in Chromium. And scripts/bench-bridge.mjs,
// which times two versions of the bridge in turns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';

const script = join(root, 'scripts', 'bench-browser.mjs');
const pair = ['--model', join(root, 'testdata/models/e2b_mini'), '--assistant', join(root, 'testdata/models/e2b_mini/assistant_centroid'),
              '--tokenizer', join(root, 'testdata/tokenizers/mini/tokenizer.json')];
const bench = (args) => spawnSync(process.execPath, [script, ...args], { cwd: root, encoding: 'utf8' });

test('the Node side measures prefill, plain decode and K=2 rounds, once per decodeAhead asked', () => {
  const r = bench([...pair, '--prompt-tokens', '40', '--decode-tokens', '8', '--reps', '1', '--only', 'node',
                   '--decode-ahead', '0,1', '--gpu-fill', '48', '--profile', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const { rows } = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.deepEqual(rows.map((row) => row.where), ['node (Dawn, decodeAhead 0, gpuFill 48)', 'node (Dawn, decodeAhead 1, gpuFill 48)']);
  assert.deepEqual(rows.map((row) => [row.decode_ahead, row.submit_dispatches, row.gpu_fill_option]), [[0, null, 48], [1, null, 48]]);
  for (const row of rows) {
    checkRow(row);
    // What shapes the dispatches: the fill asked for, the arena the model needs, the limits.
    assert.equal(row.gpu_fill, 48);
    assert.ok(row.arena_bytes > 0 && row.binding_bytes > 0 && row.workgroup_bytes >= 16384, JSON.stringify(row));
  }
  // Rounds are recorded before the read of the one before only with decodeAhead above 0.
  assert.equal(rows[0].rounds_ahead, 0);
  assert.ok(rows[1].rounds_ahead >= 1 && rows[1].rounds_ahead <= rows[1].rounds - 1, `${rows[1].rounds_ahead}`);
  // --profile: the prefill's GPU kernels, once a place (the first row), through the plain profile
  // build: the same prompt, a total that is the sum of at least its four costliest kernels.
  const [p, q] = rows;
  assert.equal(p.prefill_kernels_error, undefined);
  assert.equal(p.profile_prompt_tokens, p.prompt_tokens);
  assert.equal(p.prefill_kernels_top.length, 4);
  const top = p.prefill_kernels_top.reduce((ms, k) => ms + k.ms, 0);
  assert.ok(top > 0 && top <= p.prefill_kernels_ms * (1 + 1e-9), `${top} of ${p.prefill_kernels_ms} ms`);
  assert.ok(p.prefill_kernels_top.every((k, i, all) => k.calls > 0 && (i === 0 || all[i - 1].ms >= k.ms)));
  assert.ok(p.prefill_kernels_top.some((k) => k.name.startsWith('matmul')), JSON.stringify(p.prefill_kernels_top));
  assert.equal(q.prefill_kernels_ms, undefined);
});

function checkRow(row) {
  assert.equal(row.software, true, `lavapipe is a software adapter: ${row.adapter}`);
  // The prompt is sized from two probes of the tokenizer: within a word's tokens of the ask.
  assert.ok(Math.abs(row.prompt_tokens - 40) <= 4, `prompt of ${row.prompt_tokens} tokens`);
  assert.equal(row.decode_tokens, 8);
  assert.equal(row.draft_tokens, 2);
  assert.ok(row.rounds >= 1 && row.rounds <= 7, `${row.rounds} rounds for 7 tokens after the first`);
  for (const k of ['prefill_tokens_per_s', 'decode_tokens_per_s', 'step_ms', 'mtp_tokens_per_s', 'round_ms',
                   'round_per_step', 'encode_us_per_dispatch', 'pass_us_per_dispatch', 'round_trip_us',
                   'set_pipeline_us', 'set_bind_group_us', 'set_bind_group_array_us', 'set_bind_group_per_slot_us', 'create_bind_group_us', 'dispatch_call_us',
                   'pattern_encode_us_per_dispatch', 'pattern_submit_us_per_dispatch', 'bridge_us_per_dispatch',
                   'bridge_device_us_per_dispatch', 'write_uniforms_us', 'encoder_us', 'empty_submit_us']) {
    assert.ok(Number.isFinite(row[k]) && row[k] > 0, `${k} = ${row[k]}`);
  }
  assert.ok(Math.abs(row.round_per_step - row.round_ms / row.step_ms) < 1e-9);
  // The bridge makes three device calls a dispatch of the stand-in list (every kernel differs
  // from the one before): a pipeline, a bind group, the dispatch. Its own work is part of its
  // whole hand-over on the device, which goes in the runtime's submits.
  assert.equal(row.device_calls_per_dispatch, 3);
  assert.ok(row.bridge_us_per_dispatch < row.bridge_device_us_per_dispatch,
            `the bridge's own ${row.bridge_us_per_dispatch} us against its hand-over's ${row.bridge_device_us_per_dispatch}`);
  assert.equal(row.bridge_submit_dispatches, 128);
}

test('bad options are refused, naming the option', () => {
  for (const [args, named] of [
    [['--only', 'phone'], /--only takes node or browser, not 'phone'/],
    [['--tokens', '5'], /Unknown option '--tokens'/],
    [['--reps'], /Option '--reps[^']*' argument/],
    [['--reps', '2', '--reps', '3'], /--reps is given more than once/],
    [['--decode-tokens', '1'], /--decode-tokens takes a whole number of at least 4, not '1'/],
    [['--reps', '0'], /--reps takes a whole number of at least 1, not '0'/],
    [['--gpu-validation', 'maybe'], /--gpu-validation takes on or off/],
    [['--submit-dispatches', '128,0'], /--submit-dispatches takes whole numbers from 1 to 4096, not '0'/],
    [['--decode-ahead', '0,17'], /--decode-ahead takes whole numbers from 0 to 16, not '17'/],
    [['--gpu-fill', '264,x'], /--gpu-fill takes whole numbers from 0 to 65536, not 'x'/],
    [['--gpu-fill', '65537'], /--gpu-fill takes whole numbers from 0 to 65536, not '65537'/],
    [['--wasm', join(root, 'no-such.wasm')], /--wasm .*no-such\.wasm: no such file/],
    [['--model', join(root, 'testdata')], /--model .*testdata: no config\.json there/],
    [['--model', join(root, 'testdata/models/e2b_mini'), '--assistant', join(root, 'testdata/models/e2b_mini/assistant_centroid')],
     /--model .*e2b_mini: no tokenizer\.json there; give one with --tokenizer/],
  ]) {
    const r = bench(args[0] === '--model' ? args : [...args, ...pair]);
    assert.equal(r.status, 1, `${args.join(' ')}: status ${r.status}`);
    assert.match(r.stderr, named);
    assert.equal(r.stdout, '');
  }
});

test('bench-bridge times two bridge versions in turns, and refuses bad options', () => {
  const bridge = join(root, 'web', 'gpu_bridge.mjs');
  const run = (args) => spawnSync(process.execPath, [join(root, 'scripts', 'bench-bridge.mjs'), ...args], { cwd: root, encoding: 'utf8' });
  const r = run([bridge, bridge, '--turns', '2', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(out.turns, 2);
  assert.equal(out.a_turns.length, 2);
  assert.equal(out.b_turns.length, 2);
  for (const v of [...out.a_turns, ...out.b_turns]) assert.ok(Number.isFinite(v) && v > 0, `${v}`);
  assert.ok(Math.abs(out.b_over_a - out.b_us_per_dispatch / out.a_us_per_dispatch) < 1e-12);
  for (const [args, named] of [
    [[bridge], /give two bridge files, A and B/],
    [[bridge, join(root, 'no-such.mjs')], /no-such\.mjs: no such file/],
    [[bridge, join(root, 'web', 'api.mjs')], /api\.mjs exports no createGpuImports/],
    [[bridge, bridge, '--turns', '0'], /--turns takes a whole number of at least 1, not '0'/],
    [[bridge, bridge, '--gpu-validation', 'maybe'], /--gpu-validation takes on or off, not 'maybe'/],
  ]) {
    const bad = run(args);
    assert.equal(bad.status, 1, `${args.join(' ')}: status ${bad.status}`);
    assert.match(bad.stderr, named);
  }
});
