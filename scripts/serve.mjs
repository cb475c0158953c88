#!/usr/bin/env node
// A small static server for the demo page (and the browser tests): serves the repository, so
// the page finds dist/ and the bundled model.
//   node scripts/serve.mjs [PORT]   then open http://127.0.0.1:PORT/web/demo/
// Build dist/ first (scripts/build-web.sh). Only GET and HEAD of files under the repository.
import { createServer } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { join, resolve, extname, normalize, dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = { '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript', '.js': 'text/javascript',
                '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png' };

// Starts serving `root`; onRequest(method, path) sees every request (tests count them);
// `routes` maps "METHOD /path" to a handler(req, res) for anything else.
export function serve({ root = ROOT, port = 0, host = '127.0.0.1', onRequest = () => {}, routes = {} } = {}) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    onRequest(req.method, path);
    const route = routes[`${req.method} ${path}`];
    if (route) return route(req, res);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.statusCode = 405;
      return res.end();
    }
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.statusCode = 403;
      return res.end();
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file) || !statSync(file).isFile()) {
      res.statusCode = 404;
      return res.end();
    }
    res.setHeader('Content-Type', TYPES[extname(file)] || 'application/octet-stream');
    res.setHeader('Content-Length', statSync(file).size);
    res.setHeader('Cache-Control', 'no-cache');
    if (req.method === 'HEAD') return res.end();
    createReadStream(file).pipe(res);
  });
  return new Promise((ok) => server.listen(port, host, () => ok(server)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? 8080);
  const server = await serve({ port });
  const { port: p } = server.address();
  if (!existsSync(join(ROOT, 'dist', 'manifest.json'))) console.log('dist/ is not built: run scripts/build-web.sh first');
  console.log(`demo: http://127.0.0.1:${p}/web/demo/`);
}
