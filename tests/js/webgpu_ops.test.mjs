// Every backend op on WebGPU against the CPU reference (build-wasm/ops_compare.wasm runs both
// inside the module and prints the NMSE of each case against its bound).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('every op matches the CPU reference', () => {
  const script = `
    import { runCli } from ${JSON.stringify(join(root, 'web', 'wasm_host.mjs'))};
    import { create, globals } from 'webgpu';
    Object.assign(globalThis, globals);
    const gpu = create([]);
    const adapter = await gpu.requestAdapter();
    const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize } });
    process.exitCode = await runCli(${JSON.stringify(join(root, 'build-wasm', 'ops_compare.wasm'))}, [], { device });
    globalThis.keep = gpu;`;
  let out;
  try {
    out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  } catch (e) {
    out = e.stdout;
  }
  const cases = out.trim().split('\n').filter((l) => l.startsWith('{"op"')).map((l) => JSON.parse(l));
  assert.ok(cases.length >= 20, `expected every case, got ${cases.length}:\n${out}`);
  for (const c of cases) assert.ok(c.ok, `${c.op}: NMSE ${c.nmse} above ${c.bound}`);
  assert.match(out, /"failures": 0/);
});
