#!/usr/bin/env node
// The runtime in Node (Dawn) and in headless Chromium, side by side in one run: the same mtp
// build, model and measurements (scripts/bench-runtime.mjs) in each: load, prefill of a long
// prompt, plain decode, decode with the assistant (a round's wall time against a plain step),
// and the host's cost of a dispatch (each of the runtime's three calls a dispatch, their submit,
// and what the bridge adds) and of a submit-and-read round trip.
//   node scripts/bench-browser.mjs --model DIR --assistant DIR [--tokenizer FILE]
//        [--prompt-tokens N] [--decode-tokens N] [--reps N] [--only node|browser]
//        [--chromium PATH] [--gpu] [--chromium-flag FLAG]... [--wasm FILE]... [--gpu-validation on|off]
//        [--submit-dispatches N[,N...]] [--decode-ahead N[,N...]] [--gpu-fill N[,N...]] [--profile]
//        [--timeout S] [--json]
// The prompts are text: --tokenizer where the model's folder has no tokenizer.json (a synthetic
// model: a tokenizer with at least its vocabulary's ids). Defaults: the demo pair, 512 prompt
// tokens, 128 decoded, two of each request (the best kept), Debian's Chromium (/usr/bin/chromium)
// on its own software adapter (SwiftShader). --gpu asks Chromium for a hardware adapter through
// Vulkan (the flags are GPU_FLAGS below) and stops if it gives a software one. The adapter printed
// is the one the dispatch probe got, asking as the runtime asks (high performance). The page is
// cross-origin isolated, for a fine clock. Chromium runs with a profile of its own on disk, so that
// a model of several GB reaches the page through its file cache rather than memory. --timeout ends
// the whole run with an error after S seconds (default 1800). Build dist/ first
// (scripts/build-web.sh). In Node, --wasm runs the bench once for each module given (another build
// of the mtp runtime, to compare builds in one run) instead of dist's, and --gpu-validation off has
// Dawn skip validating the runtime's calls, the kernels' bounds checks and the zeroing of their
// workgroup memory (the browser always does all three).
// --submit-dispatches runs each side once per value of the runtime's submitDispatches
// (docs/API.md): 4096 puts all of a step's dispatches in one compute pass. --decode-ahead runs
// each side once per value of the load option decodeAhead (0: nothing recorded ahead of a read,
// no speculative round recorded ahead), for each --submit-dispatches value; --gpu-fill once per
// value of the load option gpuFill (the workgroups that fill the device, which shape the
// dispatches; 0: the runtime's default, measured at the adapter's first load and kept for later
// ones), for each of those. --profile also times
// the prefill's GPU kernels in each place, once, through the plain profile build (a compute pass
// a kernel; the target alone): where the two places' kernel times agree and their prefills do not,
// the difference is the host's and the GPU process's, not the kernels'.
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { BUILDS, ROOT, verifyManifest } from './manifest.mjs';
import { serve } from './serve.mjs';
import { benchRuntime, bridgeCost, dispatchCost, prefillProfile } from './bench-runtime.mjs';
import { dawnInstance } from '../web/dawn_toggles.mjs';

const OFFLINE_FLAGS = ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-quic', '--no-first-run',
                       '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// Chromium's WebGPU on Linux takes its adapters from Vulkan only when Chromium itself runs on
// Vulkan; a headless machine's driver may lack surfaces, which --disable-vulkan-surface leaves out.
const GPU_FLAGS = ['--enable-features=Vulkan', '--use-angle=vulkan', '--use-vulkan=native', '--disable-vulkan-surface',
                   '--ignore-gpu-blocklist'];

const fail = (message) => {
  console.error(`bench-browser: ${message}`);
  process.exit(1);
};
const OPTIONS = { gpu: { type: 'boolean' }, json: { type: 'boolean' }, profile: { type: 'boolean' }, 'chromium-flag': { type: 'string', multiple: true },
                  wasm: { type: 'string', multiple: true } };
for (const name of ['model', 'assistant', 'tokenizer', 'prompt-tokens', 'decode-tokens', 'reps', 'only', 'chromium',
                    'gpu-validation', 'submit-dispatches', 'decode-ahead', 'gpu-fill', 'timeout']) OPTIONS[name] = { type: 'string' };
let parsed;
try {
  parsed = parseArgs({ options: OPTIONS, strict: true, allowPositionals: false, tokens: true });
} catch (e) {
  fail(e.message);
}
for (const name of Object.keys(OPTIONS)) {
  if (!OPTIONS[name].multiple && parsed.tokens.filter((t) => t.kind === 'option' && t.name === name).length > 1) {
    fail(`--${name} is given more than once`);
  }
}
const opt = (name, fallback) => parsed.values[name] ?? fallback;
const all = (name) => parsed.values[name] ?? [];
const model = resolve(opt('model', join(ROOT, 'testdata/models/demo')));
const assistant = resolve(opt('assistant', join(model, 'assistant')));
const tokenizer = opt('tokenizer') && resolve(opt('tokenizer'));
const count = (name, fallback, least) => {
  const v = String(opt(name, fallback));
  if (!/^\d+$/.test(v) || Number(v) < least) fail(`--${name} takes a whole number of at least ${least}, not '${v}'`);
  return Number(v);
};
// Plain decode and rounds need a few tokens after the first (which the prefill gives).
const measure = { promptTokens: count('prompt-tokens', 512, 8), decodeTokens: count('decode-tokens', 128, 4),
                  reps: count('reps', 2, 1) };
const timeoutS = count('timeout', 1800, 1);
const wasms = all('wasm').map((f) => resolve(f));
for (const f of wasms) if (!existsSync(f)) fail(`--wasm ${f}: no such file`);
const validation = opt('gpu-validation', 'on');
if (validation !== 'on' && validation !== 'off') fail(`--gpu-validation takes on or off, not '${validation}'`);
const submits = opt('submit-dispatches') === undefined ? [undefined] : opt('submit-dispatches').split(',').map((v) => {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 4096) {
    fail(`--submit-dispatches takes whole numbers from 1 to 4096, not '${v}'`);
  }
  return Number(v);
});
const aheads = opt('decode-ahead') === undefined ? [undefined] : opt('decode-ahead').split(',').map((v) => {
  if (!/^\d+$/.test(v) || Number(v) > 16) fail(`--decode-ahead takes whole numbers from 0 to 16, not '${v}'`);
  return Number(v);
});
const fills = opt('gpu-fill') === undefined ? [undefined] : opt('gpu-fill').split(',').map((v) => {
  if (!/^\d+$/.test(v) || Number(v) > 65536) fail(`--gpu-fill takes whole numbers from 0 to 65536, not '${v}'`);
  return Number(v) || undefined;
});
// Each side's runs: every submit size with every decodeAhead and every fill.
const configs = submits.flatMap((submitDispatches) => aheads.flatMap((decodeAhead) =>
  fills.map((gpuFill) => ({ submitDispatches, decodeAhead, gpuFill }))));
const only = opt('only');
if (only !== undefined && only !== 'node' && only !== 'browser') fail(`--only takes node or browser, not '${only}'`);
const executablePath = opt('chromium', '/usr/bin/chromium');
const gpu = !!parsed.values.gpu;
const flags = [...OFFLINE_FLAGS, ...(gpu ? GPU_FLAGS : []), ...all('chromium-flag')];

for (const [what, dir] of [['--model', model], ['--assistant', assistant]]) {
  if (!existsSync(join(dir, 'config.json'))) fail(`${what} ${dir}: no config.json there`);
}
if (tokenizer && !existsSync(tokenizer)) fail(`--tokenizer ${tokenizer}: no such file`);
// The prompts are text: a model without its tokenizer (a synthetic one) needs --tokenizer, with
// at least as many ids as the model's vocabulary (the runtime refuses fewer).
if (!tokenizer && !existsSync(join(model, 'tokenizer.json'))) {
  fail(`--model ${model}: no tokenizer.json there; give one with --tokenizer (one with as many ids as the ` +
       "model's vocabulary at least, such as Gemma's own for a model of a real shape)");
}
const mtp = BUILDS.find((b) => b.mtp && !b.profile);
const profiled = parsed.values.profile ? BUILDS.find((b) => !b.mtp && b.profile) : null;
const dist = join(ROOT, 'dist');
for (const b of [mtp, ...(profiled ? [profiled] : [])]) {
  const state = verifyManifest(dist).builds[b.name];
  if (state !== 'ok') fail(`the ${b.name} build in dist/ is ${state} (scripts/build-web.sh)`);
}

// The model's folders and the tokenizer, served beside the repository under /bench/.
function fileRoutes(prefix, dir) {
  const routes = {};
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (!statSync(file).isFile()) continue;
    const send = (req, res) => {
      res.setHeader('Content-Type', 'application/octet-stream');
      res.setHeader('Content-Length', statSync(file).size);
      if (req.method === 'HEAD') return res.end();
      createReadStream(file).pipe(res);
    };
    routes[`GET ${prefix}${name}`] = send;
    routes[`HEAD ${prefix}${name}`] = send;
  }
  return routes;
}

const configLabel = ({ submitDispatches, decodeAhead, gpuFill }) =>
  `${submitDispatches ? `, ${submitDispatches} a submit` : ''}${decodeAhead !== undefined ? `, decodeAhead ${decodeAhead}` : ''}` +
  `${gpuFill ? `, gpuFill ${gpuFill}` : ''}`;
// A row's options as fields (null: the runtime's default), beside its label.
const configFields = ({ submitDispatches, decodeAhead, gpuFill }) =>
  ({ submit_dispatches: submitDispatches ?? null, decode_ahead: decodeAhead ?? null, gpu_fill_option: gpuFill ?? null });
// A config's options as the factory and the load take them (absent: the runtime's default).
const submitOptionsOf = ({ submitDispatches }) => (submitDispatches ? { submitDispatches } : {});
const loadOptionsOf = ({ decodeAhead, gpuFill }) =>
  ({ ...(decodeAhead !== undefined ? { decodeAhead } : {}), ...(gpuFill ? { gpuFill } : {}) });

// A build's factory, from its module's exports.
const factoryOf = (mod) => Object.values(mod).find((f) => typeof f === 'function');

async function inNode(wasm, config, first) {
  const webgpu = await import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  const dispatch = { ...await dispatchCost(dawnInstance(webgpu, { validation: validation === 'on' }), submitOptionsOf(config)),
                     ...bridgeCost() };
  const factory = factoryOf(await import(pathToFileURL(join(dist, `${mtp.file}.mjs`)).href));
  const factoryOptions = { ...(wasm ? { wasm } : {}), ...(validation === 'off' ? { gpuValidation: false } : {}),
                           ...submitOptionsOf(config) };
  const runtime = await benchRuntime(factory, { target: model, assistant, tokenizer, ...measure, factoryOptions,
                                                loadOptions: loadOptionsOf(config) });
  // The profile build's own module (a --wasm build is of the mtp runtime), once for Node.
  const kernels = profiled && first
    ? await prefillProfile(factoryOf(await import(pathToFileURL(join(dist, `${profiled.file}.mjs`)).href)),
                           { target: model, tokenizer, promptTokens: measure.promptTokens, loadOptions: loadOptionsOf(config),
                             factoryOptions: validation === 'off' ? { gpuValidation: false } : {} })
      .catch((e) => ({ prefill_kernels_error: e.message }))
    : {};
  return { where: `node (Dawn${validation === 'off' ? ', validation off' : ''}${configLabel(config)})` +
                  `${wasm ? ` ${basename(wasm)}` : ''}`, ...configFields(config), ...dispatch, ...runtime, ...kernels };
}

async function inBrowser() {
  const routes = {
    'GET /bench/': (req, res) => {
      // Cross-origin isolated, so that performance.now() is fine-grained in the page (Chromium
      // rounds it to 100 us otherwise).
      res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
      res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.end('<!doctype html><title>bench</title>');
    },
    ...fileRoutes('/bench/target/', model),
    ...fileRoutes('/bench/assistant/', assistant),
    ...(tokenizer ? fileRoutes('/bench/tokenizer/', resolve(tokenizer, '..')) : {}),
  };
  const server = await serve({ routes });
  const base = `http://127.0.0.1:${server.address().port}`;
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'g4-bench-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath, args: flags });
    const page = context.pages()[0] ?? (await context.newPage());
    // The optional files a model folder lacks answer 404 by design; everything else is shown.
    page.on('console', (m) => { if (!m.text().includes('404')) console.error(`[page] ${m.text()}`); });
    page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
    await page.goto(`${base}/bench/`);
    // Each config's options go in as the factory and the load take them; the rows come back in order.
    const results = await page.evaluate(async ({ base, build, profiled, tokenizer, measure, gpu, options }) => {
      const { benchRuntime, bridgeCost, dispatchCost, prefillProfile } = await import(`${base}/scripts/bench-runtime.mjs`);
      const factoryOf = (mod) => Object.values(mod).find((f) => typeof f === 'function');
      const factory = factoryOf(await import(`${base}/dist/${build}.mjs`));
      const dispatch = { ...await dispatchCost(navigator.gpu), ...bridgeCost() };
      if (gpu && dispatch.software) throw new Error(`Chromium gave a software adapter (${dispatch.adapter}), not a GPU`);
      const out = [];
      for (const { factoryOptions, loadOptions } of options) {
        const runtime = await benchRuntime(factory, { target: `${base}/bench/target/`, assistant: `${base}/bench/assistant/`,
                                                       tokenizer: tokenizer && `${base}/bench/tokenizer/${tokenizer}`, ...measure,
                                                       factoryOptions, loadOptions });
        out.push({ isolated: self.crossOriginIsolated, ...dispatch, ...runtime });
      }
      if (profiled) {
        Object.assign(out[0], await prefillProfile(factoryOf(await import(`${base}/dist/${profiled}.mjs`)), {
          target: `${base}/bench/target/`, tokenizer: tokenizer && `${base}/bench/tokenizer/${tokenizer}`,
          promptTokens: measure.promptTokens, loadOptions: options[0].loadOptions }).catch((e) => ({ prefill_kernels_error: e.message })));
      }
      return out;
    }, { base, build: mtp.file, profiled: profiled?.file, tokenizer: tokenizer && basename(tokenizer), measure, gpu,
         options: configs.map((c) => ({ factoryOptions: submitOptionsOf(c), loadOptions: loadOptionsOf(c) })) });
    const version = context.browser()?.version() ?? '';
    return results.map((r, i) => ({ where: `chromium ${version}${configLabel(configs[i])}`.trim(), ...configFields(configs[i]), ...r }));
  } finally {
    await context?.close();
    server.closeAllConnections?.();
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

const runs = [...(wasms.length ? wasms : [undefined])
  .flatMap((w, i) => configs.map((c, j) => ['node', () => inNode(w, c, i === 0 && j === 0)])),
              ['browser', inBrowser]];
// A stalled GPU or page must not hang the run.
setTimeout(() => fail(`the run took over ${timeoutS} s (--timeout)`), timeoutS * 1000).unref();
const rows = [];
for (const [name, run] of runs) {
  if (only && only !== name) continue;
  try {
    rows.push(...[await run()].flat());
  } catch (e) {
    rows.push({ where: name, error: e.message });
  }
}
// A row as text; made for every row in both output modes, so that a figure a row lacks fails
// the run either way.
const rowText = (r) => {
  if (r.error) return `${r.where}: failed: ${r.error}`;
  const clock = r.isolated === false ? ' (the page\'s clock is coarse: not cross-origin isolated)' : '';
  return `${r.where}: adapter ${r.adapter} [${r.features.join(', ')}]${clock}\n` +
    `  dispatch (one pipeline, one group): encode and submit ${r.encode_us_per_dispatch.toFixed(2)} us, pass ` +
    `${r.pass_us_per_dispatch.toFixed(2)} us a dispatch; submit-and-read ${r.round_trip_us.toFixed(0)} us\n` +
    `  the runtime's dispatches (best of each): setPipeline ${r.set_pipeline_us.toFixed(2)}, setBindGroup at a ` +
    `typed array's offset ${r.set_bind_group_us.toFixed(2)}, at an array's ${r.set_bind_group_array_us.toFixed(2)} ` +
    `(a group a slot: ${r.set_bind_group_per_slot_us.toFixed(2)}, made in ` +
    `${r.create_bind_group_us.toFixed(1)}), dispatchWorkgroups ${r.dispatch_call_us.toFixed(2)} us a call; the three ` +
    `${r.pattern_encode_us_per_dispatch.toFixed(2)} us, their submit ${r.pattern_submit_us_per_dispatch.toFixed(2)} us a dispatch\n` +
    `  once a list of ${r.list_dispatches}: its parameters' write ${r.write_uniforms_us.toFixed(1)} us, an encoder with an empty pass ` +
    `${r.encoder_us.toFixed(1)} us, its submit ${r.empty_submit_us.toFixed(1)} us\n` +
    `  the bridge's hand-over of a decode step's shape, in submits of ${r.bridge_submit_dispatches}: ` +
    `${r.bridge_device_us_per_dispatch.toFixed(2)} us a dispatch (median); its own work on a stand-in device ` +
    `${r.bridge_us_per_dispatch.toFixed(2)} us (best), ${r.device_calls_per_dispatch} device calls a dispatch\n` +
    `  limits: storage binding ${r.binding_bytes} bytes, workgroup memory ${r.workgroup_bytes} bytes; the runtime's ` +
    `fill ${r.gpu_fill} workgroups, arena ${r.arena_bytes} bytes\n` +
    `  load ${r.load_s.toFixed(1)} s; prefill ${r.prefill_tokens_per_s.toFixed(0)} tok/s (${r.prompt_tokens} tokens); ` +
    `decode ${r.decode_tokens_per_s.toFixed(1)} tok/s (step ${r.step_ms.toFixed(2)} ms)\n` +
    `  with the assistant (K=${r.draft_tokens}): ${r.mtp_tokens_per_s.toFixed(1)} tok/s, ${r.rounds} rounds of ` +
    `${r.round_ms.toFixed(2)} ms = ${r.round_per_step.toFixed(3)}x a step, acceptance ${(100 * r.acceptance_rate).toFixed(1)}%; ` +
    `${r.rounds_ahead} recorded before the read of the one before` +
    (r.prefill_kernels_error ? `\n  prefill's GPU kernels: not timed: ${r.prefill_kernels_error}` : '') +
    (r.prefill_kernels_ms === undefined ? '' : `\n  prefill's GPU kernels (the profile build, a pass a kernel): ` +
      `${r.prefill_kernels_ms.toFixed(2)} ms for ${r.profile_prompt_tokens} tokens; ` +
      r.prefill_kernels_top.map((k) => `${k.name} ${k.ms.toFixed(2)} ms (${k.calls})`).join(', '));
};
const texts = rows.map(rowText);
if (parsed.values.json) {
  console.log(JSON.stringify({ model, assistant, flags: rows.some((r) => r.where.startsWith('chromium')) ? flags : [], rows }));
} else {
  console.log(`model ${model}, assistant ${assistant}; ${measure.promptTokens} prompt tokens, ${measure.decodeTokens} decoded, best of ${measure.reps}`);
  for (const t of texts) console.log(t);
}
process.exit(rows.some((r) => r.error) ? 1 : 0);
