// Loading, resetting and unloading over and over (Node, WebGPU on Dawn + lavapipe) leaves no GPU
// buffer behind and holds the process's memory (RSS) within a bound: every other cycle makes a new
// runtime (as a page or server that drops one and makes another does; the others reuse it), loads
// the smallest bundled model, resets it every fourth cycle and unloads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { root } from './cli.mjs';

const { createGemma4 } = await import(join(root, 'dist', 'gemma4.mjs'));
const model = join(root, 'testdata/models/dense');
const tokenizer = join(root, 'testdata/tokenizers/mini/tokenizer.json');

// The first load measures the adapter's fill (WebGpuBackend::Calibrate, a second or more on
// lavapipe); the later ones reuse it, and each reports the same. G4_CYCLES sets another count. A
// device left undestroyed holds tens of MB, so one leaked a cycle passes RSS_BOUND_MB within a few
// cycles.
const CYCLES = Number(process.env.G4_CYCLES ?? 200);
const WARM = 3;           // cycles before the reference RSS (first compiles, allocator pools)
const RSS_BOUND_MB = 64;  // growth allowed from cycle WARM to the last

test(`${CYCLES} load/reset/unload cycles leave no GPU buffer and bounded RSS`, { timeout: 600000 }, async () => {
  let reference = 0;
  const rss = [];
  let g = null;
  let fill = 0;
  for (let i = 1; i <= CYCLES; i++) {
    if (i % 2 === 1) g = await createGemma4();
    await g.load({ target: model, tokenizer });
    fill ||= g.stats().model.gpu_fill;
    assert.ok(fill >= 1);
    assert.equal(g.stats().model.gpu_fill, fill, `cycle ${i}: the fill measured at the first load`);
    const loaded = g.stats().gpu_buffers;
    assert.ok(loaded > 10, `cycle ${i}: only ${loaded} GPU buffers while loaded`);
    if (i % 4 === 0) {
      await g.reset();
      assert.equal(g.stats().gpu_buffers, loaded, `cycle ${i}: buffers after reset`);
    }
    await g.unload();
    assert.equal(g.stats().gpu_buffers, 0, `cycle ${i}: GPU buffers left after unload`);
    rss.push(process.memoryUsage().rss / 2 ** 20);
    if (i === WARM) reference = rss[i - 1];
  }
  const last = rss[rss.length - 1];
  const at = (n) => rss[Math.min(n, rss.length) - 1].toFixed(0);
  const trail = `RSS MB after cycles 1, ${WARM}, ${Math.ceil(CYCLES / 2)}, ${CYCLES}: ${at(1)}, ${at(WARM)}, ${at(Math.ceil(CYCLES / 2))}, ${at(CYCLES)}`;
  console.log(trail);
  assert.ok(last - reference <= RSS_BOUND_MB, `RSS grew ${(last - reference).toFixed(0)} MB (bound ${RSS_BOUND_MB}); ${trail}`);
});

test('gpuFill pins the fill a load uses, on WebGPU only; so is decodeAhead above 0', { timeout: 120000 }, async () => {
  const g = await createGemma4();
  for (const [gpuFill, decodeAhead] of [[1, undefined], [7, 3], [7, 0]]) {
    await g.load({ target: model, tokenizer, gpuFill, decodeAhead });
    assert.equal(g.stats().model.gpu_fill, gpuFill);
    assert.equal(g.stats().model.decode_ahead, decodeAhead ?? 1, 'one step ahead by default on WebGPU');
    await g.unload();
  }
  await assert.rejects(g.load({ target: model, tokenizer, gpuFill: 65537 }), /gpuFill must be an integer in \[0, 65536\]/);
  const cpu = await createGemma4({ backend: 'cpu' });
  await assert.rejects(cpu.load({ target: model, tokenizer, gpuFill: 3 }), /gpuFill goes with the webgpu backend/);
  // So does recording ahead: the CPU backend's reads do not overlap its work.
  await assert.rejects(cpu.load({ target: model, tokenizer, decodeAhead: 2 }), /decodeAhead above 0 goes with the webgpu backend/);
  await cpu.load({ target: model, tokenizer, gpuFill: 0, decodeAhead: 0 });
  assert.equal(cpu.stats().model.gpu_fill, 0);
  assert.equal(cpu.stats().model.decode_ahead, 0);
  await cpu.unload();
});
