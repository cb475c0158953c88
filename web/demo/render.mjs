// The demo page's rendering: chat messages with their figures and buttons, and the wording of
// sizes and speeds. The model's text is only ever set as text (textContent), never parsed as
// HTML: markup or markdown in a reply shows as written, and long unbroken text wraps (demo.css).

export const mb = (bytes) => `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
const rate = (v) => (v ? `${v.toFixed(1)} tok/s` : '-');
const percent = (x) => `${(100 * x).toFixed(0)} %`;
const ms = (v) => (v < 1e4 ? `${v.toFixed(0)} ms` : `${(v / 1000).toFixed(1)} s`);

// A message: <article class="msg ROLE"> holding .text and, for replies, a .meta footer with the
// figures and the Copy and Regenerate buttons.
export function messageNode(role, text = '') {
  const node = document.createElement('article');
  node.className = `msg ${role}`;
  const body = document.createElement('div');
  body.className = 'text';
  body.textContent = text;
  node.append(body);
  if (role === 'assistant') {
    const meta = document.createElement('footer');
    meta.className = 'meta';
    const figures = document.createElement('span');
    figures.className = 'figures';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    const regen = document.createElement('button');
    regen.type = 'button';
    regen.className = 'regen';
    regen.textContent = 'Regenerate';
    const actions = document.createElement('span');
    actions.className = 'actions';
    actions.append(copy, regen);
    meta.append(figures, actions);
    node.append(meta);
  }
  return node;
}

export function setText(node, text) {
  node.querySelector('.text').textContent = text;
}

export function setFigures(node, text) {
  node.querySelector('.figures').textContent = text;
}

// A finished reply's figures, from the request's usage (the last chunk's).
export function replyFigures(usage, finish) {
  const parts = [`${usage.completion_tokens} tokens`, `decode ${rate(usage.decode_tokens_per_s)}`,
                 `first token ${ms(usage.time_to_first_token_ms)}`];
  const s = usage.speculative;
  if (s.enabled) {
    parts.push(s.drafted ? `MTP: ${s.accepted} of ${s.drafted} drafts accepted (${percent(s.acceptance_rate)})`
                         : 'MTP: no drafts');
  } else {
    parts.push('MTP off');
  }
  if (finish && finish !== 'stop') parts.push(finish === 'length' ? 'stopped at max tokens' : 'interrupted');
  return parts.join(' · ');
}

// While a reply streams: its tokens so far and decode speed (the runtime's `current`).
export function liveFigures(current) {
  if (!current) return 'generating';
  return `${current.completion_tokens} tokens · decode ${rate(current.decode_tokens_per_s)}`;
}

// The counters' cells: the last reply (usage) and the totals since load (stats()).
const REPLY_CELLS = ['r-tokens', 'r-decode', 'r-prefill', 'r-ttft', 'r-drafted', 'r-rate', 'r-finish'];

export function replyCells(usage, finish) {
  if (!usage) return Object.fromEntries(REPLY_CELLS.map((id) => [id, '-']));
  const s = usage.speculative;
  return {
    'r-tokens': `${usage.prompt_tokens} / ${usage.completion_tokens}`,
    'r-decode': rate(usage.decode_tokens_per_s),
    'r-prefill': rate(usage.prefill_tokens_per_s),
    'r-ttft': ms(usage.time_to_first_token_ms),
    'r-drafted': s.enabled ? `${s.drafted} / ${s.accepted}` : 'MTP off',
    'r-rate': s.drafted ? percent(s.acceptance_rate) : '-',
    'r-finish': finish ?? '-',
  };
}

export function totalCells(stats) {
  return {
    't-requests': String(stats.requests),
    't-tokens': `${stats.prompt_tokens} / ${stats.completion_tokens}`,
    't-rounds': String(stats.rounds),
    't-drafted': `${stats.drafted} / ${stats.accepted}`,
    't-rate': stats.drafted ? percent(stats.acceptance_rate) : '-',
    't-positions': stats.accepted_per_position.length ? stats.accepted_per_position.join(', ') : '-',
  };
}
