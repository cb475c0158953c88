// Every backend op on WebGPU against the CPU reference (build-wasm/ops_compare.wasm runs both
// inside the module and prints the NMSE of each case against its bound), on a device with
// subgroups (the team reductions use subgroup adds; lavapipe's subgroups are 8 wide) and on one
// without (the workgroup-memory reductions), side by side. Without subgroups only the reductions
// change, and they do not depend on the weight type: that run takes the cases over bf16 and q4
// weights (and those over none), which reach every kernel and row count the others do, less the
// 8-row products over very many features (matvec_rows; its reductions at 2 and 3 rows, and other
// kernels' at 8, stay). Lavapipe compiles a kernel's workgroup-memory reductions slowly, the more
// rows the slower: those three cases took 2.5 minutes each on 2 cores, and the whole matrix twice
// ran past half an hour.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

const NO_SUBGROUP_TYPES = ['BF16', 'Q4'];
const NO_SUBGROUP_SKIPS = ['many_features_BF16_8x'];

async function run(features, args) {
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
    process.exitCode = await runCli(${JSON.stringify(join(root, 'build-wasm', 'ops_compare.wasm'))}, ${JSON.stringify(args)}, { device });
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
  const { features } = JSON.parse(out.split('\n').find((l) => l.startsWith('{"features"')));
  return { features, ops: cases.map((c) => c.op) };
}

// The weight type a case's name names (a part between underscores), or null.
const typeOf = (op) => op.split('_').find((p) => ['F32', 'F16', 'BF16', 'Q8', 'Q4'].includes(p)) ?? null;

test('every op matches the CPU reference, with and without subgroups', { timeout: 2700000 }, async () => {
  const noSubgroupArgs = [`--types=${NO_SUBGROUP_TYPES.join(',')}`, ...NO_SUBGROUP_SKIPS.map((s) => `--skip=${s}`)];
  const [withSubgroups, without] = await Promise.all([run(['subgroups'], []), run([], noSubgroupArgs)]);
  const all = check(withSubgroups, 'subgroups'), some = check(without, 'no subgroups');
  assert.ok(all.features.includes('subgroups'), 'lavapipe offers subgroups');
  assert.ok(!some.features.includes('subgroups'));
  for (const t of ['F32', 'F16', 'BF16', 'Q8', 'Q4']) assert.ok(all.ops.some((op) => typeOf(op) === t), t);
  const expected = all.ops.filter((op) => (typeOf(op) === null || NO_SUBGROUP_TYPES.includes(typeOf(op))) &&
                                          !NO_SUBGROUP_SKIPS.some((s) => op.includes(s)));
  assert.ok(expected.some((op) => op.startsWith('matmul_many_features_BF16_')));
  assert.deepEqual(some.ops, expected, 'without subgroups: the bf16, q4 and untyped cases, each once');
});
