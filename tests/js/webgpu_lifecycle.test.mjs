// One runtime owns one device: a whole generation (target and assistant loaded, run, unloaded)
// leaves no GPU buffer behind, and a later run on the same device works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { create, globals } from 'webgpu';
import { runCli } from '../../web/wasm_host.mjs';
import { root } from './cli.mjs';

Object.assign(globalThis, globals);
const gpu = create([]);

test('unloading destroys every buffer, and the device serves another run', async () => {
  const adapter = await gpu.requestAdapter();
  const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize } });
  const wasm = join(root, 'build-wasm', 'gemma4.wasm');
  const dir = join(root, 'testdata', 'models', 'e2b_mini');
  const args = ['generate', '--model', dir, '--assistant', join(dir, 'assistant_centroid'), '--prompt-ids', '2,105,7',
                '--max-new-tokens', '6', '--backend', 'webgpu', '--json'];
  for (let run = 0; run < 2; run++) {
    let live = -1, created = 0;
    const code = await runCli(wasm, args, {
      device, onExit: (bridge) => { live = bridge.liveBuffers(); created = bridge.createdBuffers(); } });
    assert.equal(code, 0);
    assert.ok(created > 50, `only ${created} buffers were made`);  // the arena and every weight
    assert.equal(live, 0, `run ${run}: ${live} GPU buffers were left`);
  }
  // A load that fails (missing weights file) also leaves nothing behind.
  let live = -1;
  const code = await runCli(wasm, ['generate', '--model', join(root, 'testdata'), '--prompt-ids', '2', '--backend', 'webgpu'],
                            { device, onExit: (bridge) => { live = bridge.liveBuffers(); } });
  assert.equal(code, 1);
  assert.equal(live, 0);
  device.destroy();
});
