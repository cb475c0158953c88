// The demo page: pick a model (the list in models.json, folder URLs or local folders), load it
// with progress, chat with streamed replies, each with its own figures, Copy and Regenerate;
// the counters show the last reply and the totals since load. The page's state is in
// #status[data-state] (empty, loading, ready, warmup: before a reply's first token, generating,
// error) and the runtime's stats as JSON in #stats[data-json], for scripts.
import { createGemma4 } from '../../dist/gemma4.mjs';
import { createGemma4Mtp } from '../../dist/gemma4-mtp.mjs';
import { fetchCatalogue, catalogueSources, describeModel, progressTracker } from './loading.mjs';
import { messageNode, setText, setFigures, replyFigures, liveFigures, replyCells, totalCells } from './render.mjs';

const $ = (id) => document.getElementById(id);
const LIST_URL = new URL('models.json', location.href).href;

let runtime = null;
let catalogue = [];
let turns = [];        // the conversation: { role, content, node }
let state = 'empty';

function setState(next, text) {
  state = next;
  $('status').dataset.state = next;
  $('status').textContent = text;
  const busy = ['loading', 'warmup', 'generating'].includes(next);
  const loaded = !!runtime?.stats()?.loaded;
  $('load').disabled = busy || loaded || !navigator.gpu;
  $('unload').disabled = !loaded || busy;
  $('reset').disabled = !loaded || busy;
  $('send').disabled = next !== 'ready';
  $('stop').disabled = next !== 'warmup' && next !== 'generating';
  $('new-chat').disabled = busy;
  $('delete-cache').disabled = next === 'loading';
  for (const b of document.querySelectorAll('.msg .regen')) b.disabled = next !== 'ready';
}

function fill(cells) {
  for (const [id, text] of Object.entries(cells)) $(id).textContent = text;
}

function showStats() {
  const s = runtime?.stats() ?? null;
  $('stats').dataset.json = JSON.stringify(s);
  if (s) fill(totalCells(s));
}

// Changes the log by `change()`, keeping it scrolled to the end if it was there.
function follow(change) {
  const log = $('log');
  const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  change();
  if (atEnd) log.scrollTop = log.scrollHeight;
}

const append = (node) => follow(() => $('log').append(node));

// --- the model list and loading ---

function showCatalogue() {
  const box = $('models');
  box.replaceChildren();
  catalogue.forEach((model, i) => {
    const { name, size, about } = describeModel(model);
    const label = document.createElement('label');
    label.className = 'choice model';
    const input = Object.assign(document.createElement('input'), { type: 'radio', name: 'source', value: `list:${i}` });
    label.dataset.id = model.id;
    const title = Object.assign(document.createElement('span'), { className: 'name', textContent: name });
    const bytes = Object.assign(document.createElement('span'), { className: 'size', textContent: size });
    const note = Object.assign(document.createElement('span'), { className: 'about', textContent: about });
    label.append(input, title, bytes, note);
    box.append(label);
  });
  if (!catalogue.length) box.textContent = 'No model of the list is served here: give URLs or files.';
  const first = box.querySelector('input') ?? document.querySelector('input[name="source"][value="url"]');
  first.checked = true;
}

// The load() sources and the expected download in bytes (0: unknown).
function chosenSources() {
  const kind = document.querySelector('input[name="source"]:checked')?.value ?? '';
  if (kind.startsWith('list:')) {
    const model = catalogue[Number(kind.slice(5))];
    return { sources: catalogueSources(model, LIST_URL), bytes: model.bytes ?? 0 };
  }
  if (kind === 'url') {
    const target = $('target-url').value.trim();
    if (!target) throw new Error('give the target folder URL');
    const assistant = $('assistant-url').value.trim();
    return { sources: { target, ...(assistant ? { assistant } : {}) }, bytes: 0 };
  }
  const target = [...$('target-files').files];
  if (!target.length) throw new Error('pick the target folder');
  const assistant = [...$('assistant-files').files];
  return { sources: { target, ...(assistant.length ? { assistant } : {}) }, bytes: 0 };
}

async function load() {
  let chosen;
  try {
    chosen = chosenSources();
  } catch (e) {
    setState('error', e.message);
    return;
  }
  $('notice').textContent = '';
  $('cache-text').textContent = '';
  const track = progressTracker(chosen.bytes);
  let last = null;
  setState('loading', 'loading the model');
  $('progress').value = 0;
  try {
    const create = chosen.sources.assistant ? createGemma4Mtp : createGemma4;
    runtime = await create({ worker: $('worker').checked });
    await runtime.load({
      ...chosen.sources,
      contextLength: Number($('context').value),
      onProgress(p) {
        if (p.phase === 'cache-error') {
          $('notice').textContent += `${p.file} was not cached (${p.error}); it is kept in memory instead. `;
          return;
        }
        last = track(p);
        $('progress').value = last.fraction;
        $('progress-text').textContent = last.text;
      },
    });
    const s = runtime.stats();
    $('progress').value = 1;
    $('progress-text').dataset.cachedFiles = String(last?.fromCache ?? 0);
    $('progress-text').textContent = `${last ? `${last.text} - ` : ''}loaded in ${((s.load?.ms ?? 0) / 1000).toFixed(1)} s`;
    $('mtp').disabled = !s.model?.assistant;
    $('mtp').checked = !!s.model?.assistant;
    $('totals-title').textContent = 'Totals since load';
    fill(replyCells(null));
    setState('ready', `ready: ${s.model.layers} layers on ${s.model.backend}${s.model.assistant ? ', with its MTP assistant' : ''}`);
  } catch (e) {
    if (runtime?.stats()?.loaded === false) {
      runtime.terminate?.();
      runtime = null;
    }
    setState('error', `load failed: ${e.message}`);
  }
  showStats();
}

// --- the conversation ---

function conversation() {
  const system = $('system').value.trim();
  return [...(system ? [{ role: 'system', content: system }] : []), ...turns.map(({ role, content }) => ({ role, content }))];
}

// Streams the reply to the last user turn into a new message: warm-up (before the first token:
// on the first request the GPU compiles its shaders), generating, then the reply's figures.
async function generate() {
  const asked = turns.at(-1);
  const node = messageNode('assistant');
  node.answers = asked;
  node.dataset.phase = 'warmup';
  node.querySelector('.copy').addEventListener('click', () => copy(node));
  node.querySelector('.regen').addEventListener('click', () => regenerate(node));
  append(node);
  const started = performance.now();
  const warmup = runtime.stats().requests === 0 ? 'warming up: compiling GPU shaders and reading the prompt'
                                                : 'reading the prompt';
  const tick = () => {
    const text = `${warmup} (${((performance.now() - started) / 1000).toFixed(1)} s)`;
    setFigures(node, text);
    if (state === 'warmup') $('status').textContent = text;
  };
  setState('warmup', warmup);
  tick();
  const timer = setInterval(tick, 250);
  let reply = '', usage = null, finish = null;
  try {
    const stream = await runtime.chat.completions.create({
      messages: conversation(),
      stream: true,
      max_tokens: Number($('max-tokens').value),
      temperature: Number($('temperature').value),
      ...(runtime.stats().model?.assistant ? { mtp: $('mtp').checked } : {}),
    });
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (state === 'warmup' && !choice.finish_reason) {
        clearInterval(timer);
        node.dataset.phase = 'generating';
        setState('generating', 'generating');
      }
      reply += choice.delta.content ?? '';
      follow(() => setText(node, reply));
      if (choice.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
      if (state === 'generating') setFigures(node, liveFigures(runtime.stats()?.current));
      showStats();
    }
    turns.push({ role: 'assistant', content: reply, node });
    node.dataset.finish = finish;
    node.dataset.usage = JSON.stringify(usage);
    follow(() => setFigures(node, replyFigures(usage, finish)));
    fill(replyCells(usage, finish));
    node.dataset.phase = 'done';
    node.dataset.done = '1';
    setState('ready', `done: ${usage.completion_tokens} tokens in ${(usage.total_ms / 1000).toFixed(1)} s`);
  } catch (e) {
    node.classList.add('error');
    setText(node, reply ? `${reply}\n\n${e.message}` : e.message);
    setFigures(node, 'failed');
    node.dataset.phase = 'error';
    node.dataset.done = '1';
    setState(runtime.stats()?.loaded ? 'ready' : 'error', `error: ${e.message}`);
  } finally {
    clearInterval(timer);
  }
  showStats();
}

function send(event) {
  event.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || !runtime || state !== 'ready') return;
  $('prompt').value = '';
  const node = messageNode('user', text);
  turns.push({ role: 'user', content: text, node });
  append(node);
  generate();
}

// Asks again for the reply `node` answered: what came after its question goes.
function regenerate(node) {
  const i = turns.indexOf(node.answers);
  if (i < 0 || state !== 'ready') return;
  turns.length = i + 1;
  while (node.answers.node.nextSibling) node.answers.node.nextSibling.remove();
  generate();
}

async function copy(node) {
  const text = node.querySelector('.text').textContent;
  const button = node.querySelector('.copy');
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Without the Clipboard API (an insecure origin): a selection copied the old way.
    const area = Object.assign(document.createElement('textarea'), { value: text });
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
  button.textContent = 'Copied';
  node.dataset.copied = '1';
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}

function clearChat() {
  turns = [];
  $('log').replaceChildren();
}

// --- the controls ---

$('load').addEventListener('click', load);
$('ask').addEventListener('submit', send);
$('prompt').addEventListener('keydown', (e) => {
  // Enter sends, Shift+Enter is a new line; Enter while an input method composes is its own.
  if (e.key !== 'Enter' || e.shiftKey || e.isComposing) return;
  e.preventDefault();
  $('ask').requestSubmit();
});
$('stop').addEventListener('click', () => runtime?.interrupt());
$('new-chat').addEventListener('click', clearChat);
$('reset').addEventListener('click', async () => {
  setState('loading', 'resetting');
  try {
    await runtime.reset();
    clearChat();
    fill(replyCells(null));
    $('totals-title').textContent = 'Totals since reset';
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
$('delete-cache').addEventListener('click', async () => {
  try {
    const n = await createGemma4.deleteCache();
    $('cache-text').textContent = n ? `deleted ${n} cached file${n > 1 ? 's' : ''}` : 'the cache was empty';
  } catch (e) {
    $('cache-text').textContent = `could not delete the cache: ${e.message}`;
  }
});

fill(replyCells(null));
if (!navigator.gpu) setState('error', 'this browser has no WebGPU');
else setState('empty', 'no model loaded');
try {
  catalogue = await fetchCatalogue(LIST_URL);
} catch (e) {
  $('notice').textContent = `no model list: ${e.message}`;
}
showCatalogue();
$('models').dataset.ready = '1';
