// The demo page: load a model (the bundled small one, URLs or local files), chat with streamed
// output, watch the counters. The page's state is in #status[data-state] (empty, loading, ready,
// generating, error) and the runtime's stats as JSON in #stats[data-json], for scripts.
import { createGemma4 } from '../../dist/gemma4.mjs';
import { createGemma4Mtp } from '../../dist/gemma4-mtp.mjs';

const $ = (id) => document.getElementById(id);
const BUNDLED = {
  target: new URL('../../testdata/models/e2b_mini/', location.href).href,
  assistant: new URL('../../testdata/models/e2b_mini/assistant_centroid/', location.href).href,
  tokenizer: new URL('../../testdata/tokenizers/mini/tokenizer.json', location.href).href,
};

let runtime = null;
let history = [];

function setState(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
  const loaded = ['ready', 'generating'].includes(state) || (state === 'error' && runtime?.stats()?.loaded);
  $('load').disabled = state === 'loading' || state === 'generating' || loaded;
  $('unload').disabled = !loaded || state === 'generating';
  $('reset').disabled = !loaded || state === 'generating';
  $('send').disabled = state !== 'ready';
  $('stop').disabled = state !== 'generating';
  $('new-chat').disabled = state === 'generating';
}

const fmt = (v, unit, digits = 1) => (v ? `${v.toFixed(digits)} ${unit}` : '-');

function showStats() {
  const s = runtime?.stats();
  $('stats').dataset.json = JSON.stringify(s ?? null);
  if (!s) return;
  const last = s.last;
  $('s-decode').textContent = fmt(s.current?.decode_tokens_per_s || last?.decode_tokens_per_s, 'tok/s');
  $('s-prefill').textContent = fmt(last?.prefill_tokens_per_s, 'tok/s');
  $('s-ttft').textContent = fmt(last?.time_to_first_token_ms, 'ms', 0);
  $('s-rate').textContent = s.drafted ? `${(100 * s.acceptance_rate).toFixed(1)} %` : '-';
  $('s-drafted').textContent = `${s.drafted} / ${s.accepted}`;
  $('s-positions').textContent = s.accepted_per_position.length ? s.accepted_per_position.join(', ') : '-';
  $('s-rounds').textContent = String(s.rounds);
  $('s-requests').textContent = String(s.requests);
}

function message(role, text = '') {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.textContent = text;
  $('log').append(div);
  $('log').scrollTop = $('log').scrollHeight;
  return div;
}

function sources() {
  const kind = document.querySelector('input[name="source"]:checked').value;
  if (kind === 'bundled') return BUNDLED;
  if (kind === 'url') {
    const target = $('target-url').value.trim();
    if (!target) throw new Error('give the target folder URL');
    const assistant = $('assistant-url').value.trim();
    return { target, ...(assistant ? { assistant } : {}) };
  }
  const target = [...$('target-files').files];
  if (!target.length) throw new Error('pick the target folder');
  const assistant = [...$('assistant-files').files];
  return { target, ...(assistant.length ? { assistant } : {}) };
}

async function load() {
  let src;
  try {
    src = sources();
  } catch (e) {
    setState('error', e.message);
    return;
  }
  setState('loading', 'loading...');
  $('notice').textContent = '';
  const progress = $('progress');
  const seen = new Map();
  try {
    const create = src.assistant ? createGemma4Mtp : createGemma4;
    runtime = await create({ worker: $('worker').checked });
    await runtime.load({
      ...src,
      contextLength: Number($('context').value),
      onProgress(p) {
        if (p.phase === 'cache-error') {
          $('notice').textContent += `${p.file} was not cached (${p.error}); it is kept in memory instead. `;
          return;
        }
        seen.set(p.phase === 'upload' ? 'upload' : `${p.model}/${p.file}`, p);
        const up = seen.get('upload');
        if (up) {
          progress.value = up.total ? up.loaded / up.total : 0;
          $('progress-text').textContent = `into GPU memory: ${(up.loaded / 1e6).toFixed(1)} of ${(up.total / 1e6).toFixed(1)} MB`;
        } else {
          const cached = [...seen.values()].filter((x) => x.phase === 'cached').length;
          const dl = [...seen.values()].filter((x) => x.phase === 'download');
          const loaded = dl.reduce((n, x) => n + x.loaded, 0), total = dl.reduce((n, x) => n + (x.total || 0), 0);
          progress.value = total ? loaded / total : 0;
          $('progress-text').textContent = `downloaded ${(loaded / 1e6).toFixed(1)} MB, ${cached} files from the cache`;
        }
      },
    });
    const s = runtime.stats();
    const cached = (s.load?.target?.cached_files ?? 0) + (s.load?.assistant?.cached_files ?? 0);
    $('progress-text').dataset.cachedFiles = String(cached);
    $('progress-text').textContent += ` - loaded in ${(s.load?.ms ?? 0).toFixed(0)} ms`;
    $('mtp').disabled = !s.model?.assistant;
    $('mtp').checked = !!s.model?.assistant;
    history = [];
    setState('ready', `ready: ${s.model.layers} layers, ${s.model.backend}${s.model.assistant ? ', with assistant' : ''}`);
  } catch (e) {
    if (runtime?.stats()?.loaded === false) runtime = null;
    setState('error', `load failed: ${e.message}`);
  }
  showStats();
}

async function send(event) {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || !runtime) return;
  message('user', text);
  const out = message('assistant');
  history.push({ role: 'user', content: text });
  setState('generating', 'generating...');
  try {
    const stream = await runtime.chat.completions.create({
      messages: history,
      stream: true,
      max_tokens: Number($('max-tokens').value),
      temperature: Number($('temperature').value),
      ...(runtime.stats().model?.assistant ? { mtp: $('mtp').checked } : {}),
    });
    let reply = '';
    for await (const chunk of stream) {
      reply += chunk.choices[0].delta.content ?? '';
      out.textContent = reply;
      if (chunk.choices[0].finish_reason) {
        out.dataset.finish = chunk.choices[0].finish_reason;
        $('s-finish').textContent = chunk.choices[0].finish_reason;
      }
      showStats();
    }
    history.push({ role: 'assistant', content: reply });
    setState('ready', 'ready');
  } catch (e) {
    history.pop();
    out.classList.add('error');
    out.textContent = e.message;
    setState(runtime.stats()?.loaded ? 'ready' : 'error', `error: ${e.message}`);
  }
  out.dataset.done = '1';
  showStats();
}

$('load').addEventListener('click', load);
$('ask').addEventListener('submit', send);
$('stop').addEventListener('click', () => runtime?.interrupt());
$('new-chat').addEventListener('click', () => {
  history = [];
  $('log').replaceChildren();
});
$('reset').addEventListener('click', async () => {
  setState('loading', 'resetting...');
  try {
    await runtime.reset();
    history = [];
    $('log').replaceChildren();
    $('s-finish').textContent = '-';
    setState('ready', 'ready (reset)');
  } catch (e) {
    setState('error', `reset failed: ${e.message}`);
  }
  showStats();
});
$('unload').addEventListener('click', async () => {
  try {
    await runtime.unload();
    runtime.terminate?.();
    runtime = null;
    setState('empty', 'no model loaded');
  } catch (e) {
    setState('error', `unload failed: ${e.message}`);
  }
  showStats();
});
if (!navigator.gpu) setState('error', 'this browser has no WebGPU');
else setState('empty', 'no model loaded');
