// The demo page (web/demo/) in headless Chromium on SwiftShader's WebGPU, driven like a user: it
// loads the bundled model and answers a fixed prompt with the CPU reference's greedy text, with
// MTP on and off; Stop interrupts mid-stream and the next request works; Reset zeroes the
// counters; a second load comes from the Cache API (no model file asked of the server); the same
// in a Web Worker. Screenshots go to build-wasm/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { launchBrowser, serve, closeServer } from './browser.mjs';

const PROMPT = 'Hello there, how are you?';
const N = 12;

function referenceText() {
  const out = execFileSync(join(root, 'build', 'gemma4'), [
    'generate', '--model', join(root, 'testdata/models/e2b_mini'), '--tokenizer',
    join(root, 'testdata/tokenizers/mini/tokenizer.json'), '--chat', '--prompt', PROMPT, '--max-new-tokens', String(N),
    '--json'], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()).text;
}

const stats = async (page) => JSON.parse(await page.getAttribute('#stats', 'data-json'));
const state = (page, s, timeout = 240000) => page.waitForSelector(`#status[data-state="${s}"]`, { timeout });

async function load(page) {
  await page.click('#load');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('#status').dataset.state),
                             null, { timeout: 240000 });
  assert.equal(await page.getAttribute('#status', 'data-state'), 'ready', await page.textContent('#status'));
}

// Sends a prompt and returns the assistant's reply and its finish reason.
async function ask(page, { prompt = PROMPT, maxTokens = N, mtp = true, stopAfterText = false } = {}) {
  const before = await page.locator('.msg.assistant').count();
  await page.fill('#prompt', prompt);
  await page.fill('#max-tokens', String(maxTokens));
  if (!(await page.isDisabled('#mtp'))) await page.setChecked('#mtp', mtp);
  await page.click('#send');
  const reply = page.locator('.msg.assistant').nth(before);
  if (stopAfterText) {
    await page.waitForFunction((i) => document.querySelectorAll('.msg.assistant')[i]?.textContent.length > 0, before,
                               { timeout: 240000 });
    await page.click('#stop');
  }
  await page.waitForFunction((i) => document.querySelectorAll('.msg.assistant')[i]?.dataset.done === '1', before,
                             { timeout: 240000 });
  return { text: await reply.textContent(), finish: await reply.getAttribute('data-finish') };
}

test('the demo page chats with the bundled model in headless Chromium', { timeout: 900000 }, async (t) => {
  const want = referenceText();
  const requests = [];
  const server = await serve({ onRequest: (method, path) => requests.push(path) });
  const base = `http://127.0.0.1:${server.address().port}/web/demo/`;
  const browser = await launchBrowser();
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(base);
    await state(page, 'empty');
    await load(page);
    const modelFiles = requests.filter((p) => p.startsWith('/testdata/'));
    assert.ok(modelFiles.some((p) => p.endsWith('/model.safetensors')), 'the weights came from the server');

    await t.test('gpuValidation: false is refused in a browser (Node only)', async () => {
      const message = await page.evaluate(async () => {
        const { createGemma4 } = await import('/dist/gemma4.mjs');
        try {
          await createGemma4({ gpuValidation: false });
          return 'created';
        } catch (e) {
          return e.message;
        }
      });
      assert.match(message, /gpuValidation: false needs Node/);
    });

    await t.test('greedy text equals the CPU reference, MTP on and off', async () => {
      const on = await ask(page, { mtp: true });
      assert.equal(on.text, want);
      assert.equal(on.finish, 'length');
      const s = await stats(page);
      assert.ok(s.rounds > 0 && s.drafted > 0, 'the speculative counters moved');
      assert.equal(await page.textContent('#s-drafted'), `${s.drafted} / ${s.accepted}`);
      await page.click('#new-chat');
      const off = await ask(page, { mtp: false });
      assert.equal(off.text, want);
      assert.equal((await stats(page)).rounds, s.rounds, 'no rounds without MTP');
    });

    await t.test('stop interrupts mid-stream and the next request works', async () => {
      const stopped = await ask(page, { maxTokens: 400, stopAfterText: true });
      assert.equal(stopped.finish, 'interrupted');
      assert.ok((await stats(page)).last.completion_tokens < 400);
      await page.click('#new-chat');  // a fresh conversation for the reference prompt
      const next = await ask(page);
      assert.equal(next.text, want);
    });

    await t.test('a conversation goes on with the history', async () => {
      const follow = await ask(page, { prompt: 'Tell me a story.', maxTokens: 4 });
      assert.equal(follow.finish, 'length');
      assert.ok((await stats(page)).last.prompt_tokens > 30, 'the second turn carries the first');
      await page.screenshot({ path: join(root, 'build-wasm', 'demo.png'), fullPage: true });
    });

    await t.test('reset zeroes the counters', async () => {
      assert.ok((await stats(page)).requests > 0);
      await page.click('#reset');
      await state(page, 'ready');
      const s = await stats(page);
      for (const k of ['requests', 'completion_tokens', 'rounds', 'drafted', 'accepted']) assert.equal(s[k], 0, k);
      assert.equal(await page.textContent('#s-rounds'), '0');
      assert.equal(await page.textContent('#s-drafted'), '0 / 0');
    });

    await t.test('a second load comes from the cache', async () => {
      const page2 = await context.newPage();
      await page2.goto(base);
      await state(page2, 'empty');
      requests.length = 0;
      await load(page2);
      assert.deepEqual(requests.filter((p) => p.startsWith('/testdata/')), [], 'no model file was asked of the server');
      assert.ok(Number(await page2.getAttribute('#progress-text', 'data-cached-files')) >= 4);
      assert.equal((await ask(page2)).text, want);
      await page2.close();
    });

    await t.test('the same in a Web Worker', async () => {
      const page3 = await context.newPage();
      await page3.goto(base);
      await state(page3, 'empty');
      await page3.setChecked('#worker', true);
      await load(page3);
      assert.equal((await ask(page3, { mtp: true })).text, want);
      assert.ok((await stats(page3)).rounds > 0);
      await page3.click('#unload');
      await state(page3, 'empty');
      await page3.close();
    });
    await t.test('a full storage quota is reported and the model still loads', async () => {
      const fresh = await browser.newContext();
      await fresh.addInitScript(() => {
        Cache.prototype.put = () => Promise.reject(new DOMException('simulated: the quota is used up', 'QuotaExceededError'));
      });
      const page4 = await fresh.newPage();
      await page4.goto(base);
      await state(page4, 'empty');
      await load(page4);
      assert.match(await page4.textContent('#progress-text'), /loaded in/);
      assert.match(await page4.textContent('#notice'), /config\.json was not cached \(QuotaExceededError: simulated/);
      const s = await stats(page4);
      assert.ok(s.load.target.downloaded_bytes > 0);
      assert.equal((await ask(page4)).text, want);
      await fresh.close();
    });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    closeServer(server);
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
