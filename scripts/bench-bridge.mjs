// Two versions of the bridge (web/gpu_bridge.mjs's createGpuImports) side by side in Node, on one
// device: each hands over a list shaped as a decode step's (scripts/bench-runtime.mjs's
// bridgeOnDevice: 307 dispatches in submits of 128, the median of 40 hand-overs), in turns, so
// that the machine's drift falls on both alike. Prints each one's median over the turns, in
// microseconds a dispatch, and the ratio of B to A.
//   node scripts/bench-bridge.mjs A.mjs B.mjs [--turns N] [--gpu-validation on|off] [--json]
// A and B are files exporting createGpuImports (another version:
// `git show REV:web/gpu_bridge.mjs > web/bridge_REV.mjs`, beside the original so that its
// imports resolve). Defaults: 10 turns, validation on.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { bridgeOnDevice, median } from './bench-runtime.mjs';
import { nodeDevice } from '../web/node_device.mjs';

const fail = (m) => { console.error(`bench-bridge: ${m}`); process.exit(1); };
let parsed;
try {
  parsed = parseArgs({ allowPositionals: true, options: { turns: { type: 'string' }, 'gpu-validation': { type: 'string' },
                                                          json: { type: 'boolean' } } });
} catch (e) {
  fail(e.message);
}
const files = parsed.positionals;
if (files.length !== 2) fail('give two bridge files, A and B');
for (const f of files) if (!existsSync(f)) fail(`${f}: no such file`);
const turns = parsed.values.turns ?? '10';
if (!/^\d+$/.test(turns) || Number(turns) < 1) fail(`--turns takes a whole number of at least 1, not '${turns}'`);
const validation = parsed.values['gpu-validation'] ?? 'on';
if (validation !== 'on' && validation !== 'off') fail(`--gpu-validation takes on or off, not '${validation}'`);

const versions = await Promise.all(files.map(async (f) => {
  const m = await import(pathToFileURL(resolve(f)));
  if (typeof m.createGpuImports !== 'function') fail(`${f} exports no createGpuImports`);
  return m.createGpuImports;
}));
const device = await nodeDevice({ validation: validation === 'on' });  // the Node CLI's device
if (!device) fail('Dawn found no WebGPU adapter (no Vulkan driver)');
const us = [[], []];
for (let t = 0; t < Number(turns); t++) {
  for (let v = 0; v < 2; v++) us[v].push(await bridgeOnDevice(device, { imports: versions[v] }));
}
const [a, b] = us.map(median);
const out = { a: files[0], b: files[1], turns: Number(turns), validation, a_us_per_dispatch: a, b_us_per_dispatch: b,
              b_over_a: b / a, a_turns: us[0], b_turns: us[1] };
if (parsed.values.json) console.log(JSON.stringify(out));
else console.log(`${files[0]}: ${a.toFixed(2)} us a dispatch\n${files[1]}: ${b.toFixed(2)} us a dispatch (${(b / a).toFixed(3)}x)`);
device.destroy();
process.exit(0);
