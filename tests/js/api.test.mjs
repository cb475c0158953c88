// The JavaScript API (dist/*.mjs, made by scripts/build-web.sh) in Node on WebGPU (Dawn on
// lavapipe): chat completions equal the native CPU reference's text, speculative decoding gives
// the text of plain decoding, streaming, stop strings, interrupt, reset, unload, bad options, and
// loads that fail closed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cli.mjs';

const dist = (name) => import(join(root, 'dist', name));
const { createGemma4 } = await dist('gemma4.mjs');
const { createGemma4Mtp } = await dist('gemma4-mtp.mjs');
const { createGemma4MtpProfile } = await dist('gemma4-mtp-profile.mjs');

const model = join(root, 'testdata/models/e2b_mini');
const assistant = join(model, 'assistant_centroid');
const tokenizer = join(root, 'testdata/tokenizers/mini/tokenizer.json');
const messages = [{ role: 'user', content: 'Hello there, how are you?' }];
const N = 12;

// The native CLI's (CPU reference) greedy text for the same chat prompt.
function referenceText(content, n) {
  const out = execFileSync(join(root, 'build', 'gemma4'), ['generate', '--model', model, '--tokenizer', tokenizer, '--chat',
                                                            '--prompt', content, '--max-new-tokens', String(n), '--json'],
                           { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

// The chunks of a stream; `runtime`'s stats are sampled at every chunk.
async function collect(stream, runtime = null) {
  const chunks = [], seen = [];
  for await (const c of stream) {
    chunks.push(c);
    if (runtime) seen.push(runtime.stats());
  }
  return { chunks, seen, text: chunks.map((c) => c.choices[0].delta.content ?? '').join(''), last: chunks[chunks.length - 1] };
}

// `promise`, or a rejection naming the wait if it has not settled within `ms`.
function within(ms, promise) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

test('plain and speculative runtimes answer with the CPU reference text', { timeout: 360000 }, async (t) => {
  const ref = referenceText(messages[0].content, N);
  assert.equal(ref.tokens.length, N);

  const plain = await createGemma4();
  await plain.load({ target: model, tokenizer });
  const r = await plain.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.content, ref.text);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, N);
  assert.equal(r.usage.prompt_tokens, ref.stats.prompt_tokens);
  assert.equal(r.usage.speculative.enabled, false);
  assert.ok(r.usage.time_to_first_token_ms > 0);
  await assert.rejects(plain.load({ target: model }), /a model is loaded/);
  await plain.unload();
  assert.equal(plain.stats().gpu_buffers, 0);
  // The plain build has no speculative decoding.
  await assert.rejects(plain.load({ target: model, assistant }), /createGemma4Mtp/);

  const mtp = await createGemma4Mtp();
  await mtp.load({ target: model, assistant, tokenizer });
  const on = await collect(await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0, stream: true }), mtp);
  const off = await collect(await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0, stream: true,
                                                                  mtp: false }));
  assert.equal(on.text, ref.text);
  assert.equal(off.text, ref.text);
  assert.equal(on.chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(on.last.choices[0].finish_reason, 'length');
  const spec = on.last.usage.speculative;
  assert.equal(spec.enabled, true);
  assert.ok(spec.rounds > 0);
  assert.equal(spec.drafted <= 2 * spec.rounds, true);
  assert.equal(spec.accepted_per_position.length, 2);
  // The adaptive policy by default: rounds of 0..2 drafts, counted by K.
  assert.equal(spec.draft_policy, 'adaptive');
  assert.equal(spec.rounds_per_k.length, 3);
  assert.equal(spec.rounds_per_k.reduce((a, b) => a + b, 0), spec.rounds);
  // Greedy rounds are recorded before the read of the one before (WebGPU), never the first.
  assert.ok(spec.rounds_ahead <= spec.rounds - 1, `${spec.rounds_ahead} rounds recorded ahead, of ${spec.rounds}`);
  assert.equal(off.last.usage.speculative.rounds, 0);
  // The counters move while the request runs, not only at its end.
  const during = on.seen[on.seen.length - 3];
  assert.ok(during.current && during.current.completion_tokens > 0 && during.current.completion_tokens < N);
  assert.ok(during.rounds > 0 && during.rounds < spec.rounds, `live rounds ${during.rounds} of ${spec.rounds}`);
  assert.equal(on.seen[on.seen.length - 1].current, null);
  const s = mtp.stats();
  assert.equal(s.requests, 2);
  assert.equal(s.rounds, spec.rounds);
  assert.equal(s.completion_tokens, 2 * N);

  await t.test('stop strings end the text before them', async () => {
    const cut = ref.text.slice(4, 6);
    const want = ref.text.slice(0, ref.text.indexOf(cut));
    const res = await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0, stop: [cut] });
    assert.equal(res.choices[0].message.content, want);
    assert.equal(res.choices[0].finish_reason, 'stop');
    const streamed = await collect(await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0, stop: cut,
                                                                        stream: true }));
    assert.equal(streamed.text, want);
  });

  await t.test('interrupt stops mid-stream and the next request works', async () => {
    const stream = await mtp.chat.completions.create({ messages, max_tokens: 200, temperature: 0, stream: true });
    const chunks = [];
    for await (const c of stream) {
      chunks.push(c);
      if (chunks.length === 2) mtp.interrupt();
    }
    const last = chunks[chunks.length - 1];
    assert.equal(last.choices[0].finish_reason, 'interrupted');
    assert.ok(last.usage.completion_tokens < 200);
    const again = await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
    assert.equal(again.choices[0].message.content, ref.text);
  });

  await t.test('a finished stream iterated again ends at once, with no chunk', async () => {
    const stream = await mtp.chat.completions.create({ messages, max_tokens: 4, temperature: 0, stream: true });
    const first = await collect(stream);
    assert.equal(first.last.choices[0].finish_reason, 'length');
    assert.deepEqual((await within(2000, collect(stream))).chunks, []);
    assert.equal((await within(2000, stream[Symbol.asyncIterator]().next())).done, true);
  });

  await t.test('leaving a stream early frees the runtime before the loop is left', async () => {
    const stream = await mtp.chat.completions.create({ messages, max_tokens: 200, temperature: 0, stream: true });
    let seen = 0;
    for await (const _ of stream) {
      seen++;
      break;
    }
    assert.equal(seen, 1);
    assert.equal(mtp.stats().busy, null);
    const again = await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
    assert.equal(again.choices[0].message.content, ref.text);
    // A stream left early is over: iterating it again ends at once.
    assert.deepEqual(await within(2000, collect(stream)).then((c) => c.chunks), []);
  });

  await t.test('seeded sampling repeats itself with the fixed draft policy', async () => {
    // The adaptive policy's rounds depend on measured times, and a sampled round's draws on its
    // drafts: a seeded sampled request repeats exactly when every round drafts K.
    const fixed = await createGemma4Mtp();
    await fixed.load({ target: model, assistant, tokenizer, draftPolicy: 'fixed' });
    const ask = () => fixed.chat.completions.create({ messages, max_tokens: N, temperature: 1, top_p: 0.9, seed: 7 });
    const a = await ask(), b = await ask();
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    const spec = a.usage.speculative;
    assert.equal(spec.draft_policy, 'fixed');
    // Every round drafts K = 2 but the last ones, which draft what the budget leaves.
    assert.ok(spec.rounds_per_k[2] >= spec.rounds - 2, `rounds by drafts ${spec.rounds_per_k}`);
    // Sampled rounds read their logits back: none is recorded ahead.
    assert.equal(spec.rounds_ahead, 0);
    await fixed.unload();
  });

  await t.test('bad requests and concurrent calls are rejected clearly', async () => {
    await assert.rejects(mtp.chat.completions.create({ messages, max_tokens: 4, temprature: 0 }), /unknown option 'temprature'/);
    await assert.rejects(mtp.chat.completions.create({ messages, temperature: -1 }), /temperature must be/);
    await assert.rejects(mtp.chat.completions.create({ messages, stop: [''] }), /stop must be/);
    await assert.rejects(mtp.chat.completions.create({ messages: [{ role: 'user', content: 'x', extra: 1 }], max_tokens: 1 }),
                         /unknown field 'extra'/);
    await assert.rejects(mtp.chat.completions.create({ messages, max_tokens: 5000 }), /exceeds the context of 4096/);
    const first = mtp.chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
    await assert.rejects(mtp.chat.completions.create({ messages, max_tokens: 4 }), /busy with chat.completions.create/);
    await assert.rejects(mtp.reset(), /busy/);
    await first;
  });

  await t.test('reset zeroes the counters and gives the same answers', async () => {
    assert.ok(mtp.stats().requests > 0);
    await mtp.reset();
    const s0 = mtp.stats();
    assert.equal(s0.loaded, true);
    for (const k of ['requests', 'prompt_tokens', 'completion_tokens', 'rounds', 'drafted', 'accepted']) assert.equal(s0[k], 0, k);
    assert.deepEqual(s0.accepted_per_position, []);
    assert.equal(s0.last, null);
    const r2 = await mtp.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
    assert.equal(r2.choices[0].message.content, ref.text);
    assert.equal(mtp.stats().requests, 1);
  });

  await mtp.unload();
  assert.equal(mtp.stats().gpu_buffers, 0);
  assert.equal(mtp.stats().loaded, false);
  await assert.rejects(mtp.chat.completions.create({ messages }), /no model is loaded/);
});

test('files given as Blobs load like a folder; bad files fail closed and a later load works', { timeout: 120000 }, async () => {
  const files = {};
  for (const name of ['config.json', 'generation_config.json', 'model.safetensors']) {
    files[name] = new Blob([readFileSync(join(model, name))]);
  }
  const g = await createGemma4();
  const truncated = { ...files, 'model.safetensors': files['model.safetensors'].slice(0, 1 << 20) };
  await assert.rejects(g.load({ target: truncated, tokenizer }), /model\.safetensors/);
  assert.equal(g.stats().loaded, false);
  assert.equal(g.stats().gpu_buffers, 0);
  await assert.rejects(g.load({ target: { 'config.json': files['config.json'] } }), /model\.safetensors is missing/);
  await assert.rejects(g.load({ target: model, contextLength: 1 << 24 }), /maxStorageBufferBindingSize/);
  // A context whose cache and activations fit one binding (128 MiB here) loads, though the arena's
  // slack then does not fit too: the arena is cut to the binding.
  await g.load({ target: model, tokenizer, contextLength: 150000 });
  assert.equal((await g.chat.completions.create({ messages, max_tokens: 2, temperature: 0 })).usage.completion_tokens, 2);
  await g.unload();
  await assert.rejects(g.load({ target: model, context: 10 }), /unknown option 'context'/);
  await assert.rejects(g.load({ target: model, draftPolicy: 'fast' }), /^TypeError: gemma4 load: draftPolicy must be one of 'adaptive', 'fixed', not 'fast'$/);
  await assert.rejects(createGemma4({ backnd: 'cpu' }), /unknown option 'backnd'/);
  // A picked folder's File list: its subfolders' files (here an assistant's) are not the model's.
  const picked = Object.entries(files).map(([name, blob]) => Object.defineProperty(new File([blob], name), 'webkitRelativePath',
                                                                                   { value: `e2b_mini/${name}` }));
  const nested = new File([readFileSync(join(assistant, 'config.json'))], 'config.json');
  Object.defineProperty(nested, 'webkitRelativePath', { value: 'e2b_mini/assistant_centroid/config.json' });
  await g.load({ target: [...picked, nested], tokenizer });
  assert.equal(g.stats().model.layers, 10);
  await g.unload();
  await g.load({ target: files, tokenizer: new Blob([readFileSync(tokenizer)]) });
  const r = await g.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
  assert.equal(r.choices[0].message.content, referenceText(messages[0].content, N).text);
  await g.unload();
  assert.equal(g.stats().gpu_buffers, 0);
});

test('the CPU backend inside WebAssembly gives the same text, greedy and sampled', { timeout: 120000 }, async () => {
  const g = await createGemma4Mtp({ backend: 'cpu' });
  await g.load({ target: model, assistant, tokenizer });
  const r = await g.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
  assert.equal(r.choices[0].message.content, referenceText(messages[0].content, N).text);
  assert.ok(r.usage.speculative.rounds > 0);
  // Sampling: top-k picked on the GPU (and on the CPU), or whole rows without top-k.
  const gpu = await createGemma4();
  await gpu.load({ target: model, tokenizer });
  for (const sampling of [{ temperature: 1.3, top_k: 40, top_p: 0.9, seed: 5 }, { temperature: 1.3, top_p: 0.9, seed: 6 }]) {
    const request = { messages, max_tokens: 24, mtp: false, ...sampling };
    const a = await g.chat.completions.create(request);
    const { mtp: _, ...plain } = request;
    const b = await gpu.chat.completions.create(plain);
    assert.equal(b.choices[0].message.content, a.choices[0].message.content, JSON.stringify(sampling));
  }
  // Unset sampling options follow generation_config.json: greedy for this model.
  const d = await gpu.chat.completions.create({ messages, max_tokens: N });
  assert.equal(d.choices[0].message.content, r.choices[0].message.content);
  assert.deepEqual(gpu.stats().model.sampling_defaults, { temperature: 0, top_k: 0, top_p: 1 });
  await gpu.unload();
  await g.unload();
});

test('profile builds report a versioned profile per request; reset clears its generations', { timeout: 300000 }, async () => {
  const g = await createGemma4MtpProfile();
  await g.load({ target: model, assistant, tokenizer });
  // A compute pass per dispatch (profiling) gives the text of the wall build's batched passes.
  const text = (await g.chat.completions.create({ messages, max_tokens: N, temperature: 0 })).choices[0].message.content;
  assert.equal(text, referenceText(messages[0].content, N).text);
  await g.reset();
  const before = g.stats().profile;
  assert.equal(before.schema_version, 3);
  assert.equal(before.generation, 0);
  await g.chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
  await g.chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
  const p = g.stats().profile;
  assert.equal(p.schema_version, 3);
  assert.equal(p.generation, 2);
  // Lavapipe offers timestamp queries, so the profile has figures here: kernel by kernel.
  assert.equal(p.supported, true);
  assert.equal(p.mode, 'kernels');
  assert.equal(p.fresh, true);
  assert.deepEqual(p.passes, { ms: 0, count: 0, dispatches: 0 });
  assert.ok(p.total_kernel_ms > 0);
  assert.ok(Object.keys(p.ops).length > 3);
  assert.ok(Object.values(p.ops).every((o) => o.calls > 0 && o.ms >= 0));
  // Each kernel's dispatch sizes add up to it, and some kernel runs at more than one size.
  for (const [name, o] of Object.entries(p.ops)) {
    const sizes = Object.entries(o.by_workgroups);
    assert.ok(sizes.length > 0 && sizes.every(([g, d]) => Number(g) > 0 && d.calls > 0), name);
    assert.equal(sizes.reduce((n, [, d]) => n + d.calls, 0), o.calls, name);
    assert.ok(Math.abs(sizes.reduce((ms, [, d]) => ms + d.ms, 0) - o.ms) <= 1e-6 * Math.max(1, o.ms), name);
  }
  assert.ok(Object.values(p.ops).some((o) => Object.keys(o.by_workgroups).length > 1));
  await g.reset();
  assert.equal(g.stats().profile.generation, 0);
  await g.chat.completions.create({ messages, max_tokens: 2, temperature: 0 });
  assert.equal(g.stats().profile.generation, 1);
  await g.unload();
  // Wall builds say they have no profile.
  const wall = await createGemma4();
  assert.equal(wall.stats().profile.supported, false);
  assert.equal(wall.stats().profile.schema_version, 3);
  assert.equal(wall.stats().profile.passes.count, 0);
});

// A device whose n-th buffer allocation reports out-of-memory through its error scope, as a
// device that runs out does.
function deviceFailingAllocation(device, n) {
  const filters = [];
  let allocations = 0;
  return new Proxy(device, {
    get(target, key) {
      if (key === 'pushErrorScope') return (filter) => { filters.push(filter); target.pushErrorScope(filter); };
      if (key === 'popErrorScope') {
        return async () => {
          const filter = filters.pop();
          const e = await target.popErrorScope();
          if (filter === 'out-of-memory' && ++allocations === n) return e ?? { message: 'simulated: no memory left' };
          return e;
        };
      }
      const v = target[key];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

async function newDevice() {
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const gpu = create([]);
  globalThis.__test_gpu = gpu;
  const adapter = await gpu.requestAdapter();
  return adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize } });
}

test('out of GPU memory and a lost device come back as errors; nothing stays half loaded', { timeout: 120000 }, async () => {
  const device = await newDevice();
  const g = await createGemma4({ device: deviceFailingAllocation(device, 5) });
  await assert.rejects(g.load({ target: model, tokenizer }), /out of GPU memory allocating \d+ bytes: simulated/);
  assert.equal(g.stats().loaded, false);
  assert.equal(g.stats().gpu_buffers, 0);
  // The next load (the fault was the fifth allocation of the first) works.
  await g.load({ target: model, tokenizer });
  const r = await g.chat.completions.create({ messages, max_tokens: 4, temperature: 0 });
  assert.equal(r.usage.completion_tokens, 4);

  device.destroy();
  await device.lost;
  await new Promise((ok) => setTimeout(ok, 0));
  assert.match(g.stats().device_lost, /destroyed/);
  await assert.rejects(g.chat.completions.create({ messages, max_tokens: 4 }), /device was lost/);
  await g.unload();
  await assert.rejects(g.load({ target: model }), /device given was lost/);

  // A runtime that owns its device loads again after an unload.
  const own = await createGemma4();
  await own.load({ target: model, tokenizer });
  await own.unload();
  await own.load({ target: model, tokenizer });
  assert.equal((await own.chat.completions.create({ messages, max_tokens: 2, temperature: 0 })).usage.completion_tokens, 2);
  await own.unload();
});

test('gpuValidation: false (Node) answers with the reference text; its bad uses are errors', { timeout: 120000 }, async () => {
  const g = await createGemma4({ gpuValidation: false });
  await g.load({ target: model, tokenizer });
  const r = await g.chat.completions.create({ messages, max_tokens: N, temperature: 0 });
  assert.equal(r.choices[0].message.content, referenceText(messages[0].content, N).text);
  await g.unload();
  assert.equal(g.stats().gpu_buffers, 0);
  await assert.rejects(createGemma4({ gpuValidation: 'off' }), /gpuValidation must be true or false/);
  const device = await newDevice();
  await assert.rejects(createGemma4({ gpuValidation: false, device }), /not one given/);
  device.destroy();
});

test('submitDispatches: one pass a step, or one dispatch a submit, answers with the reference text', { timeout: 180000 }, async () => {
  // 4096 hands a whole step (and a whole speculative round) over as one list in one pass; 1 hands
  // every dispatch over alone, so each list's uniforms and host words are written between submits.
  const ref = referenceText(messages[0].content, N).text;
  for (const submitDispatches of [4096, 1]) {
    const g = await createGemma4Mtp({ submitDispatches });
    await g.load({ target: model, assistant, tokenizer, draftPolicy: 'fixed' });
    for (const mtp of [false, true]) {
      const r = await g.chat.completions.create({ messages, max_tokens: N, temperature: 0, mtp });
      assert.equal(r.choices[0].message.content, ref, `submitDispatches ${submitDispatches}, mtp ${mtp}`);
    }
    await g.unload();
  }
  for (const bad of [0, 4097, 1.5, '128']) {
    await assert.rejects(createGemma4({ submitDispatches: bad }), /createGemma4 options: submitDispatches must be a whole number from 1 to 4096/);
  }
  await assert.rejects(createGemma4({ submitDispatches: 64, backend: 'cpu' }), /submitDispatches is for the webgpu backend, not 'cpu'/);
});
