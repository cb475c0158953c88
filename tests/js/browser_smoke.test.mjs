// Headless Chromium (Debian's, driven by playwright-core, WebGPU on SwiftShader) runs the bundled
// model through the WebAssembly module and the browser's WebGPU, to the reference's greedy tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './cli.mjs';
import { launchBrowser, serve, closeServer } from './browser.mjs';

test('the bundled model generates the reference tokens in headless Chromium', { timeout: 300000 }, async () => {
  const golden = JSON.parse(readFileSync(join(root, 'testdata/models/e2b_mini/golden.json'), 'utf8'));
  const p = golden.prompts[1];
  const n = 8;
  let resolveResult;
  const result = new Promise((r) => { resolveResult = r; });
  const server = await serve({
    routes: {
      'POST /result': (req, res) => {
        let body = '';
        req.on('data', (c) => { body += c; });
        req.on('end', () => { res.end('ok'); resolveResult(JSON.parse(body)); });
      },
    },
  });
  const port = server.address().port;
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/tests/browser/smoke.html?model=testdata/models/e2b_mini&ids=${p.prompt_ids.join(',')}&n=${n}`);
    let timer;
    const timeout = new Promise((_, no) => { timer = setTimeout(() => no(new Error('no result in 240 s')), 240000); });
    const r = await Promise.race([result, timeout]).finally(() => clearTimeout(timer));
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.trim().split('\n');
    const j = JSON.parse(lines[lines.length - 1]);
    assert.equal(j.stats.backend, 'webgpu');
    assert.deepEqual(j.tokens, p.greedy_tokens.slice(0, n));
    await page.screenshot({ path: join(root, 'build-wasm', 'browser_smoke.png') });
  } finally {
    await browser.close();
    closeServer(server);
  }
});
