// The demo page (web/demo/) in headless Chromium on SwiftShader's WebGPU, driven like a user. With
// the bundled model: the model list with its download size, load progress that only grows, no
// 404 for any file, Enter sends (Shift+Enter is a new line) and clears the input, the phases in
// order (loading, warm-up, generating, done), the CPU reference's greedy text with MTP on and off,
// each reply's figures and the labelled totals, Copy and Regenerate, Stop, a conversation, a load
// from the cache in a Web Worker, the button that deletes the cache, Reset, a load with the storage
// quota full.
// With a stand-in runtime (no GPU): a reply's HTML shown as text, the system prompt in the
// request, and the layout at 1280 and 400 px wide with a 3,000-character reply without spaces.
// Screenshots go to $DEMO_SCREENSHOTS (default build-wasm/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { launchBrowser, serve, closeServer } from './browser.mjs';
import { catalogue } from '../../scripts/serve.mjs';
import { mb as pageMb } from '../../web/demo/render.mjs';

// Replies are short, since decoding on SwiftShader is slow; six tokens still make MTP rounds. The
// reply to this prompt is six tokens of text (no byte tokens shown as U+FFFD, checked below), so
// differing replies read differently.
const PROMPT = 'Good morning';
const N = 6;
const WAIT = { timeout: 600000 };
const SHOTS = process.env.DEMO_SCREENSHOTS ?? join(root, 'build-wasm');
const CACHE_NAME = 'gemma4-webgpu-files-v1';
// The bundled model's files, as the page downloads them.
const DEMO = ['config.json', 'generation_config.json', 'tokenizer.json', 'model.safetensors', 'assistant/config.json',
              'assistant/model.safetensors'].map((f) => `testdata/models/demo/${f}`);
const MINI = ['testdata/models/e2b_mini/config.json', 'testdata/models/e2b_mini/generation_config.json',
              'testdata/models/e2b_mini/model.safetensors', 'testdata/models/e2b_mini/assistant_centroid/config.json',
              'testdata/models/e2b_mini/assistant_centroid/model.safetensors', 'testdata/tokenizers/mini/tokenizer.json'];

function referenceText() {
  const out = execFileSync(join(root, 'build', 'gemma4'), [
    'generate', '--model', join(root, 'testdata/models/e2b_mini'), '--tokenizer',
    join(root, 'testdata/tokenizers/mini/tokenizer.json'), '--chat', '--prompt', PROMPT, '--max-new-tokens', String(N),
    '--json'], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()).text;
}

const stats = async (page) => JSON.parse(await page.getAttribute('#stats', 'data-json'));
const state = (page, s) => page.waitForSelector(`#status[data-state="${s}"]`, WAIT);
const settled = (page) => page.waitForFunction(
  () => ['ready', 'error'].includes(document.querySelector('#status').dataset.state), null, WAIT);

// Each page records its states (with the status line when each began) and progress values.
function recordPhases() {
  window.__states = [];
  window.__progress = [];
  document.addEventListener('DOMContentLoaded', () => {
    const status = document.querySelector('#status'), progress = document.querySelector('#progress');
    new MutationObserver(() => {
      if (window.__states.at(-1)?.[0] !== status.dataset.state) window.__states.push([status.dataset.state, status.textContent]);
    }).observe(status, { attributes: true, attributeFilter: ['data-state'] });
    new MutationObserver(() => window.__progress.push(progress.value)).observe(progress, { attributes: true, attributeFilter: ['value'] });
  });
}

// The page offers the trained demo pair first; the tests chat with the random test model
// (`pick`), whose kernels compile and run several times faster in software rendering.
async function open(context, base, pick = 'e2b_mini') {
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForSelector('#models[data-ready="1"]');
  if (pick) await page.check(`#models .model[data-id="${pick}"] input`);
  return page;
}

async function load(page) {
  await page.click('#load');
  await settled(page);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'ready', await page.textContent('#status'));
}

// Sends a prompt with Enter and returns the reply's text, finish reason, usage and node.
async function ask(page, { prompt = PROMPT, maxTokens = N, mtp = true, stopAfterText = false } = {}) {
  const before = await page.locator('.msg.assistant').count();
  await page.fill('#max-tokens', String(maxTokens));
  if (!(await page.isDisabled('#mtp'))) await page.setChecked('#mtp', mtp);
  await page.fill('#prompt', prompt);
  await page.press('#prompt', 'Enter');
  assert.equal(await page.inputValue('#prompt'), '', 'the input is cleared when the prompt is sent');
  return reply(page, before, { stopAfterText });
}

async function reply(page, index, { stopAfterText = false } = {}) {
  if (stopAfterText) {
    await page.waitForFunction((i) => document.querySelectorAll('.msg.assistant .text')[i]?.textContent.length > 0, index, WAIT);
    await page.click('#stop');
  }
  await page.waitForFunction((i) => document.querySelectorAll('.msg.assistant')[i]?.dataset.done === '1', index, WAIT);
  const node = page.locator('.msg.assistant').nth(index);
  return { text: await node.locator('.text').textContent(), finish: await node.getAttribute('data-finish'),
           usage: JSON.parse(await node.getAttribute('data-usage')), node };
}

test('the demo page chats with the bundled model in headless Chromium', { timeout: 1800000 }, async (t) => {
  const want = referenceText();
  assert.ok(want.length > 0 && !want.includes('\uFFFD'), `the reference reply is text: ${JSON.stringify(want)}`);
  const requests = [], failed = [];
  const server = await serve({ onRequest: (method, path) => requests.push(path),
                               onResponse: (method, path, status) => { if (status >= 400) failed.push(`${status} ${path}`); } });
  const base = `http://127.0.0.1:${server.address().port}/web/demo/`;
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(base).origin });
    await context.addInitScript(recordPhases);
    const page = await open(context, base, null);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));

    await t.test('the model list offers the bundled models with their download sizes', async () => {
      const mb = (files) => pageMb(files.reduce((n, f) => n + statSync(join(root, f)).size, 0));
      const first = page.locator('#models .model').first();
      assert.equal(await first.getAttribute('data-id'), 'demo', 'the trained pair comes first');
      assert.equal(await first.locator('.size').textContent(), mb(DEMO));
      assert.ok(await first.locator('input').isChecked(), 'the first model is picked');
      const mini = page.locator('#models .model[data-id="e2b_mini"]');
      assert.equal(await mini.locator('.size').textContent(), mb(MINI));
      await mini.locator('input').check();
    });

    await t.test('loading shows progress that only grows, and asks for no missing file', async () => {
      await load(page);
      assert.deepEqual(requests.filter((p) => p.startsWith('/testdata/')).sort(), MINI.map((f) => `/${f}`).sort());
      const progress = await page.evaluate(() => window.__progress);
      assert.ok(new Set(progress).size >= 4, `progress moved: ${progress}`);
      progress.forEach((v, i) => assert.ok(i === 0 || v >= progress[i - 1], `progress went back: ${progress}`));
      assert.equal(progress.at(-1), 1);
      assert.match(await page.textContent('#progress-text'), /downloaded 4\.3 MB of 4\.3 MB - loaded in/);
      assert.deepEqual(failed, []);
    });

    await t.test('Shift+Enter is a new line, Enter sends; the phases show in order', async () => {
      await page.fill('#prompt', 'line one');
      await page.press('#prompt', 'Shift+Enter');
      await page.keyboard.type('line two');
      assert.equal(await page.inputValue('#prompt'), 'line one\nline two');
      assert.equal(await page.locator('.msg').count(), 0, 'Shift+Enter sent nothing');
      await page.evaluate(() => { window.__states.length = 0; });
      const on = await ask(page, { mtp: true });
      assert.equal(await page.locator('.msg.user .text').first().textContent(), PROMPT);
      assert.equal(on.text, want);
      assert.equal(on.finish, 'length');
      const states = await page.evaluate(() => window.__states);
      assert.deepEqual(states.map(([s]) => s), ['warmup', 'generating', 'ready']);
      assert.match(states[0][1], /^warming up: compiling GPU shaders/);
      assert.match(states[2][1], new RegExp(`^done: ${N} tokens in`));
    });

    await t.test('a reply shows its own figures; the totals say since when', async () => {
      const { usage, node } = await reply(page, 0);
      const s = usage.speculative;
      assert.ok(s.enabled && s.drafted > 0, 'MTP drafted');
      assert.equal(await node.locator('.figures').textContent(),
                   `${N} tokens · decode ${usage.decode_tokens_per_s.toFixed(1)} tok/s · first token `
                   + `${usage.time_to_first_token_ms < 1e4 ? `${usage.time_to_first_token_ms.toFixed(0)} ms` : `${(usage.time_to_first_token_ms / 1000).toFixed(1)} s`}`
                   + ` · MTP: ${s.accepted} of ${s.drafted} drafts accepted (${(100 * s.acceptance_rate).toFixed(0)} %) · stopped at max tokens`);
      assert.equal(await page.textContent('#r-drafted'), `${s.drafted} / ${s.accepted}`);
      assert.equal(await page.textContent('#r-tokens'), `${usage.prompt_tokens} / ${N}`);
      assert.equal(await page.textContent('#totals-title'), 'Totals since load');
      const total = await stats(page);
      assert.equal(await page.textContent('#t-requests'), '1');
      assert.equal(await page.textContent('#t-drafted'), `${total.drafted} / ${total.accepted}`);
      assert.equal(await page.textContent('#reply-stats dt:first-child'), 'prompt / reply tokens');
    });

    await t.test('Copy puts the reply on the clipboard; Regenerate asks again', async () => {
      const first = page.locator('.msg.assistant').first();
      await first.locator('.copy').click();
      await page.waitForSelector('.msg.assistant[data-copied="1"]');
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), want);
      await first.locator('.regen').click();
      const again = await reply(page, 0);
      assert.equal(again.text, want);
      assert.equal(await page.locator('.msg').count(), 2, 'the reply was replaced, not added');
      assert.equal((await stats(page)).requests, 2);
      assert.equal(await page.textContent('#t-requests'), '2');
    });

    await t.test('stop interrupts mid-stream; the next request, MTP off, gives the reference text', async () => {
      const stopped = await ask(page, { maxTokens: 400, stopAfterText: true });
      assert.equal(stopped.finish, 'interrupted');
      assert.ok((await stats(page)).last.completion_tokens < 400);
      assert.match(await stopped.node.locator('.figures').textContent(), / · interrupted$/);
      const rounds = (await stats(page)).rounds;
      await page.click('#new-chat');  // a fresh conversation for the reference prompt
      const off = await ask(page, { mtp: false });
      assert.equal(off.text, want);
      assert.equal((await stats(page)).rounds, rounds, 'no rounds without MTP');
      assert.match(await off.node.locator('.figures').textContent(), / · MTP off · /);
      assert.equal(await page.textContent('#r-drafted'), 'MTP off');
    });

    await t.test('a conversation goes on with the history', async () => {
      const follow = await ask(page, { prompt: 'Tell me a story.', maxTokens: 4 });
      assert.equal(follow.finish, 'length');
      assert.ok((await stats(page)).last.prompt_tokens > 30, 'the second turn carries the first');
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, 'demo-bundled-1280.png'), fullPage: true });
    });

    await t.test('a second load comes from the cache, in a Web Worker; then the cache is deleted', async () => {
      const page2 = await open(context, base);
      await page2.click('#setup summary');  // Options
      await page2.setChecked('#worker', true);
      requests.length = 0;
      await load(page2);
      assert.deepEqual(requests.filter((p) => p.startsWith('/testdata/')), [], 'no model file was asked of the server');
      assert.equal(await page2.getAttribute('#progress-text', 'data-cached-files'), String(MINI.length));
      assert.equal((await ask(page2, { mtp: true })).text, want);
      assert.ok((await stats(page2)).rounds > 0);
      await page2.click('#delete-cache');
      await page2.waitForFunction(() => document.querySelector('#cache-text').textContent !== '');
      assert.equal(await page2.textContent('#cache-text'), `deleted ${MINI.length} cached files`);
      assert.equal(await page2.evaluate((name) => caches.has(name), CACHE_NAME), false);
      await page2.click('#unload');
      await state(page2, 'empty');
      await page2.close();
    });

    await t.test('reset zeroes the counters (the sources outlive the deleted cache)', async () => {
      assert.ok((await stats(page)).requests > 0);
      await page.click('#reset');
      await settled(page);
      assert.equal(await page.getAttribute('#status', 'data-state'), 'ready', await page.textContent('#status'));
      const s = await stats(page);
      for (const k of ['requests', 'completion_tokens', 'rounds', 'drafted', 'accepted']) assert.equal(s[k], 0, k);
      assert.equal(await page.textContent('#t-rounds'), '0');
      assert.equal(await page.textContent('#t-drafted'), '0 / 0');
      assert.equal(await page.textContent('#totals-title'), 'Totals since reset');
    });

    await t.test('a full storage quota is reported and the model still loads', async () => {
      const fresh = await browser.newContext();
      await fresh.addInitScript(() => {
        Cache.prototype.put = () => Promise.reject(new DOMException('simulated: the quota is used up', 'QuotaExceededError'));
      });
      const page4 = await open(fresh, base);
      await load(page4);
      assert.match(await page4.textContent('#progress-text'), /loaded in/);
      assert.match(await page4.textContent('#notice'), /config\.json was not cached \(QuotaExceededError: simulated/);
      const s = await stats(page4);
      assert.ok(s.load.target.downloaded_bytes > 0);
      assert.equal(s.loaded, true);
      assert.ok(s.gpu_buffers > 0, 'the weights are on the GPU');
      await fresh.close();
    });
    assert.deepEqual(failed, [], 'no request failed');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    closeServer(server);
  }
});

// A runtime without a GPU that answers what the test queues in window.__stub.replies and keeps
// the requests it gets in window.__stub.requests: it stands in for both builds' modules.
const STUB_RUNTIME = `
const stub = () => (window.__stub ??= { requests: [], replies: [] });
function factory(mtp) {
  const create = async () => {
    let loaded = false, requests = 0;
    return {
      build: { factory: 'stub', mtp, profile: false },
      async load({ onProgress }) {
        for (const loaded of [0, 600, 1000]) onProgress({ model: 'target', file: 'model.safetensors', phase: 'download', loaded, total: 1000 });
        onProgress({ model: 'all', file: '', phase: 'upload', loaded: 1000, total: 1000 });
        loaded = true;
      },
      chat: { completions: { async create(params) {
        stub().requests.push(params);
        requests++;
        const content = stub().replies.shift() ?? '';
        const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, prefill_tokens_per_s: 90, decode_tokens_per_s: 30,
                        time_to_first_token_ms: 5, total_ms: 100, speculative: { enabled: mtp, draft_tokens: 2, rounds: 1, drafted: 2,
                        accepted: 1, acceptance_rate: 0.5, accepted_per_position: [1, 0] } };
        return (async function* () {
          yield { choices: [{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }] };
          yield { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage };
        })();
      } } },
      interrupt() {},
      async reset() {},
      async unload() { loaded = false; },
      stats: () => ({ loaded, requests, prompt_tokens: 0, completion_tokens: 0, rounds: 0, drafted: 0, accepted: 0,
                      acceptance_rate: 0, accepted_per_position: [], current: null, model: { layers: 1, backend: 'none', assistant: mtp },
                      load: { ms: 1, target: { cached_files: 0 }, assistant: null } }),
    };
  };
  create.deleteCache = async () => 0;
  return create;
}
export const createGemma4 = factory(false);
export const createGemma4Mtp = factory(true);
`;

// Where the page's parts are, in page coordinates, and how wide the document is.
const layout = (page) => page.evaluate(() => {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return { top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right };
  };
  return {
    innerWidth, scrollWidth: document.documentElement.scrollWidth, bodyScrollWidth: document.body.scrollWidth,
    log: box(document.querySelector('#log')), prompt: box(document.querySelector('#prompt')),
    reply: box(document.querySelector('.msg.assistant:last-child .text')),
    // Content wider than its box (scrolled sideways inside the log, or spilling out).
    spill: ['#log', '.msg.assistant:last-child .text'].map((s) => document.querySelector(s))
      .map((el) => el.scrollWidth - el.clientWidth),
    buttons: [...document.querySelectorAll('button')].filter((b) => b.getClientRects().length)
      .map((b) => ({ name: b.id || b.className, ...box(b) })),
    // Counters that wrap onto a second line (their value column too narrow).
    wrapped: [...document.querySelectorAll('#stats dd')]
      .filter((dd) => dd.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(dd).lineHeight)).map((dd) => dd.id),
  };
});

test('the page shows replies as text and fits 1280 and 400 px wide', { timeout: 300000 }, async (t) => {
  const server = await serve();
  const base = `http://127.0.0.1:${server.address().port}/web/demo/`;
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    for (const build of ['gemma4', 'gemma4-mtp']) {
      await context.route(`**/dist/${build}.mjs`, (route) => route.fulfill({ contentType: 'text/javascript', body: STUB_RUNTIME }));
    }
    const page = await open(context, base);
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await load(page);
    const send = async (text, content) => {
      await page.evaluate((c) => window.__stub.replies.push(c), content);
      await page.fill('#prompt', text);
      await page.press('#prompt', 'Enter');
      assert.equal(await page.inputValue('#prompt'), '', 'Enter sent the prompt and cleared the input');
      await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant[data-done="1"]').length === n,
                                 await page.locator('.msg.user').count(), WAIT);
    };
    await page.evaluate(() => { window.__stub ??= { requests: [], replies: [] }; });

    await t.test('a reply with HTML in it is shown as text', async () => {
      const html = '<b>bold</b> <img src="x" onerror="window.__injected = 1"> **not bold** `code`';
      await send('Show me some markup', html);
      const text = page.locator('.msg.assistant .text').last();
      assert.equal(await text.textContent(), html);
      assert.equal(await text.evaluate((el) => el.children.length), 0, 'no element was made from the reply');
      assert.equal(await page.evaluate(() => window.__injected), undefined);
    });

    await t.test('the system prompt leads the request', async () => {
      await page.fill('#system', 'Answer in French.');
      await send('Hello', 'Bonjour');
      const last = (await page.evaluate(() => window.__stub.requests)).at(-1);
      assert.deepEqual(last.messages, [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'Show me some markup' },
        { role: 'assistant', content: '<b>bold</b> <img src="x" onerror="window.__injected = 1"> **not bold** `code`' },
        { role: 'user', content: 'Hello' }]);
      await page.fill('#system', '');
    });

    await t.test('a 3,000-character reply without spaces wraps, at 1280 and 400 px wide', async () => {
      await send('A long word, please', 'x'.repeat(3000));
      for (const width of [1280, 400]) {
        await page.setViewportSize({ width, height: 800 });
        const at = await layout(page);
        assert.ok(at.scrollWidth <= at.innerWidth && at.bodyScrollWidth <= at.innerWidth,
                  `${width} px: the document is ${at.scrollWidth} px wide`);
        assert.ok(at.reply.right <= at.innerWidth, `${width} px: the reply ends at ${at.reply.right}`);
        assert.deepEqual(at.spill, [0, 0], `${width} px: the log and the reply are wider inside than their boxes`);
        assert.ok(at.prompt.top >= at.log.bottom, `${width} px: the input (${at.prompt.top}) is below the messages (${at.log.bottom})`);
        assert.deepEqual(at.wrapped, [], `${width} px: counters on two lines`);
        for (const b of at.buttons) {
          assert.ok(b.left >= 0 && b.right <= at.innerWidth, `${width} px: button ${b.name} at ${b.left}..${b.right}`);
        }
        mkdirSync(SHOTS, { recursive: true });
        await page.screenshot({ path: join(SHOTS, `demo-long-reply-${width}.png`), fullPage: true });
      }
    });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    closeServer(server);
  }
});

test('the served model list has the entries whose files exist, the first first', () => {
  const dir = mkdtempSync(join(tmpdir(), 'demo-list-'));
  try {
    const put = (path, text) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    put('web/demo/models.json', JSON.stringify({ models: [
      { id: 'pair', target: '../../m/pair/', assistant: '../../m/pair/assistant/' },
      { id: 'absent', target: '../../m/absent/' },
      { id: 'sharded', target: '../../m/sharded/', tokenizer: '../../m/tok.json' }] }));
    put('m/pair/config.json', '{}');
    put('m/pair/model.safetensors', '12345');
    put('m/pair/tokenizer.json', '123');
    put('m/pair/golden.json', 'not served');
    put('m/pair/assistant/config.json', '{}');
    put('m/pair/assistant/model.safetensors', '1');
    put('m/sharded/config.json', '{}');
    put('m/sharded/model.safetensors.index.json', JSON.stringify({ weight_map: { a: 'one.safetensors', b: 'two.safetensors' } }));
    put('m/sharded/one.safetensors', '1');
    put('m/sharded/two.safetensors', '22');
    put('m/tok.json', '1234');
    const { models } = catalogue(dir);
    assert.deepEqual(models.map((m) => m.id), ['pair', 'sharded']);
    assert.deepEqual(models[0].files, { target: { 'config.json': 2, 'tokenizer.json': 3, 'model.safetensors': 5 },
                                        assistant: { 'config.json': 2, 'model.safetensors': 1 } });
    assert.equal(models[0].bytes, 13);
    assert.deepEqual(Object.keys(models[1].files.target).sort(),
                     ['config.json', 'model.safetensors.index.json', 'one.safetensors', 'two.safetensors']);
    assert.equal(models[1].files.tokenizer, 4);
    assert.equal(models[1].bytes, 2 + models[1].files.target['model.safetensors.index.json'] + 1 + 2 + 4);
    // A shard the index names but the folder lacks: the entry is not offered.
    rmSync(join(dir, 'm/sharded/two.safetensors'));
    assert.deepEqual(catalogue(dir).models.map((m) => m.id), ['pair']);
    put('web/demo/models.json', JSON.stringify({ models: [{ id: 'out', target: '../../../elsewhere/' }] }));
    assert.throws(() => catalogue(dir), /out: target '..\/..\/..\/elsewhere\/' is outside the repository/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a tokenizer given apart is not asked of the model folder', { timeout: 300000 }, async () => {
  const asked = [];
  const server = await serve({ onResponse: (method, path, status) => asked.push(`${status} ${path}`) });
  try {
    const url = (path) => `http://127.0.0.1:${server.address().port}/${path}`;
    const { createGemma4 } = await import('../../dist/gemma4.mjs');
    const gemma = await createGemma4({ backend: 'cpu', cache: false });
    await gemma.load({ target: url('testdata/models/e2b_mini/'), tokenizer: url('testdata/tokenizers/mini/tokenizer.json') });
    assert.ok(asked.includes('200 /testdata/tokenizers/mini/tokenizer.json'), asked.join(', '));
    assert.ok(!asked.some((a) => a.endsWith('/testdata/models/e2b_mini/tokenizer.json')), asked.join(', '));
    await gemma.unload();
  } finally {
    closeServer(server);
  }
});
