// `gemma4 serve`: loads a model into a runtime of the JavaScript API (dist/, made by
// scripts/build-web.sh) and serves it over OpenAI's HTTP API (web/server.mjs). The first line on
// stdout is `listening on http://HOST:PORT`; everything else goes to stderr. SIGINT or SIGTERM
// stops accepting, interrupts the request in flight, unloads and exits 0.
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createHttpServer } from './server.mjs';

const USAGE = `usage: gemma4 serve --model DIR [--assistant DIR] [--tokenizer FILE] [--host 127.0.0.1] [--port 8080]
                    [--api-key KEY] [--context N] [--draft-tokens K] [--draft-policy adaptive|fixed]
                    [--backend webgpu|cpu]
                    [--max-queue N] [--max-body BYTES] [--gpu-fill N] [--gpu-validation on|off]
                    [--decode-ahead N]`;

const OPTIONS = {
  model: { type: 'string' }, assistant: { type: 'string' }, tokenizer: { type: 'string' },
  host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '8080' },
  'api-key': { type: 'string' }, context: { type: 'string' }, 'draft-tokens': { type: 'string' },
  'draft-policy': { type: 'string' },
  'gpu-fill': { type: 'string' }, 'decode-ahead': { type: 'string' }, backend: { type: 'string', default: 'webgpu' },
  'max-queue': { type: 'string', default: '16' },
  'max-body': { type: 'string', default: String(4 << 20) }, help: { type: 'boolean' },
};

class UsageError extends Error {}

// An integer flag of at least lo (and at most hi where the server bounds it; the runtime checks
// the ranges of its own options).
function integer(values, name, lo, hi = Infinity) {
  const text = values[name];
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !(n >= lo && n <= hi)) {
    throw new UsageError(`--${name} takes an integer${hi < Infinity ? ` in ${lo}..${hi}` : ` of at least ${lo}`}, not '${text}'`);
  }
  return n;
}

function parse(argv) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new UsageError(e.message);
  }
  if (values.help) return null;
  if (!values.model) throw new UsageError('--model DIR is required');
  if (!['webgpu', 'cpu'].includes(values.backend)) throw new UsageError(`--backend takes webgpu or cpu, not '${values.backend}'`);
  const policy = values['draft-policy'];
  if (policy !== undefined && !['adaptive', 'fixed'].includes(policy)) {
    throw new UsageError(`--draft-policy takes adaptive or fixed, not '${policy}'`);
  }
  for (const flag of ['draft-tokens', 'draft-policy']) {
    if (values[flag] !== undefined && !values.assistant) throw new UsageError(`--${flag} goes with --assistant DIR`);
  }
  return {
    model: values.model, assistant: values.assistant, tokenizer: values.tokenizer, host: values.host,
    apiKey: values['api-key'] ?? process.env.GEMMA4_API_KEY ?? null, backend: values.backend,
    port: integer(values, 'port', 0, 65535), context: integer(values, 'context', 1),
    draftTokens: integer(values, 'draft-tokens', 1), draftPolicy: policy, gpuFill: integer(values, 'gpu-fill', 0, 65536),
    decodeAhead: integer(values, 'decode-ahead', 0, 16),
    maxQueue: integer(values, 'max-queue', 0),
    maxBody: integer(values, 'max-body', 1),
  };
}

// Runs the server until a signal; resolves to the exit code. gpuValidation: bin/gemma4.mjs's
// --gpu-validation.
export async function serveMain(argv, { gpuValidation = true } = {}) {
  const err = (line) => process.stderr.write(`gemma4 serve: ${line}\n`);
  let o;
  try {
    o = parse(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(e.message);
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (!o) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
  const entry = join(dist, o.assistant ? 'gemma4-mtp.mjs' : 'gemma4.mjs');
  if (!existsSync(entry)) {
    err(`${entry} is missing: run scripts/build-web.sh`);
    return 1;
  }
  const http = createHttpServer({
    model: basename(resolve(o.model)), assistant: o.assistant ? basename(resolve(o.assistant)) : null,
    apiKey: o.apiKey, maxQueue: o.maxQueue, maxBody: o.maxBody, log: (line) => process.stderr.write(`${line}\n`),
  });
  try {
    await new Promise((ok, fail) => {
      http.server.once('error', fail);
      http.server.listen(o.port, o.host, ok);
    });
  } catch (e) {
    err(`cannot listen on ${o.host}:${o.port}: ${e.message}`);
    return 1;
  }
  const { createGemma4, createGemma4Mtp } = await import(pathToFileURL(entry).href);
  let runtime;
  try {
    runtime = await (o.assistant ? createGemma4Mtp : createGemma4)({ backend: o.backend,
                                                                     ...(gpuValidation ? {} : { gpuValidation: false }) });
    await runtime.load({ target: o.model, assistant: o.assistant, tokenizer: o.tokenizer,
                         contextLength: o.context, draftTokens: o.draftTokens, draftPolicy: o.draftPolicy,
                         gpuFill: o.gpuFill, decodeAhead: o.decodeAhead });
  } catch (e) {
    err(e.message);
    http.server.close();
    return 1;
  }
  http.start(runtime);
  const { port } = http.server.address();
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  process.stdout.write(`listening on http://${host}:${port}\n`);
  if (!o.apiKey && !['127.0.0.1', 'localhost', '::1'].includes(o.host)) {
    err(`serving ${o.host} without --api-key: anyone who reaches it may use it`);
  }
  // The first signal stops the server; with the handlers gone, a second one ends the process.
  const signal = await new Promise((ok) => {
    const on = (name) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      ok(name);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
  err(`${signal}: stopping`);
  await http.shutdown();
  try {
    await runtime.unload();
  } catch (e) {
    err(e.message);
    return 1;
  }
  err('stopped');
  return 0;
}
