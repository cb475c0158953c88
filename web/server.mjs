// An OpenAI-compatible HTTP server (node:http) over a loaded runtime of the JavaScript API
// (web/api.mjs): GET /v1/models, POST /v1/chat/completions, POST /v1/completions (a raw prompt),
// GET /health. Requests run one at a time in arrival order; those that arrive meanwhile wait in
// a bounded queue (429 when it is full). The request options are the API's: it checks them, and
// its errors come back as OpenAI-shaped 400s. A client that goes away stops its generation.
//
//   const http = createHttpServer({ model: 'e2b', apiKey, maxQueue: 16 });
//   http.server.listen(8080, '127.0.0.1');  await runtime.load(...);  http.start(runtime);
//   ...  await http.shutdown();
import { createServer } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';

const ROUTES = {
  '/health': 'GET', '/v1/models': 'GET', '/v1/chat/completions': 'POST', '/v1/completions': 'POST',
};

// An OpenAI-shaped error answer.
class HttpError extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null } = {}) {
    super(message);
    Object.assign(this, { status, type, param, code });
  }
  get body() { return { error: { message: this.message, type: this.type, param: this.param, code: this.code } }; }
}

// An error of the API as the answer to the request that met it. Option errors (TypeError) and
// anything refused before output began (the messages, the prompt's length) are the request's
// fault; a lost device, a module that stopped or a failure mid-generation is the server's.
function fromApiError(e, { started, deviceLost }) {
  const message = String(e.message ?? e).replace(/^gemma4 [\w.]+: /, '');
  const m = /unknown option '([^']+)'|^(\w+) must\b/.exec(message);
  const param = m ? m[1] ?? m[2] : null;
  if (e instanceof TypeError || !(started || deviceLost)) return new HttpError(400, message, { param });
  return new HttpError(500, message, { type: 'server_error' });
}

const SHUTTING_DOWN = () => new HttpError(503, 'the server is shutting down', { type: 'server_error', code: 'shutting_down' });

const digest = (s) => createHash('sha256').update(String(s)).digest();

async function readJson(req, maxBody) {
  const tooLarge = () => new HttpError(413, `the request body is over ${maxBody} bytes`, { code: 'request_too_large' });
  if (Number(req.headers['content-length']) > maxBody) throw tooLarge();
  const parts = [];
  let size = 0;
  await new Promise((resolve, reject) => {
    req.on('data', (c) => {
      size += c.length;
      if (size <= maxBody) parts.push(c);
      else { req.removeAllListeners('data'); req.resume(); reject(tooLarge()); }
    });
    req.on('end', resolve);
    req.on('error', reject);
  });
  let body;
  try {
    body = JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch (e) {
    throw new HttpError(400, `the request body is not JSON: ${e.message}`);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'the request body must be a JSON object');
  return body;
}

// OpenAI's message content may be a list of parts; the runtime takes text, so text parts are
// joined. The 'developer' role is the system turn of newer clients.
function plainMessages(messages) {
  if (!Array.isArray(messages)) return messages;
  return messages.map((m, i) => {
    if (!m || typeof m !== 'object') return m;
    const out = { ...m };
    if (out.role === 'developer') out.role = 'system';
    if (Array.isArray(out.content)) {
      if (out.content.some((p) => p?.type !== 'text' || typeof p.text !== 'string')) {
        throw new HttpError(400, `messages[${i}].content: only text parts are supported`, { param: 'messages' });
      }
      out.content = out.content.map((p) => p.text).join('');
    }
    return out;
  });
}

// The API's request for an endpoint's body, and how the answer is shaped for it.
function translate(kind, body) {
  const { stream_options: streamOptions, n, user, ...params } = body;
  // Options clients send by default: one choice, and who asks (not used).
  if (n !== undefined && n !== null && n !== 1) throw new HttpError(400, 'n must be 1 (one choice per request)', { param: 'n' });
  if (user !== undefined && typeof user !== 'string') throw new HttpError(400, 'user must be a string', { param: 'user' });
  let includeUsage = false;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (typeof streamOptions !== 'object' || Array.isArray(streamOptions)) {
      throw new HttpError(400, 'stream_options must be an object', { param: 'stream_options' });
    }
    for (const key of Object.keys(streamOptions)) {
      if (key !== 'include_usage') throw new HttpError(400, `unknown option 'stream_options.${key}'`, { param: `stream_options.${key}` });
    }
    if (params.stream !== true) throw new HttpError(400, 'stream_options needs stream: true', { param: 'stream_options' });
    includeUsage = streamOptions.include_usage === true;
  }
  if (kind === 'chat') {
    if (params.prompt !== undefined) throw new HttpError(400, "unknown option 'prompt' (chat takes messages)", { param: 'prompt' });
    params.messages = plainMessages(params.messages);
  } else {
    let prompt = params.prompt;
    if (Array.isArray(prompt) && prompt.length === 1) prompt = prompt[0];
    if (typeof prompt !== 'string') throw new HttpError(400, 'prompt must be a string (one prompt per request)', { param: 'prompt' });
    params.prompt = prompt;
  }
  return { params, stream: params.stream === true, includeUsage };
}

// The API's usage: OpenAI's counts, and the rest (speeds, times, speculative counters) apart.
function splitUsage(usage) {
  const { prompt_tokens, completion_tokens, total_tokens, ...stats } = usage;
  return { usage: { prompt_tokens, completion_tokens, total_tokens }, stats };
}

// Chunks and answers of an endpoint, from the API's chat chunks.
function shaper(kind, model, includeUsage) {
  const chat = kind === 'chat';
  const object = chat ? 'chat.completion' : 'text_completion';
  const head = (c) => ({ id: chat ? c.id : c.id.replace(/^chatcmpl-/, 'cmpl-'), object, created: c.created, model });
  return {
    chunk(c) {
      const { delta, finish_reason } = c.choices[0];
      const choice = chat ? { index: 0, delta, logprobs: null, finish_reason }
                          : { index: 0, text: delta.content ?? '', logprobs: null, finish_reason };
      const out = { ...head(c), ...(chat ? { object: 'chat.completion.chunk' } : {}), choices: [choice] };
      if (includeUsage) out.usage = null;
      if (c.usage) out.stats = splitUsage(c.usage).stats;
      return out;
    },
    usageChunk(c) {
      return { ...head(c), ...(chat ? { object: 'chat.completion.chunk' } : {}), choices: [], usage: splitUsage(c.usage).usage };
    },
    answer(c, text) {
      const { finish_reason } = c.choices[0];
      const choice = chat ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason }
                          : { index: 0, text, logprobs: null, finish_reason };
      return { ...head(c), choices: [choice], ...splitUsage(c.usage) };
    },
  };
}

// model / assistant: the ids /v1/models names; apiKey: required as a Bearer token on /v1 when
// set; maxQueue: requests that may wait; maxBody: bytes; log(line). The server may listen before
// the model is loaded (so that a port in use is found at once): until start(runtime) gives it the
// loaded runtime, it answers 503.
export function createHttpServer({ model, assistant = null, apiKey = null, maxQueue = 16, maxBody = 4 << 20,
                                   log = () => {} }) {
  const key = apiKey ? digest(apiKey) : null;
  const waiting = [];      // jobs in arrival order
  let running = null;      // the job generating now
  let ran = null;          // and the promise of its end
  let closing = false;
  let runtime = null, card = null;

  const send = (res, status, body) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', ...(closing ? { connection: 'close' } : {}) });
    res.end(JSON.stringify(body));
  };

  const next = () => {
    if (running || !waiting.length) return;
    running = waiting.shift();
    const job = running;
    ran = job.run()
      .catch((e) => send(job.res, 500, new HttpError(500, String(e?.message ?? e), { type: 'server_error' }).body))
      .finally(() => { running = null; next(); });
  };

  // Runs one request through the API's stream; streamed or whole, as the client asked.
  async function generate(req, res, kind, body) {
    const { params, stream, includeUsage } = translate(kind, body);
    const shape = shaper(kind, model, includeUsage);
    const started = performance.now();
    let gone = false, sse = false, text = '', last = null, emitted = 0;
    res.on('close', () => {
      if (res.writableFinished) return;
      gone = true;
      if (running === job) runtime.interrupt();
      else if (waiting.includes(job)) waiting.splice(waiting.indexOf(job), 1);
    });
    const write = (obj) => { if (!res.destroyed) res.write(`data: ${JSON.stringify(obj)}\n\n`); };
    const job = {
      res,
      async run() {
        if (gone) return;
        try {
          const chunks = await runtime.chat.completions.create({ ...params, stream: true });
          for await (const c of chunks) {
            if (gone) runtime.interrupt();  // gone before the generation had begun
            last = c;
            emitted += c.choices[0].delta.content?.length ?? 0;
            if (!stream) { text += c.choices[0].delta.content ?? ''; continue; }
            if (!sse) {
              res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
              sse = true;
            }
            write(shape.chunk(c));
          }
        } catch (e) {
          const s = runtime.stats();
          const err = fromApiError(e, { started: emitted > 0, deviceLost: !!(s.device_lost || s.stopped) });
          log(`${req.method} ${req.url} ${err.status} ${err.message}`);
          if (!sse) send(res, err.status, err.body);
          else { write(err.body); res.end(); }
          return;
        }
        if (stream) {
          if (includeUsage) write(shape.usageChunk(last));
          if (!res.destroyed) res.end('data: [DONE]\n\n');
        } else {
          send(res, 200, shape.answer(last, text));
        }
        const u = last.usage;
        log(`${req.method} ${req.url} 200 ${stream ? 'stream' : 'whole'} finish=${last.choices[0].finish_reason} ` +
            `tokens=${u.completion_tokens} ms=${Math.round(performance.now() - started)}${gone ? ' client=gone' : ''}`);
      },
    };
    if (closing) throw SHUTTING_DOWN();
    if (running && waiting.length >= maxQueue) {
      throw new HttpError(429, `${waiting.length} requests are waiting already; try again later`,
                          { type: 'requests', code: 'rate_limit_exceeded' });
    }
    waiting.push(job);
    next();
  }

  async function route(req, res) {
    // The path as sent, up to its query (a URL parser would read `//v1/...` as a host); of an
    // absolute-form target (`http://host/v1/models`), the path after its authority.
    const raw = req.url.split(/[?#]/)[0].replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
    if (!raw.startsWith('/')) throw new HttpError(400, `the request target '${raw.slice(0, 200)}' is not a path`);
    const path = raw.replace(/\/+$/, '') || '/';
    const modelPath = path.startsWith('/v1/models/');
    const method = modelPath ? 'GET' : ROUTES[path];
    if (!method) throw new HttpError(404, `no route ${req.method} ${path}`, { code: 'unknown_url' });
    if (req.method !== method) throw new HttpError(405, `${path} takes ${method}, not ${req.method}`, { code: 'method_not_allowed' });
    if (path === '/health') {
      const s = runtime?.stats();
      const status = closing ? 'shutting_down' : !runtime ? 'loading' : s.device_lost ? 'device_lost'
                     : s.stopped ? 'stopped' : 'ok';
      return send(res, status === 'ok' ? 200 : 503, { status, model, busy: !!running, queued: waiting.length,
                                                      requests: s?.requests ?? 0, completion_tokens: s?.completion_tokens ?? 0 });
    }
    if (!runtime) throw new HttpError(503, 'the model is loading', { type: 'server_error', code: 'model_loading' });
    if (key) {
      const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
      if (!m || !timingSafeEqual(digest(m[1]), key)) {
        throw new HttpError(401, 'a valid API key is required (Authorization: Bearer KEY)', { code: 'invalid_api_key' });
      }
    }
    if (path === '/v1/models') return send(res, 200, { object: 'list', data: [card] });
    if (modelPath) {
      let id;
      try {
        id = decodeURIComponent(path.slice('/v1/models/'.length));
      } catch {
        throw new HttpError(400, `the model id in ${path.slice(0, 200)} is not valid percent-encoded UTF-8`, { param: 'model' });
      }
      if (id !== model) throw new HttpError(404, `the model '${id}' does not exist`, { param: 'model', code: 'model_not_found' });
      return send(res, 200, card);
    }
    const body = await readJson(req, maxBody);
    return generate(req, res, path === '/v1/chat/completions' ? 'chat' : 'text', body);
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});  // a client gone mid-answer is handled by 'close'
    route(req, res).catch((e) => {
      const err = e instanceof HttpError ? e : new HttpError(500, String(e?.message ?? e), { type: 'server_error' });
      if (err.status !== 404) log(`${req.method} ${req.url} ${err.status} ${err.message}`);
      if (err.status === 413) res.setHeader('connection', 'close');
      send(res, err.status, err.body);
    });
  });

  return {
    server,
    start(loaded) {
      runtime = loaded;
      const info = runtime.stats().model;
      card = { id: model, object: 'model', created: Math.floor(Date.now() / 1000), owned_by: 'gemma4-webgpu', assistant,
               backend: info.backend, context: info.context, draft_tokens: assistant ? info.draft_tokens : null };
    },
    // Stops accepting, answers the waiting requests 503, interrupts the running one and waits
    // for its answer to end and every connection to close.
    async shutdown() {
      closing = true;
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      for (const job of waiting.splice(0)) send(job.res, 503, SHUTTING_DOWN().body);
      if (running) {
        runtime.interrupt();
        await ran;
      }
      server.closeIdleConnections();
      const late = setTimeout(() => server.closeAllConnections(), 2000);
      await closed;
      clearTimeout(late);
    },
  };
}
