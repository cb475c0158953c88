// The bridge's command lists (web/gpu_bridge.mjs) on Dawn over lavapipe: the bridge reads them, and
// binds, in the layout configure() hands it (here one unlike the module's, src/backend/webgpu/wire.h,
// so that a bridge that assumed the module's would fail); a list longer than one submit runs
// every dispatch, in order, each with its own parameters, and a read handed over with the list
// (its copy in the last submit) or after it sees all of their work; reads reuse their staging
// buffers, and the bridge destroys them when disposed; a profile sums each kernel's time per
// dispatch size, or times each submit's pass whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { create, globals } from 'webgpu';
import { createGpuImports, PROFILE_KERNELS, PROFILE_PASSES } from '../../web/gpu_bridge.mjs';

Object.assign(globalThis, globals);
const gpu = create([]);  // kept referenced for the life of the process

// Each dispatch folds its parameter into the arena's first word (h = h * 31 + p) and counts itself
// in the second: the result depends on every dispatch, their order and their parameters.
// The layout the test configures: fields, slots and bindings all elsewhere than the module's.
const LAYOUT = { paramWords: 0, groupsY: 1, groupsX: 2, weights: 3, weightSlots: 4, kernel: 7, headerWords: 9,
                 maxParamWords: 32, arenaBinding: 7, paramsBinding: 5, firstWeightBinding: 0 };
const KERNEL = `
@group(0) @binding(7) var<storage, read_write> a: array<u32>;
@group(0) @binding(5) var<uniform> P: array<vec4<u32>, 8>;
@compute @workgroup_size(1) fn main() {
  a[0] = a[0] * 31u + P[0].x;
  a[1] = a[1] + 1u;
}`;
// Dispatch i's words (kernel 1, no weights, workgroups x by y, one parameter) at words[at ..].
function record(words, at, x, y, param) {
  words.fill(0, at, at + LAYOUT.headerWords + 1);
  words[at + LAYOUT.kernel] = 1;
  words[at + LAYOUT.groupsX] = x;
  words[at + LAYOUT.groupsY] = y;
  words[at + LAYOUT.paramWords] = 1;
  words[at + LAYOUT.headerWords] = param;
}
const RECORD = LAYOUT.headerWords + 1;

function expected(params) {
  let h = 0;
  for (const p of params) h = (Math.imul(h, 31) + p) >>> 0;
  return [h, params.length];
}

async function withBridge(fn) {
  const adapter = await gpu.requestAdapter();
  assert.ok(adapter, 'no WebGPU adapter: source .lavapipe/env.sh (scripts/setup-lavapipe.sh) first');
  const device = await adapter.requestDevice({
    requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [],
  });
  const mem = new WebAssembly.Memory({ initial: 4 });
  const pending = { promise: null };
  const bridge = createGpuImports(device, () => mem, pending);
  const heap = new Uint8Array(mem.buffer);
  const names = new TextEncoder().encode(Object.keys(LAYOUT).join(' '));
  new Uint32Array(mem.buffer, 2048, names.length).set(Object.values(LAYOUT));
  heap.set(names, 3072);
  bridge.configure(2048, Object.keys(LAYOUT).length, 3072, names.length);
  const code = new TextEncoder().encode(KERNEL), name = new TextEncoder().encode('fold');
  heap.set(code, 0);
  heap.set(name, 4096);
  assert.equal(bridge.register_kernel(1, 0, code.length, 4096, name.length), 1);
  const arena = bridge.create_buffer(256, 0);
  assert.ok(arena > 0);
  // Writes a command list of one dispatch per parameter at byte 8192; returns its word count.
  const list = (params) => {
    const words = new Uint32Array(mem.buffer, 8192, params.length * RECORD);
    params.forEach((p, i) => record(words, RECORD * i, 1, 1, p));
    return words.length;
  };
  // Reads the arena's first two words, handing over `count` words of commands with the read.
  const read = async (count) => {
    const ticket = bridge.read_start(8192, count, arena, 0, 8);
    assert.ok(ticket > 0);
    bridge.read_finish(ticket, 64, 8);
    assert.equal(await pending.promise, 1, `the read failed: ${bridge.lastError()?.message}`);
    return [...new Uint32Array(mem.buffer, 64, 2)];
  };
  try {
    await fn({ bridge, list, read, device, arena, pending, mem });
    assert.equal(bridge.lastError(), null);
  } finally {
    bridge.destroy_buffer(arena);
    bridge.dispose();
    device.destroy();
  }
}

const params = (n, seed) => Array.from({ length: n }, (_, i) => (Math.imul(i + seed, 2654435761) >>> 8) & 0xffff);

test('a command list of several submits, read in its last', async () => {
  await withBridge(async ({ list, read }) => {
    const p = params(300, 1);  // 128 + 128 + 44 dispatches
    assert.deepEqual(await read(list(p)), expected(p));
  });
});

test('command lists submitted apart, then a read with no commands of its own', async () => {
  await withBridge(async ({ bridge, list, read }) => {
    const first = params(200, 2), second = params(57, 3);
    bridge.submit(8192, list(first));
    bridge.submit(8192, list(second));
    assert.deepEqual(await read(0), expected([...first, ...second]));
  });
});

test('reads reuse their staging buffers, each seeing its own data; dispose destroys them', async () => {
  const staging = [];  // [buffer, destroyed] of every mappable buffer the bridge made
  await withBridge(async ({ bridge, list, read, device, arena, pending, mem }) => {
    const make = device.createBuffer.bind(device);
    device.createBuffer = (desc) => {
      const b = make(desc);
      if (desc.usage & GPUBufferUsage.MAP_READ) {
        const entry = [b, false];
        staging.push(entry);
        const destroy = b.destroy.bind(b);
        b.destroy = () => { entry[1] = true; destroy(); };
      }
      return b;
    };
    const done = [];
    for (let i = 0; i < 20; i++) {
      const p = params(3, 10 + i);
      done.push(...p);
      assert.deepEqual(await read(list(p)), expected(done), `read ${i}`);
    }
    assert.equal(staging.length, 1, 'one at a time, 20 reads of one size take one staging buffer');
    // Two reads in flight at once need two; each gets all the work before it.
    const p = params(5, 99);
    done.push(...p);
    const first = bridge.read_start(8192, list(p), arena, 0, 8);
    const second = bridge.read_start(8192, 0, arena, 0, 8);
    for (const [ticket, at] of [[first, 64], [second, 128]]) {
      bridge.read_finish(ticket, at, 8);
      assert.equal(await pending.promise, 1);
      assert.deepEqual([...new Uint32Array(mem.buffer, at, 2)], expected(done));
    }
    assert.equal(staging.length, 2);
    assert.ok(staging.every(([, destroyed]) => !destroyed), 'finished reads keep their staging buffers');
  });
  assert.ok(staging.every(([, destroyed]) => destroyed), 'dispose destroys the kept staging buffers');
});

test('a profile sums each kernel per dispatch size (workgroups x times y)', async () => {
  await withBridge(async ({ bridge, read, mem, pending }) => {
    bridge.profile(PROFILE_KERNELS);
    const sizes = [[1, 1], [3, 1], [2, 2], [3, 1], [1, 1], [1, 1], [1, 3]];
    const words = new Uint32Array(mem.buffer, 8192, RECORD * sizes.length);
    sizes.forEach(([x, y], i) => record(words, RECORD * i, x, y, i));
    await read(words.length);  // (several workgroups fold racily: only the profile is checked)
    bridge.profile(0);
    bridge.profile_read(16384, 16384);
    const length = await pending.promise;
    assert.ok(length > 0, 'the profile did not fit');
    const p = JSON.parse(new TextDecoder().decode(new Uint8Array(mem.buffer, 16384, length)));
    assert.equal(p.schema_version, 3);
    assert.equal(p.supported, true, 'the adapter has no timestamp queries (lavapipe has)');
    assert.equal(p.mode, 'kernels');
    assert.equal(p.fresh, true);
    assert.deepEqual(p.passes, { ms: 0, count: 0, dispatches: 0 });
    assert.equal(p.ops.fold.calls, 7);
    const calls = Object.fromEntries(Object.entries(p.ops.fold.by_workgroups).map(([g, d]) => [g, d.calls]));
    assert.deepEqual(calls, { 1: 3, 3: 3, 4: 1 });
    const ms = Object.values(p.ops.fold.by_workgroups).reduce((sum, d) => sum + d.ms, 0);
    assert.ok(Math.abs(ms - p.ops.fold.ms) <= 1e-9 + 1e-9 * p.ops.fold.ms);
  });
});

test('a profile of passes times each submit whole and counts its dispatches', async () => {
  await withBridge(async ({ bridge, read, mem, pending }) => {
    const readProfile = async () => {
      bridge.profile_read(16384, 16384);
      const length = await pending.promise;
      assert.ok(length > 0, 'the profile did not fit');
      return JSON.parse(new TextDecoder().decode(new Uint8Array(mem.buffer, 16384, length)));
    };
    // 7 dispatches, then 3 more in a second command list: two submits.
    const words = new Uint32Array(mem.buffer, 8192, RECORD * 7);
    for (let i = 0; i < 7; i++) record(words, RECORD * i, 1, 1, i);
    bridge.profile(PROFILE_KERNELS);
    await read(RECORD);
    bridge.profile(PROFILE_PASSES);  // starts afresh: the kernel just timed is not in it
    await read(words.length);
    await read(3 * RECORD);
    bridge.profile(0);
    await read(3 * RECORD);  // not profiled
    const p = await readProfile();
    assert.equal(p.schema_version, 3);
    assert.equal(p.mode, 'passes');
    assert.equal(p.fresh, true);
    assert.deepEqual(p.ops, {}, 'no kernel is timed on its own');
    assert.equal(p.total_kernel_ms, 0);
    assert.equal(p.passes.count, 2);
    assert.equal(p.passes.dispatches, 10);
    assert.ok(p.passes.ms > 0, `passes took ${p.passes.ms} ms`);
  });
});
