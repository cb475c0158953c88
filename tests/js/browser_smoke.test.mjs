// Headless Chromium (Debian's, driven by playwright-core, WebGPU on SwiftShader) runs the bundled
// model through the WebAssembly module and the browser's WebGPU, to the reference's greedy tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync, existsSync, statSync } from 'node:fs';
import { join, dirname, resolve, extname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.json': 'application/json',
                '.wasm': 'application/wasm' };

test('the bundled model generates the reference tokens in headless Chromium', { timeout: 300000 }, async () => {
  const golden = JSON.parse(readFileSync(join(root, 'testdata/models/e2b_mini/golden.json'), 'utf8'));
  const p = golden.prompts[1];
  const n = 8;
  let resolveResult;
  const result = new Promise((r) => { resolveResult = r; });
  const server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/result') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => { res.end('ok'); resolveResult(JSON.parse(body)); });
      return;
    }
    const path = normalize(join(root, decodeURIComponent(new URL(req.url, 'http://x').pathname)));
    if (!path.startsWith(root) || !existsSync(path) || !statSync(path).isFile()) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('Content-Type', TYPES[extname(path)] || 'application/octet-stream');
    res.end(readFileSync(path));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
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
    server.closeAllConnections?.();
    server.close();
  }
});
