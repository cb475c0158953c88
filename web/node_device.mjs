// The WebGPU device the Node CLI (bin/gemma4.mjs) runs the module on: Dawn through the `webgpu`
// package, with timestamps for bench's kernel profile and subgroups for the reductions where the
// adapter has them, and the adapter's largest buffers, bindings and workgroup memory. Returns
// null when Dawn finds no adapter (a machine without a Vulkan driver).
import { dawnInstance } from './dawn_toggles.mjs';

export async function nodeDevice({ validation = true, subgroups = true } = {}) {
  const webgpu = await import('webgpu');
  Object.assign(globalThis, webgpu.globals);
  const adapter = await dawnInstance(webgpu, { validation }).requestAdapter();
  if (!adapter) return null;
  const wanted = ['timestamp-query', ...(subgroups ? ['subgroups'] : [])];
  const device = await adapter.requestDevice({
    requiredFeatures: wanted.filter((f) => adapter.features.has(f)),
    requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
                      maxBufferSize: adapter.limits.maxBufferSize,
                      maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
  });
  globalThis.__g4_adapter = adapter;  // Dawn objects stay referenced while in use
  return device;
}
