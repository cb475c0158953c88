// The HTTP server's answers that depend on the runtime's state and on the request line, with a
// stand-in runtime (web/server.mjs takes any object with the API's shape): a module that stopped
// (a WebAssembly trap unloaded the model) makes /health 503 `stopped` and every request a 500
// server_error, not the client's 400; request targets a URL parser would misread, and a model
// id that is not valid percent-encoding, are the client's 400 or 404, never a 500; a target in
// absolute form is served by its path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createHttpServer } from '../../web/server.mjs';

function stubRuntime() {
  const state = { stopped: null };
  return {
    state,
    stats: () => ({ model: { backend: 'cpu', context: 64, draft_tokens: 2 }, device_lost: null, stopped: state.stopped,
                    requests: 0, completion_tokens: 0 }),
    interrupt() {},
    chat: { completions: { async create() {
      if (state.stopped) throw new Error('gemma4 chat.completions.create: no model is loaded (the module stopped: x)');
      state.stopped = 'memory access out of bounds';
      throw new Error('gemma4 chat.completions.create: the module stopped (memory access out of bounds); the model is unloaded, load() again');
    } } },
  };
}

function raw(port, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a stopped module: /health 503 stopped, requests 500; odd request targets are 400 or 404', async () => {
  const http = createHttpServer({ model: 'm' });
  await new Promise((ok) => http.server.listen(0, '127.0.0.1', ok));
  const { port } = http.server.address();
  const rt = stubRuntime();
  http.start(rt);
  try {
    let r = await raw(port, 'GET', '/health');
    assert.deepEqual([r.status, r.body.status], [200, 'ok']);
    const chat = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
    r = await raw(port, 'POST', '/v1/chat/completions', chat);
    assert.equal(r.status, 500, JSON.stringify(r.body));
    assert.equal(r.body.error.type, 'server_error');
    assert.match(r.body.error.message, /module stopped/);
    r = await raw(port, 'POST', '/v1/chat/completions', chat);
    assert.equal(r.status, 500, 'after the trap, every request is the server\'s fault');
    r = await raw(port, 'GET', '/health');
    assert.deepEqual([r.status, r.body.status], [503, 'stopped']);

    r = await raw(port, 'GET', '/v1/models/%E0');
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'model');
    r = await raw(port, 'GET', '//');
    assert.equal(r.status, 404);
    r = await raw(port, 'GET', '//v1/models');
    assert.equal(r.status, 404);
    assert.match(r.body.error.message, /no route GET \/\/v1\/models/);
    r = await raw(port, 'GET', '*');
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /not a path/);
    r = await raw(port, 'GET', `http://127.0.0.1:${port}/v1/models`);  // absolute form
    assert.equal(r.status, 200);
    assert.equal(r.body.data[0].id, 'm');
  } finally {
    await http.shutdown();
  }
});
