// Every backend op on WebGPU against the CPU reference (build-wasm/ops_compare.wasm runs both
// inside the module and prints the NMSE of each case against its bound), on a device with
// subgroups (the team reductions use subgroup adds; lavapipe's subgroups are 8 wide) and on one
// without (the workgroup-memory reductions), side by side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

async function run(features) {
  const script = `
    import { runCli } from ${JSON.stringify(join(root, 'web', 'wasm_host.mjs'))};
    import { create, globals } from 'webgpu';
    Object.assign(globalThis, globals);
    const gpu = create([]);
    const adapter = await gpu.requestAdapter();
    const requiredFeatures = ${JSON.stringify(features)}.filter((f) => adapter.features.has(f));
    const device = await adapter.requestDevice({ requiredFeatures,
      requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize } });
    console.log(JSON.stringify({ features: [...device.features] }));
    process.exitCode = await runCli(${JSON.stringify(join(root, 'build-wasm', 'ops_compare.wasm'))}, [], { device });
    globalThis.keep = gpu;`;
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script],
                                                 { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
    return stdout;
  } catch (e) {
    return e.stdout;
  }
}

function check(out, what) {
  const cases = out.trim().split('\n').filter((l) => l.startsWith('{"op"')).map((l) => JSON.parse(l));
  assert.ok(cases.length >= 20, `${what}: expected every case, got ${cases.length}:\n${out}`);
  for (const c of cases) assert.ok(c.ok, `${what}: ${c.op}: NMSE ${c.nmse} above ${c.bound}`);
  assert.match(out, /"failures": 0/, what);
  return JSON.parse(out.split('\n').find((l) => l.startsWith('{"features"')));
}

test('every op matches the CPU reference, with and without subgroups', { timeout: 1800000 }, async () => {
  const [withSubgroups, without] = await Promise.all([run(['subgroups']), run([])]);
  assert.ok(check(withSubgroups, 'subgroups').features.includes('subgroups'), 'lavapipe offers subgroups');
  assert.ok(!check(without, 'no subgroups').features.includes('subgroups'));
});
