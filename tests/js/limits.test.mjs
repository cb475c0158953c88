// The JavaScript API's checks (web/api.mjs) and the module's (src/wasm/runtime_api.cc over the
// limits table, src/session/limits.h) are one set of bounds: every option's edge values, fed
// through the API and straight to the module, are accepted or refused alike, with the same words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { instantiate } from '../../web/module.mjs';
import { createMemoryWasi } from '../../web/wasi_memfs.mjs';
import { checkLimit } from '../../web/api.mjs';

const { createGemma4 } = await import(join(root, 'dist', 'gemma4.mjs'));
const model = join(root, 'testdata/models/e2b_mini');
const tokenizer = join(root, 'testdata/tokenizers/mini/tokenizer.json');
const messages = [{ role: 'user', content: 'Hi' }];

// The module alone, the CPU backend inside it, e2b_mini mounted at /target.
async function bareModule() {
  const files = new Map();
  for (const name of ['config.json', 'generation_config.json', 'model.safetensors']) {
    files.set(`/target/${name}`, new Uint8Array(readFileSync(join(model, name))));
  }
  files.set('/target/tokenizer.json', new Uint8Array(readFileSync(tokenizer)));
  const wasi = createMemoryWasi({ files });
  const inst = await instantiate(readFileSync(join(root, 'dist', 'gemma4.wasm')), { wasi,
    host: { token: () => 1, round: () => {} } });
  const lastError = () => inst.cstring(inst.exports.g4_last_error());
  const call = async (name, request, ...rest) => {
    const [p, n] = inst.put(JSON.stringify(request));
    try {
      return await (rest.length ? inst.callText(name, ...rest, p, n) : inst.call(name, p, n));
    } finally {
      inst.exports.free(p);
    }
  };
  const limits = JSON.parse(await inst.callText('g4_limits'));
  return {
    limits,
    // The error of creating a runtime for `request`, or null (then freed).
    async createError(request) {
      const rt = await call('g4_rt_create', { target: '/target', backend: 'cpu', ...request });
      if (!rt) return lastError();
      inst.exports.g4_rt_free(rt);
      return null;
    },
    async loaded(context) {
      const rt = await call('g4_rt_create', { target: '/target', backend: 'cpu', context });
      assert.ok(rt && (await inst.call('g4_rt_load', rt)), lastError());
      return {
        async generateError(request) {
          return (await call('g4_rt_generate', request, rt)) === null ? lastError() : null;
        },
      };
    },
  };
}

// Values at and just past each edge of a limit, and a fraction for integers; a choice's words,
// another word and a number.
function edges(l) {
  if (l.choices) return [...l.choices, 'sometimes', 2];
  const step = l.integer ? 1 : Math.max(1e-9, Math.abs(l.max) * 1e-9);
  const values = [l.max, l.max + (l.integer ? 1 : step * 1000), l.min_open ? l.min : l.min - step, l.min_open ? l.min + step : l.min];
  if (l.integer) values.push(l.min + 0.5);
  values.push('1');
  return values;
}

// A message refusing a value for its range (as against, say, a context too small for it).
const rangeError = (message, name) => message !== null && new RegExp(`\\b${name} must be `).test(message);

test('the module exports the limits table with integer ranges printed as integers', async () => {
  const { limits } = await bareModule();
  for (const key of ['context', 'draft_tokens', 'max_tokens', 'temperature', 'top_k', 'top_p', 'seed']) {
    assert.ok(limits[key], key);
    assert.match(limits[key].range, /^(an integer|a number) in [[(]-?[\d.e+-]+, [\d.e+-]+\]$/, key);
    if (limits[key].integer) assert.doesNotMatch(limits[key].range, /\./, key);
  }
  assert.equal(limits.context.range, 'an integer in [1, 16777216]');
  assert.equal(limits.top_p.range, 'a number in (0, 1]');
  assert.equal(limits.draft_tokens.default, 2);
  assert.equal(limits.seed.max, Number.MAX_SAFE_INTEGER);
  assert.deepEqual(limits.draft_policy.choices, ['adaptive', 'fixed']);
  assert.equal(limits.draft_policy.default, 'adaptive');
  assert.equal(limits.draft_policy.range, "one of 'adaptive', 'fixed'");
});

test('load options: the API and the module accept and refuse the same edge values', { timeout: 300000 }, async () => {
  const bare = await bareModule();
  const g = await createGemma4({ backend: 'cpu' });
  for (const [js, key] of [['contextLength', 'context'], ['draftTokens', 'draft_tokens'], ['draftPolicy', 'draft_policy'],
                         ['gpuFill', 'gpu_fill'], ['decodeAhead', 'decode_ahead']]) {
    const l = bare.limits[key];
    assert.equal(l.js, js);
    for (const v of edges(l)) {
      const wasm = await bare.createError({ [key]: v });
      let api = null;
      try {
        await g.load({ target: model, [js]: v });
        await g.unload();
      } catch (e) {
        api = e.message;
      }
      assert.equal(rangeError(api, js), rangeError(wasm, key), `${js}: ${v}: API ${api}; module ${wasm}`);
      // The same words: the module's message is the API's, under the option's JavaScript name.
      if (rangeError(wasm, key)) assert.equal(api, `gemma4 load: ${wasm.replace(key, js)}`);
    }
  }
});

test('request options: the API and the module accept and refuse the same edge values', { timeout: 300000 }, async () => {
  const bare = await bareModule();
  const module = await bare.loaded(64);
  const g = await createGemma4({ backend: 'cpu' });
  await g.load({ target: model, tokenizer, contextLength: 64 });
  for (const key of ['max_tokens', 'temperature', 'top_k', 'top_p', 'seed']) {
    const l = bare.limits[key];
    assert.equal(l.js, key);
    for (const v of edges(l)) {
      const base = key === 'max_tokens' ? {} : { max_tokens: 1 };
      const wasm = await module.generateError({ messages, ...base, [key]: v });
      let api = null;
      try {
        await g.chat.completions.create({ messages, ...base, [key]: v });
      } catch (e) {
        api = e.message;
      }
      assert.equal(rangeError(api, key), rangeError(wasm, key), `${key}: ${v}: API ${api}; module ${wasm}`);
      if (rangeError(wasm, key)) assert.equal(api, `gemma4 chat.completions.create: ${wasm}`);
    }
  }
  await g.unload();
});

test("a choice option is checked against its words, as the module's table gives them", () => {
  // The shape LimitJson gives an option of LimitKind::kChoice (tests/engine_test.cc).
  const policy = { js: 'draftPolicy', choices: ['adaptive', 'fixed'], default: 'adaptive', range: "one of 'adaptive', 'fixed'" };
  assert.equal(checkLimit('load', 'draftPolicy', 'fixed', policy), 'fixed');
  assert.equal(checkLimit('load', 'draftPolicy', undefined, policy), undefined);
  assert.throws(() => checkLimit('load', 'draftPolicy', 'greedy', policy),
                /^TypeError: gemma4 load: draftPolicy must be one of 'adaptive', 'fixed', not 'greedy'$/);
  assert.throws(() => checkLimit('load', 'draftPolicy', 2, policy), /draftPolicy must be one of 'adaptive', 'fixed'$/);
});
