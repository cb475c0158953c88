// Where a model's files come from, as sources the WASI file system reads (web/wasi_memfs.mjs):
// a folder URL (downloaded as a stream with progress into the Cache API under a versioned key,
// then read back from the cache, so a second load needs no network), File/Blob objects (read
// slice by slice, never whole), or a folder path in Node (read from the file, never whole).
//
// A model is given as one of:
//   'https://host/models/e2b/'  or a URL       a folder on a server
//   '/path/to/model'                           a folder (Node)
//   [File, File, ...] or a FileList            the folder's files, by name
//   { 'config.json': Blob | File | Uint8Array | URL string, ... }
// The folder holds config.json, optionally generation_config.json and tokenizer.json, and
// model.safetensors or model.safetensors.index.json with its shards.
export const CACHE_NAME = 'gemma4-webgpu-files-v1';

const OPTIONAL = ['generation_config.json', 'tokenizer.json', 'model.safetensors.index.json'];
const READ_AHEAD = 1 << 20;  // small reads (headers) are served from blocks of this size
const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';

// A Blob read in slices; reads smaller than READ_AHEAD come from one cached block.
export function blobSource(blob) {
  let block = null, blockAt = 0;
  return {
    size: blob.size,
    async read(at, n) {
      if (n >= READ_AHEAD) return new Uint8Array(await blob.slice(at, at + n).arrayBuffer());
      if (!block || at < blockAt || at + n > blockAt + block.length) {
        blockAt = at;
        block = new Uint8Array(await blob.slice(at, Math.min(blob.size, at + READ_AHEAD)).arrayBuffer());
      }
      return block.subarray(at - blockAt, at - blockAt + n);
    },
  };
}

async function nodeFileSource(path) {
  const fs = await import('node:fs');
  const fd = fs.openSync(path, 'r');
  const size = fs.fstatSync(fd).size;
  return {
    size,
    read(at, n) {
      const out = new Uint8Array(n);
      let done = 0;
      while (done < n) {
        const k = fs.readSync(fd, out, done, n - done, at + done);
        if (k <= 0) throw new Error(`${path}: short read at ${at + done}`);
        done += k;
      }
      return out;
    },
    close() { fs.closeSync(fd); },
  };
}

function asSource(value, name) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof Blob !== 'undefined' && value instanceof Blob) return blobSource(value);
  throw new TypeError(`gemma4 load: file '${name}' must be a Blob, File, Uint8Array or URL`);
}

const weightNames = async (files, readText, label) => {
  if (!files.has('model.safetensors.index.json')) return ['model.safetensors'];
  let index;
  try {
    index = JSON.parse(await readText('model.safetensors.index.json'));
  } catch (e) {
    throw new Error(`gemma4 load (${label}): model.safetensors.index.json: ${e.message}`);
  }
  if (!index || typeof index.weight_map !== 'object') {
    throw new Error(`gemma4 load (${label}): model.safetensors.index.json: no weight_map`);
  }
  return [...new Set(Object.values(index.weight_map))].sort();
};

async function sourceText(src) {
  const bytes = src instanceof Uint8Array ? src : await src.read(0, src.size);
  return new TextDecoder().decode(bytes);
}

// Fetches files of the folder at `root` (a URL ending in '/'), through the cache: fetch(name,
// { optional }) gives a source, or null for an optional file the server does not have.
// ctx: { label, onProgress, useCache, counts }.
function urlFolder(root, ctx) {
  const { label, onProgress, counts } = ctx;
  const recordKey = root + '.gemma4-files.json';
  let cache = null, record = null;
  const found = new Set();  // the files this folder has
  const cacheReady = (async () => {
    if (!ctx.useCache || typeof caches === 'undefined') return;
    try {
      cache = await caches.open(CACHE_NAME);
      const r = await cache.match(recordKey);
      if (r) record = new Set(await r.json());
    } catch {
      cache = null;
    }
  })();
  const fetchFile = async (name, { optional = false } = {}) => {
    await cacheReady;
    const url = root + name;
    const hit = cache ? await cache.match(url) : null;
    if (hit) {
      const blob = await hit.blob();
      counts.cached_files++;
      found.add(name);
      onProgress({ model: label, file: name, phase: 'cached', loaded: blob.size, total: blob.size });
      return blobSource(blob);
    }
    // A folder seen before says which optional files it lacks.
    if (record && !record.has(name) && optional) return null;
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw new Error(`gemma4 load (${label}): fetching ${url} failed: ${e.message}`);
    }
    if (!response.ok) {
      if (optional && response.status === 404) return null;
      throw new Error(`gemma4 load (${label}): ${url}: HTTP ${response.status}`);
    }
    counts.fetched_files++;
    found.add(name);
    const total = Number(response.headers.get('content-length')) || 0;
    let loaded = 0;
    const counted = response.body.pipeThrough(new TransformStream({
      transform(chunk, out) {
        loaded += chunk.length;
        counts.downloaded_bytes += chunk.length;
        onProgress({ model: label, file: name, phase: 'download', loaded, total });
        out.enqueue(chunk);
      },
    }));
    if (cache) {
      try {
        await cache.put(url, new Response(counted, { headers: { 'content-type': 'application/octet-stream' } }));
        return blobSource(await (await cache.match(url)).blob());
      } catch (e) {
        // Quota or storage errors: reported, and the file is fetched again into memory.
        onProgress({ model: label, file: name, phase: 'cache-error', error: `${e.name}: ${e.message}` });
        cache = null;
        return fetchFile(name, { optional });
      }
    }
    return blobSource(await new Response(counted).blob());
  };
  return {
    fetch: fetchFile,
    // Remembers which files the folder has, so that a later load asks the network for nothing.
    async remember() {
      if (!cache) return;
      try {
        await cache.put(recordKey, new Response(JSON.stringify([...found].sort())));
      } catch {
        // The cache is an optimisation; a failure shows up as a download next time.
      }
    },
  };
}

// In Node a string is a path unless it is a URL of the network (or blob/data); file: URLs, as
// strings or URL objects, are paths too. Elsewhere every string is a URL.
const isUrlLike = (s) => !isNode || (s instanceof URL ? s.protocol !== 'file:' : !/^file:/i.test(s) && /^(https?|blob|data):/i.test(s));
const absoluteUrl = (s) => new URL(String(s), typeof location !== 'undefined' ? location.href : undefined).href;

// The path a Node spec names: a file: URL (string or URL) made a path, or the string itself.
export async function nodePath(spec) {
  if (spec instanceof URL || /^file:/i.test(spec)) return (await import('node:url')).fileURLToPath(spec);
  return spec;
}

// Whether `spec` names a file or folder of this machine (Node only): a path or a file: URL.
export const isNodePath = (spec) => isNode && (typeof spec === 'string' || spec instanceof URL) && !isUrlLike(spec);

// Fetches a single file URL through the cache.
function fetchUrl(url, ctx) {
  const slash = url.lastIndexOf('/');
  return urlFolder(url.slice(0, slash + 1), ctx).fetch(url.slice(slash + 1));
}

// Deletes every file the runtime keeps in this origin's Cache API (all models); resolves to the
// number of model files deleted (0 where there is no Cache API, as in Node).
export async function deleteCache() {
  if (typeof caches === 'undefined' || !(await caches.has(CACHE_NAME))) return 0;
  const keys = await (await caches.open(CACHE_NAME)).keys();
  await caches.delete(CACHE_NAME);
  return keys.filter((r) => !r.url.endsWith('.gemma4-files.json')).length;
}

// Opens a model folder in two steps, so that the configuration can be checked before any weight
// is fetched: describe(skip) gets the small files but the optional ones named in `skip` (given
// otherwise: never asked for), weights() the rest. `label` names the model in
// errors and progress; onProgress gets { model, file, phase, loaded, total } with phase
// 'download', 'cached' (served from the cache) or 'cache-error' (not stored: { error }).
export function openModel(spec, { label, onProgress = () => {}, useCache = true }) {
  const files = new Map();
  const closers = [];
  const counts = { downloaded_bytes: 0, cached_files: 0, fetched_files: 0 };
  const ctx = { label, onProgress, useCache, counts };
  const shown = new Map();  // file name -> where it came from, as the caller gave it (for errors)
  let kind, folder = null, dir = null;
  if (isNodePath(spec)) {
    kind = 'path';
  } else if (typeof spec === 'string' || spec instanceof URL) {
    kind = 'url';
    folder = urlFolder(absoluteUrl(spec).replace(/\/?$/, '/'), ctx);
  } else if (Array.isArray(spec) || (typeof FileList !== 'undefined' && spec instanceof FileList)) {
    kind = 'files';
    // A picked folder lists its subfolders' files too (an exported artifact holds its assistant
    // in assistant/): only the folder's own files count.
    for (const f of spec) {
      if ((f.webkitRelativePath ?? '').split('/').length > 2) continue;
      files.set(f.name, asSource(f, f.name));
    }
  } else if (spec && typeof spec === 'object') {
    kind = 'files';
    for (const [name, v] of Object.entries(spec)) {
      if (isNodePath(v)) files.set(name, { path: v });
      else if (typeof v === 'string' || v instanceof URL) files.set(name, { url: absoluteUrl(v) });
      else files.set(name, asSource(v, name));
      if (typeof v === 'string' || v instanceof URL) shown.set(name, String(v));
    }
  } else {
    throw new TypeError(`gemma4 load: '${label}' must be a folder URL or path, a list of Files or an object of files`);
  }
  // Files of an object given as URLs are fetched (and cached) like folder files; paths (Node) are
  // read from their files.
  const resolveUrls = async (names) => {
    for (const name of names) {
      const v = files.get(name);
      if (v && v.url) files.set(name, await fetchUrl(v.url, ctx));
      if (v && v.path) {
        const p = await nodePath(v.path);
        const src = await nodeFileSource(p).catch((e) => { throw new Error(`gemma4 load (${label}): ${p}: ${e.message}`); });
        closers.push(src.close);
        shown.set(name, p);
        files.set(name, src);
      }
    }
  };
  const readText = (name) => sourceText(files.get(name));
  return {
    files,
    counts,
    // Where a file of the model came from, as the caller named it: its path or URL, or its name
    // among the files given; `name` undefined: the folder.
    where(name) {
      if (name !== undefined && shown.has(name)) return shown.get(name);
      if (kind === 'files') return name ?? `the ${label}'s files`;
      const base = kind === 'path' ? dir ?? String(spec) : absoluteUrl(spec).replace(/\/?$/, '/');
      if (name === undefined) return base;
      const sep = kind === 'path' && base.includes('\\') && !base.includes('/') ? '\\' : '/';
      return base.endsWith(sep) ? base + name : base + sep + name;
    },
    // A file given apart from the model's (the tokenizer), shown as `where` in errors.
    set(name, src, where) {
      files.set(name, src);
      if (where !== undefined) shown.set(name, where);
    },
    async describe(skip = []) {
      const optional = OPTIONAL.filter((name) => !skip.includes(name));
      if (kind === 'path') {
        const fs = await import('node:fs');
        const path = await import('node:path');
        dir = await nodePath(spec);
        for (const name of ['config.json', ...optional]) {
          const p = path.join(dir, name);
          if (fs.existsSync(p)) files.set(name, new Uint8Array(fs.readFileSync(p)));
        }
        if (!files.has('config.json')) throw new Error(`gemma4 load (${label}): ${path.join(dir, 'config.json')} not found`);
      } else if (kind === 'url') {
        files.set('config.json', await folder.fetch('config.json'));
        for (const name of optional) {
          const s = await folder.fetch(name, { optional: true });
          if (s) files.set(name, s);
        }
      } else {
        await resolveUrls(['config.json', ...optional]);
        if (!files.has('config.json')) throw new Error(`gemma4 load (${label}): no config.json among the files given`);
      }
    },
    async weights() {
      const names = await weightNames(files, readText, label);
      if (kind === 'path') {
        const path = await import('node:path');
        for (const name of names) {
          const p = path.join(dir, name);
          const src = await nodeFileSource(p).catch((e) => { throw new Error(`gemma4 load (${label}): ${p}: ${e.message}`); });
          closers.push(src.close);
          files.set(name, src);
        }
      } else if (kind === 'url') {
        for (const name of names) files.set(name, await folder.fetch(name));
        await folder.remember();
      } else {
        await resolveUrls(names);
        for (const name of names) {
          if (!files.has(name)) throw new Error(`gemma4 load (${label}): ${name} is missing among the files given`);
        }
      }
    },
    close() {
      for (const c of closers.splice(0)) c();
    },
  };
}

// tokenizer.json given apart from the model: a URL, a path or file: URL (Node), a Blob/File or
// bytes.
export async function tokenizerSource(spec, { onProgress = () => {}, useCache = true } = {}) {
  const ctx = { label: 'tokenizer', onProgress, useCache, counts: { downloaded_bytes: 0, cached_files: 0, fetched_files: 0 } };
  if (isNodePath(spec)) {
    const fs = await import('node:fs');
    const p = await nodePath(spec);
    try {
      return new Uint8Array(fs.readFileSync(p));
    } catch (e) {
      throw new Error(`gemma4 load (tokenizer): ${p}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`);
    }
  }
  if (typeof spec === 'string' || spec instanceof URL) return fetchUrl(absoluteUrl(spec), ctx);
  return asSource(spec, 'tokenizer.json');
}
