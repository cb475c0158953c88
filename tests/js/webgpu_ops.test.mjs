// Every backend op on WebGPU against the CPU reference (build-wasm/ops_compare.wasm runs both
// inside the module and prints the NMSE of each case against its bound), side by side on two
// devices. The first has subgroups (the team reductions of matvec.wgsl and kv_norm.wgsl use
// subgroup adds; lavapipe's subgroups are 4 wide with .lavapipe/env.sh's 128-bit vectors) and the
// adapter's workgroup memory (32 KiB on lavapipe: matmul.wgsl's tiles take two stages); it has
// Dawn skip zeroing workgroup memory (`disable_workgroup_init`) and the bounds checks on array
// indices (`disable_robustness`, as `--gpu-validation off` does): every op must still match, so
// that no kernel depends on that zeroing or on an index clamped. The second keeps Dawn's
// defaults, as a browser's device does: no subgroups (team.wgsl's workgroup-memory reductions)
// and 16 KiB of workgroup memory (the tiles' one stage). What changes there depends on a
// kernel's form and rows, not on the weight type: that run takes the bf16 cases of the kernels
// that reduce by teams (every form and rows variant has one) and of the tiles, not the ops of no
// weight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

const WEIGHT_TYPES = ['F32', 'F16', 'BF16', 'Q8', 'Q4'];
const NO_SUBGROUP_TYPE = 'BF16';

async function run(features, args, toggles = [], adapterStorage = false) {
  const script = `
    import { runCli } from ${JSON.stringify(join(root, 'web', 'wasm_host.mjs'))};
    import { create, globals } from 'webgpu';
    Object.assign(globalThis, globals);
    const gpu = create(${JSON.stringify(toggles)});
    const adapter = await gpu.requestAdapter();
    const requiredFeatures = ${JSON.stringify(features)}.filter((f) => adapter.features.has(f));
    const requiredLimits = { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize };
    if (${adapterStorage}) requiredLimits.maxComputeWorkgroupStorageSize = adapter.limits.maxComputeWorkgroupStorageSize;
    const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
    console.log(JSON.stringify({ features: [...device.features], storage: device.limits.maxComputeWorkgroupStorageSize }));
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
  for (const c of cases) assert.ok(c.ok, `${what}: ${c.op}: ${c.detail ?? `NMSE ${c.nmse} above ${c.bound}`}`);
  assert.match(out, /"failures": 0/, what);
  const { features, storage } = JSON.parse(out.split('\n').find((l) => l.startsWith('{"features"')));
  return { features, storage, ops: cases.map((c) => c.op) };
}

// The weight type a case's name names (a part between underscores), or null.
const typeOf = (op) => op.split('_').find((p) => WEIGHT_TYPES.includes(p)) ?? null;

test('every op matches the CPU reference, with and without subgroups', { timeout: 2700000 }, async () => {
  const noSubgroupArgs = [`--types=${NO_SUBGROUP_TYPE}`, '--typed-only'];
  // Unchecked: workgroup memory not zeroed at each workgroup's start (lavapipe then leaves what
  // earlier workgroups wrote) and no index clamped.
  const unchecked = ['enable-dawn-features=disable_workgroup_init,disable_robustness'];
  const [withSubgroups, without] = await Promise.all([run(['subgroups'], [], unchecked, true), run([], noSubgroupArgs)]);
  const all = check(withSubgroups, 'subgroups, unchecked'), some = check(without, 'no subgroups');
  assert.ok(all.features.includes('subgroups'), 'lavapipe offers subgroups');
  assert.ok(!some.features.includes('subgroups'));
  assert.ok(all.storage >= 32768, `two stages of every tile fit: ${all.storage} bytes of workgroup memory`);
  assert.equal(some.storage, 16384, 'the default workgroup memory: one stage');
  for (const t of WEIGHT_TYPES) {
    for (const form of ['matmul_', 'norm_matmul_', 'gate_up_', 'norm_matmul2_', 'matmul_gelu_mul_', 'attention_inputs_',
                        'embed_gather_', 'split_matmul_', 'matmul_tiled_']) {
      assert.ok(all.ops.some((op) => op.startsWith(form) && typeOf(op) === t), `${form} over ${t}`);
    }
  }
  const expected = all.ops.filter((op) => typeOf(op) === NO_SUBGROUP_TYPE);
  for (const rows of ['_1x', '_2x', '_3x', '_4x', '_6x', '_8x']) {
    assert.ok(expected.some((op) => op.includes(rows)), `without subgroups: a case of ${rows}`);
  }
  assert.deepEqual(some.ops, expected, 'without subgroups: the bf16 cases of the typed kernels, each once');
});
