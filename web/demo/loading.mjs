// The demo's model list and load progress. models.json names the models on offer, first the
// default; scripts/serve.mjs serves it with the entries this checkout has, each with its files
// and their sizes, so the page shows download sizes and asks the server only for files that
// exist. From a plain static server the list comes as written: folder URLs, sizes unknown.
import { mb } from './render.mjs';

export async function fetchCatalogue(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const { models } = await response.json();
  if (!Array.isArray(models)) throw new Error(`${url}: no model list`);
  return models;
}

// The load() sources of a listed model: with its file list, each folder as an object of file
// URLs by name (nothing probed); without, the folder URLs.
export function catalogueSources(model, listUrl) {
  const at = (rel) => new URL(rel, listUrl).href;
  const folder = (rel, names) => (names ? Object.fromEntries(Object.keys(names).map((n) => [n, new URL(n, at(rel)).href]))
                                        : at(rel));
  return {
    target: folder(model.target, model.files?.target),
    ...(model.assistant ? { assistant: folder(model.assistant, model.files?.assistant) } : {}),
    ...(model.tokenizer ? { tokenizer: at(model.tokenizer) } : {}),
  };
}

export function describeModel(model) {
  const size = model.bytes ? mb(model.bytes) : 'size unknown';
  return { name: model.name ?? model.id, size, about: `${model.about ?? ''}${model.assistant ? '' : ' (no assistant)'}` };
}

// Turns the runtime's onProgress events into one fraction that only grows, and a line of text.
// The files (downloaded or found in the cache) fill the first half, their upload into GPU
// memory the second. `expected` is the download in bytes when the list gives it; otherwise the
// total grows as files are found, and the fraction holds still rather than go back.
export function progressTracker(expected = 0) {
  const files = new Map();
  let upload = null, shown = 0;
  return (p) => {
    if (p.phase === 'upload') upload = p;
    else files.set(`${p.model}/${p.file}`, p);
    const all = [...files.values()];
    const got = all.reduce((n, x) => n + (x.loaded ?? 0), 0);
    const total = Math.max(expected, all.reduce((n, x) => n + (x.total ?? 0), 0));
    const fromCache = all.filter((x) => x.phase === 'cached').length;
    const downloaded = all.filter((x) => x.phase === 'download').reduce((n, x) => n + x.loaded, 0);
    const parts = [];
    if (downloaded || !fromCache) parts.push(`downloaded ${mb(downloaded)}${expected ? ` of ${mb(expected)}` : ''}`);
    if (fromCache) parts.push(`${fromCache} file${fromCache > 1 ? 's' : ''} from the cache`);
    let fraction = total ? 0.5 * Math.min(1, got / total) : 0;
    if (upload) {
      fraction = 0.5 + 0.5 * (upload.total ? upload.loaded / upload.total : 0);
      parts.unshift(`into GPU memory: ${mb(upload.loaded)} of ${mb(upload.total)}`);
    }
    shown = Math.max(shown, fraction);
    return { fraction: shown, text: parts.join(', '), downloaded, fromCache };
  };
}
