// The stream of a streamed request (web/stream.mjs), as the runtime and its Web Worker proxy use
// it: read once, a loop left early waits for the producer to stop, an error is thrown once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkStream } from '../../web/stream.mjs';

// `promise`, or a rejection if it has not settled within `ms`.
function within(ms, promise) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function read(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

test('a finished stream iterated again ends at once', async () => {
  const s = chunkStream(() => Promise.resolve());
  s.push(1);
  s.push(2);
  s.end();
  assert.deepEqual(await read(s.iterable), [1, 2]);
  assert.deepEqual(await within(1000, read(s.iterable)), []);
});

test('chunks pushed after a reader waits reach it; two waiting reads both settle', async () => {
  const s = chunkStream(() => Promise.resolve());
  const it = s.iterable[Symbol.asyncIterator]();
  const a = it.next(), b = it.next();
  s.push('x');
  s.end();
  assert.deepEqual(await within(1000, a), { done: false, value: 'x' });
  assert.deepEqual(await within(1000, b), { done: true, value: undefined });
});

test('leaving a loop early resolves only when the producer has stopped', async () => {
  let stopped = false, release;
  const s = chunkStream(() => new Promise((resolve) => { release = () => { stopped = true; resolve(); }; }));
  s.push(1);
  s.push(2);
  let left = false;
  const loop = (async () => {
    for await (const _ of s.iterable) break;
    left = true;
  })();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(left, false, 'the loop was left before the producer stopped');
  release();
  await within(1000, loop);
  assert.equal(stopped, true);
  // What the producer sends after that is dropped; the stream stays over.
  s.push(3);
  s.end();
  assert.deepEqual(await within(1000, read(s.iterable)), []);
});

test('an error ends the stream: thrown once, then it is over', async () => {
  const s = chunkStream(() => Promise.resolve());
  s.push(1);
  s.end(new Error('boom'));
  const it = s.iterable[Symbol.asyncIterator]();
  assert.deepEqual(await it.next(), { done: false, value: 1 });
  await assert.rejects(it.next(), /boom/);
  assert.deepEqual(await within(1000, it.next()), { done: true, value: undefined });
});
