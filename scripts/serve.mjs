#!/usr/bin/env node
// A small static server for the demo page (and the browser tests): serves the repository, so
// the page finds dist/ and the bundled models.
//   node scripts/serve.mjs [PORT]   then open http://127.0.0.1:PORT/web/demo/
// Build dist/ first (scripts/build-web.sh). Only GET and HEAD of files under the repository, and
// the demo's model list (web/demo/models.json) with what this checkout has of it (catalogue()).
import { createServer } from 'node:http';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve, extname, normalize, dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = { '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript', '.js': 'text/javascript',
                '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png' };
export const CATALOGUE_PATH = '/web/demo/models.json';

const fileSize = (path) => (existsSync(path) && statSync(path).isFile() ? statSync(path).size : null);

// The files a model folder offers the runtime, by name with their sizes: config.json, the
// optional generation_config.json and tokenizer.json, and the weights (model.safetensors, or
// the index and the shards it names). null when the folder lacks config.json or weights.
function modelFiles(dir) {
  const files = {};
  for (const name of ['config.json', 'generation_config.json', 'tokenizer.json', 'model.safetensors.index.json']) {
    const size = fileSize(join(dir, name));
    if (size !== null) files[name] = size;
  }
  if (files['config.json'] === undefined) return null;
  let weights = ['model.safetensors'];
  if (files['model.safetensors.index.json'] !== undefined) {
    const indexFile = join(dir, 'model.safetensors.index.json');
    let index;
    try {
      index = JSON.parse(readFileSync(indexFile, 'utf8'));
    } catch (e) {
      throw new Error(`${indexFile}: ${e.message}`);
    }
    weights = [...new Set(Object.values(index?.weight_map ?? {}))];
  }
  for (const name of weights) {
    const size = fileSize(join(dir, name));
    if (size === null) return null;
    files[name] = size;
  }
  return files;
}

// web/demo/models.json as the page gets it: the entries whose files are all in `root`, in the
// file's order, each with `files` ({ target: {name: bytes}, assistant?, tokenizer?: bytes }) and
// `bytes` (the download in all). Paths in the list are relative to the list's URL and must stay
// inside `root`.
export function catalogue(root = ROOT) {
  const listFile = join(root, CATALOGUE_PATH);
  let list;
  try {
    list = JSON.parse(readFileSync(listFile, 'utf8'));
  } catch (e) {
    throw new Error(`${listFile}: ${e.message}`);
  }
  if (!Array.isArray(list?.models)) throw new Error(`${listFile}: expected { "models": [...] }`);
  const inRoot = (rel, what) => {
    const path = resolve(dirname(listFile), String(rel));
    if (path !== root && !path.startsWith(root + sep)) throw new Error(`${listFile}: ${what} '${rel}' is outside the repository`);
    return path;
  };
  const models = [];
  for (const m of list.models) {
    if (typeof m?.id !== 'string' || typeof m.target !== 'string') throw new Error(`${listFile}: each model needs an id and a target`);
    const files = { target: modelFiles(inRoot(m.target, `${m.id}: target`)) };
    if (!files.target) continue;
    if (m.assistant !== undefined) {
      files.assistant = modelFiles(inRoot(m.assistant, `${m.id}: assistant`));
      if (!files.assistant) continue;
    }
    if (m.tokenizer !== undefined) {
      files.tokenizer = fileSize(inRoot(m.tokenizer, `${m.id}: tokenizer`));
      if (files.tokenizer === null) continue;
    }
    const sum = (f) => Object.values(f ?? {}).reduce((a, b) => a + b, 0);
    models.push({ ...m, files, bytes: sum(files.target) + sum(files.assistant) + (files.tokenizer ?? 0) });
  }
  return { models };
}

// Starts serving `root`; onRequest(method, path) sees every request and onResponse(method,
// path, status) every answer (tests count them); `routes` maps "METHOD /path" to a
// handler(req, res) for anything else.
export function serve({ root = ROOT, port = 0, host = '127.0.0.1', onRequest = () => {}, onResponse = () => {},
                        routes = {} } = {}) {
  const listed = (req, res) => {
    let body;
    try {
      body = JSON.stringify(catalogue(root), null, 1);
    } catch (e) {
      res.statusCode = 500;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      return res.end(`${e.message}\n`);
    }
    res.setHeader('Content-Type', TYPES['.json']);
    res.setHeader('Cache-Control', 'no-cache');
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  routes = { [`GET ${CATALOGUE_PATH}`]: listed, [`HEAD ${CATALOGUE_PATH}`]: listed, ...routes };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    onRequest(req.method, path);
    res.on('finish', () => onResponse(req.method, path, res.statusCode));
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
  try {
    const { models } = catalogue();
    console.log(`models on offer: ${models.map((m) => m.id).join(', ') || 'none (see web/demo/models.json)'}`);
  } catch (e) {
    console.log(`the model list is broken: ${e.message}`);
  }
  console.log(`demo: http://127.0.0.1:${p}/web/demo/`);
}
