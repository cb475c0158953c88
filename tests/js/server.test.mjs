// `gemma4 serve` (bin/gemma4.mjs, web/server.mjs) in Node on WebGPU (Dawn on lavapipe): the
// official `openai` client gets the JS API's text (whole, streamed, raw prompt, stop strings,
// seeded sampling) and OpenAI-shaped errors; raw HTTP covers the rest (bad JSON, API key, 413,
// unknown paths, a client gone mid-stream, the queue in arrival order and 429 when it is full,
// SIGTERM with a request in flight). One server serves the whole file; generations are short.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import OpenAI from 'openai';
import { root, cli } from './cli.mjs';

const { createGemma4Mtp } = await import(join(root, 'dist', 'gemma4-mtp.mjs'));

const model = join(root, 'testdata/models/e2b_mini');
const assistant = join(model, 'assistant_centroid');
const tokenizer = join(root, 'testdata/tokenizers/mini/tokenizer.json');
const content = 'Hello there, how are you?';
const messages = [{ role: 'user', content }];
// The same conversation as a raw prompt, in the mini tokenizer's (Gemma 4) chat format less the BOS.
const chatPrompt = `<|turn>user\n${content}<turn|>\n<|turn>model\n`;
const N = 8;
const KEY = 'sk-test-key';
const sampling = { temperature: 1, top_p: 0.9, seed: 7 };

// Starts `gemma4 serve` with the model and `args`; resolves once it prints its first line.
function serve(args) {
  const child = spawn(process.execPath, [cli, 'serve', '--model', model, '--tokenizer', tokenizer, '--port', '0', ...args],
                      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const first = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    exited.then(({ code }) => reject(new Error(`gemma4 serve exited with ${code} before listening:\n${err}`)));
  });
  return first.then((line) => ({ child, line, url: line.replace(/^listening on /, ''), exited, stderr: () => err }));
}

let ref, srv, client;

before(async () => {
  // The JS API's answers to the requests the server gets.
  const g = await createGemma4Mtp();
  await g.load({ target: model, assistant, tokenizer });
  const text = async (r) => (await g.chat.completions.create({ max_tokens: N, ...r })).choices[0].message.content;
  ref = { greedy: await text({ messages, temperature: 0 }), raw: await text({ prompt: chatPrompt, temperature: 0 }),
          sampled: await text({ messages, ...sampling }) };
  // The fill this load measured: the server splits its work, and rounds its sums, alike.
  const fill = g.stats().model.gpu_fill;
  assert.ok(fill >= 1, `gpu_fill ${fill}`);
  await g.unload();
  srv = await serve(['--assistant', assistant, '--api-key', KEY, '--max-queue', '2', '--max-body', '65536',
                     '--gpu-fill', String(fill)]);
  client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: KEY, maxRetries: 0 });
});

after(() => {
  if (srv?.child.exitCode === null) srv.child.kill('SIGKILL');
});

// A request to the server: { status, headers, body (parsed when JSON), text }.
async function call(path, { method = 'POST', body, key = KEY, headers = {} } = {}) {
  const res = await fetch(srv.url + path, {
    method, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON: SSE */ }
  return { status: res.status, headers: res.headers, body: json, text };
}

// The events of a server-sent event stream's text, less the closing [DONE] (which must be there).
function events(text) {
  const data = text.split('\n\n').filter(Boolean).map((e) => e.replace(/^data: /, ''));
  assert.equal(data.pop(), '[DONE]');
  return data.map((d) => JSON.parse(d));
}

// A streamed request over raw HTTP: resolves at its first event with { req, res, rest() } where rest()
// resolves to the whole stream's text.
function openStream(path, body) {
  return new Promise((resolve, reject) => {
    const req = request(srv.url + path, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      let text = '', done = null;
      const ended = new Promise((ok) => { done = ok; });
      res.on('data', (d) => {
        if (!text) resolve({ req, res, rest: () => ended });
        text += d;
      });
      res.on('end', () => done(text));
      res.on('error', () => done(text));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function health() {
  return (await call('/health', { method: 'GET', key: null })).body;
}

async function waitFor(what, check) {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('the listening line comes first and names the port', () => {
  assert.match(srv.line, /^listening on http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(srv.url.split(':').pop(), '0');
});

test('the openai client: models, whole and streamed answers equal the JS API text', { timeout: 300000 }, async () => {
  assert.ok(ref.greedy.length >= 6, JSON.stringify(ref.greedy));
  assert.equal(ref.raw, ref.greedy);  // the raw prompt is the chat's prompt
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => [m.id, m.assistant]), [['e2b_mini', 'assistant_centroid']]);
  assert.equal((await client.models.retrieve('e2b_mini')).context, 4096);

  const whole = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.model, 'e2b_mini');
  assert.equal(whole.choices[0].message.content, ref.greedy);
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.equal(whole.usage.completion_tokens, N);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + N);
  assert.equal(whole.stats.speculative.enabled, true);
  assert.ok(whole.stats.speculative.rounds > 0);

  const chunks = [];
  const stream = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, temperature: 0,
                                                        stream: true, stream_options: { include_usage: true } });
  for await (const c of stream) chunks.push(c);
  const usage = chunks.pop();
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, whole.usage);
  assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), ref.greedy);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  assert.ok(chunks.every((c) => c.usage === null));

  const plain = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, temperature: 0, mtp: false });
  assert.equal(plain.choices[0].message.content, ref.greedy);
  assert.equal(plain.stats.speculative.enabled, false);
  // Content as a list of text parts, as newer clients send it, is the same text.
  const parts = [{ type: 'text', text: content.slice(0, 5) }, { type: 'text', text: content.slice(5) }];
  const fromParts = await client.chat.completions.create({ model: 'e2b_mini', messages: [{ role: 'user', content: parts }],
                                                          max_tokens: N, temperature: 0, n: 1, user: 'someone' });
  assert.equal(fromParts.choices[0].message.content, ref.greedy);
});

test('the openai client: a raw prompt, stop strings and seeded sampling', { timeout: 300000 }, async () => {
  const raw = await client.completions.create({ model: 'e2b_mini', prompt: chatPrompt, max_tokens: N, temperature: 0 });
  assert.equal(raw.object, 'text_completion');
  assert.equal(raw.choices[0].text, ref.greedy);
  let streamed = '';
  for await (const c of await client.completions.create({ model: 'e2b_mini', prompt: chatPrompt, max_tokens: N,
                                                         temperature: 0, stream: true })) {
    streamed += c.choices[0].text;
  }
  assert.equal(streamed, ref.greedy);

  const cut = ref.greedy.slice(4, 6);
  const want = ref.greedy.slice(0, ref.greedy.indexOf(cut));
  const stopped = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, temperature: 0, stop: [cut] });
  assert.equal(stopped.choices[0].message.content, want);
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  let text = '';
  for await (const c of await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, temperature: 0,
                                                              stop: cut, stream: true })) {
    text += c.choices[0].delta.content ?? '';
  }
  assert.equal(text, want);

  for (let i = 0; i < 2; i++) {
    const r = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: N, ...sampling });
    assert.equal(r.choices[0].message.content, ref.sampled);
  }
});

test('the openai client sees OpenAI-shaped errors', { timeout: 60000 }, async () => {
  const bad = async (params, status, pattern, param = undefined) => {
    const e = await client.chat.completions.create({ model: 'e2b_mini', messages, max_tokens: 2, ...params })
      .then(() => null, (x) => x);
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, status, e.message);
    assert.match(e.message, pattern);
    assert.equal(e.type, 'invalid_request_error');
    if (param !== undefined) assert.equal(e.param, param);
  };
  await bad({ temprature: 0 }, 400, /unknown option 'temprature'/, 'temprature');
  await bad({ temperature: -1 }, 400, /temperature must be/, 'temperature');
  await bad({ max_tokens: 5000 }, 400, /context/);
  await bad({ messages: [{ role: 'user', content: 'x', extra: 1 }] }, 400, /unknown field 'extra'/);
  await bad({ stream_options: { include_usage: true } }, 400, /stream_options needs stream/, 'stream_options');
  await bad({ n: 2 }, 400, /n must be 1/, 'n');
  await bad({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 400,
            /only text parts/, 'messages');
  const anonymous = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(anonymous.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(client.models.retrieve('nope'), (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
});

test('raw HTTP: bad JSON, API key, body limit, unknown paths', { timeout: 60000 }, async () => {
  const h = await health();
  assert.equal(h.status, 'ok');
  assert.equal(h.model, 'e2b_mini');
  let r = await call('/v1/chat/completions', { body: '{"messages": [' });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /not JSON/);
  assert.equal(r.body.error.type, 'invalid_request_error');
  r = await call('/v1/chat/completions', { body: '[1]' });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /JSON object/);
  for (const key of [null, 'wrong']) {
    r = await call('/v1/chat/completions', { body: { messages, max_tokens: 1 }, key });
    assert.equal(r.status, 401);
    assert.equal(r.body.error.code, 'invalid_api_key');
  }
  r = await call('/v1/models', { method: 'GET', headers: { authorization: `Basic ${KEY}` }, key: null });
  assert.equal(r.status, 401);
  // Over --max-body: by its length, and read as it comes (chunked, no length given).
  const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(70000) }] });
  r = await call('/v1/chat/completions', { body: big });
  assert.equal(r.status, 413);
  assert.equal(r.body.error.code, 'request_too_large');
  const chunked = await new Promise((resolve, reject) => {
    const req = request(srv.url + '/v1/completions', { method: 'POST', headers: { authorization: `Bearer ${KEY}` } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    for (let i = 0; i < 10; i++) req.write(big.slice(i * 7000, (i + 1) * 7000));
    req.end(big.slice(70000));
  });
  assert.equal(chunked.status, 413);
  r = await call('/v1/nothing', { method: 'GET' });
  assert.equal(r.status, 404);
  assert.equal(r.body.error.code, 'unknown_url');
  r = await call('/v1/chat/completions', { method: 'GET' });
  assert.equal(r.status, 405);
  r = await call('/v1/completions', { body: { messages, max_tokens: 1 } });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'prompt');
  r = await call('/v1/completions', { body: { prompt: 'x', messages, max_tokens: 1 } });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /give messages or prompt, not both/);
  // A streamed answer over raw HTTP: events ending in [DONE], the text of the JS API.
  r = await call('/v1/chat/completions', { body: { messages, max_tokens: N, temperature: 0, stream: true } });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const ev = events(r.text);
  assert.equal(ev.map((c) => c.choices[0].delta.content ?? '').join(''), ref.greedy);
  assert.equal(ev.at(-1).stats.speculative.enabled, true);
});

test('requests wait in arrival order; 429 when the queue is full; a client gone stops its generation',
     { timeout: 300000 }, async () => {
  const before = await health();
  const long = await openStream('/v1/chat/completions', { messages, max_tokens: 100, temperature: 0, stream: true });
  const done = [];
  const b = call('/v1/chat/completions', { body: { messages, max_tokens: N, temperature: 0 } })
    .then((r) => { done.push('b'); return r; });
  await waitFor('b to wait', async () => (await health()).queued === 1);
  const c = call('/v1/chat/completions', { body: { messages, max_tokens: N, temperature: 0, stream: true } })
    .then((r) => { done.push('c'); return r; });
  await waitFor('c to wait', async () => (await health()).queued === 2);
  const full = await call('/v1/chat/completions', { body: { messages, max_tokens: 1 } });
  assert.equal(full.status, 429);
  assert.equal(full.body.error.code, 'rate_limit_exceeded');
  assert.equal((await health()).busy, true);
  long.req.destroy();  // the client goes away mid-stream
  const [rb, rc] = await Promise.all([b, c]);
  assert.deepEqual(done, ['b', 'c']);
  assert.equal(rb.status, 200);
  assert.equal(rb.body.choices[0].message.content, ref.greedy);
  assert.equal(events(rc.text).map((x) => x.choices[0].delta.content ?? '').join(''), ref.greedy);
  const afterwards = await health();
  assert.equal(afterwards.requests - before.requests, 3);
  assert.ok(afterwards.completion_tokens - before.completion_tokens < 100 + 2 * N);
  assert.match(srv.stderr(), /POST \/v1\/chat\/completions 200 stream finish=interrupted tokens=\d+ ms=\d+ client=gone/);
});

test('SIGTERM interrupts the request in flight, refuses the waiting one, unloads and exits 0', { timeout: 120000 }, async () => {
  const inFlight = await openStream('/v1/chat/completions', { messages, max_tokens: 100, temperature: 0, stream: true });
  const waiting = call('/v1/chat/completions', { body: { messages, max_tokens: N } });
  await waitFor('a waiting request', async () => (await health()).queued === 1);
  srv.child.kill('SIGTERM');
  const ev = events(await inFlight.rest());
  assert.equal(ev.at(-1).choices[0].finish_reason, 'interrupted');
  const refused = await waiting;
  assert.equal(refused.status, 503);
  assert.equal(refused.body.error.code, 'shutting_down');
  assert.deepEqual(await srv.exited, { code: 0, signal: null });
  assert.match(srv.stderr(), /SIGTERM: stopping\n(.*\n)*gemma4 serve: stopped\n/);
  await assert.rejects(fetch(`${srv.url}/health`));
});

test('--backend cpu with a fixed draft policy serves the same text; SIGINT exits 0', { timeout: 120000 }, async () => {
  const cpu = await serve(['--backend', 'cpu', '--assistant', assistant, '--draft-policy', 'fixed']);
  try {
    const r = await fetch(`${cpu.url}/v1/chat/completions`, { method: 'POST',
                                                              body: JSON.stringify({ messages, max_tokens: N, temperature: 0 }) });
    const body = await r.json();
    assert.equal(body.choices[0].message.content, ref.greedy);
    assert.equal(body.stats.speculative.draft_policy, 'fixed');
    assert.ok(body.stats.speculative.rounds > 0, JSON.stringify(body.stats.speculative));
    cpu.child.kill('SIGINT');
    assert.deepEqual(await cpu.exited, { code: 0, signal: null });
  } finally {
    if (cpu.child.exitCode === null) cpu.child.kill('SIGKILL');
  }
});

test('bad command lines name the flag and exit 2; a port in use exits 1', { timeout: 60000 }, async () => {
  const run = (...args) => spawnSync(process.execPath, [cli, 'serve', ...args], { cwd: root, encoding: 'utf8' });
  for (const [args, pattern] of [[['--model', model, '--bogus'], /'--bogus'/], [[], /--model DIR is required/],
                                  [['--model', model, '--port', '70000'], /--port takes an integer in 0\.\.65535/],
                                  [['--model', model, '--decode-ahead', '17'], /--decode-ahead takes an integer in 0\.\.16/],
                                  [['--model', model, '--backend', 'gpu'], /--backend takes webgpu or cpu/],
                                  [['--model', model, '--assistant', assistant, '--draft-policy', 'always'],
                                   /--draft-policy takes adaptive or fixed, not 'always'/],
                                  [['--model', model, '--draft-policy', 'fixed'], /--draft-policy goes with --assistant DIR/]]) {
    const r = run(...args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, pattern);
    assert.equal(r.stdout, '');
  }
  // A value the runtime refuses at load: recording ahead on the CPU backend.
  const cpu = run('--model', model, '--port', '0', '--backend', 'cpu', '--decode-ahead', '2');
  assert.equal(cpu.status, 1);
  assert.match(cpu.stderr, /decodeAhead above 0 goes with the webgpu backend/);
  const { createServer } = await import('node:net');
  const taken = createServer().listen(0, '127.0.0.1');
  await new Promise((ok) => taken.once('listening', ok));
  const r = run('--model', model, '--port', String(taken.address().port));
  taken.close();
  assert.equal(r.status, 1);
  assert.match(r.stderr, /cannot listen on 127\.0\.0\.1:\d+: .*EADDRINUSE/);
});
