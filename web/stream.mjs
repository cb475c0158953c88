// The async-iterable stream of chat.completion chunks that a streamed request answers with, fed
// by its producer: push(chunk) for each chunk, end(error) once (error null: a normal end).
//
// A stream is read once: after its end, an error it threw, or a loop left early, every further
// next() (a second `for await` over it included) resolves at once to done, as a finished
// generator's does. Leaving a loop early (return()) calls stop(), which stops the producer, and
// resolves only when stop()'s Promise does: when the runtime can take the next call.
export function chunkStream(stop) {
  const queue = [];    // { chunk } or { end: true, error }
  const waiting = [];  // next() calls waiting for an item
  let closed = false;
  const wake = () => { for (const resolve of waiting.splice(0)) resolve(); };
  const done = () => ({ done: true, value: undefined });
  return {
    push(chunk) {
      if (closed) return;
      queue.push({ chunk });
      wake();
    },
    end(error = null) {
      if (closed) return;
      queue.push({ end: true, error });
      wake();
    },
    iterable: {
      [Symbol.asyncIterator]() {
        return {
          async next() {
            while (!closed && !queue.length) await new Promise((resolve) => waiting.push(resolve));
            if (closed) return done();
            const item = queue.shift();
            if (!item.end) return { done: false, value: item.chunk };
            closed = true;
            if (item.error) throw item.error;
            return done();
          },
          async return() {
            const early = !closed;
            closed = true;
            queue.length = 0;
            wake();
            if (early) await stop();
            return done();
          },
        };
      },
    },
  };
}
