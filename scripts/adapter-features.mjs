// Lists the WebGPU adapter's features and the limits that matter here, through Dawn in Node: with
// no toggles, with Dawn's allow_unsafe_apis (which unlocks experimental features such as subgroup
// matrices where the driver has them), and with that and vulkan_enable_f16_on_nvidia (Dawn keeps
// shader-f16 off on NVIDIA's Vulkan drivers unless told otherwise). Where the adapter has subgroup
// matrices, it lists their configurations (component type, result type, M x N x K).
// usage: node scripts/adapter-features.mjs   (on a machine without a GPU: source .lavapipe/env.sh)
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);

const limits = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxStorageBuffersPerShaderStage',
  'minSubgroupSize', 'maxSubgroupSize'];
const toggleSets = [[], ['enable-dawn-features=allow_unsafe_apis'],
                    ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']];
const roots = [];  // Dawn instances stay referenced while their adapters are in use
for (const toggles of toggleSets) {
  const root = create(toggles);
  roots.push(root);
  const adapter = await root.requestAdapter({ powerPreference: 'high-performance' });
  console.log(`== toggles: ${toggles.join(' ') || '(none)'}`);
  if (!adapter) {
    console.log('no adapter');
    continue;
  }
  const info = adapter.info ?? {};
  console.log(`adapter: ${info.vendor ?? ''} ${info.architecture ?? ''} ${info.device ?? ''} ${info.description ?? ''}`.trim());
  console.log(`features: ${[...adapter.features].sort().join(' ')}`);
  for (const l of limits) {
    if (adapter.limits[l] !== undefined) console.log(`${l}: ${adapter.limits[l]}`);
  }
  for (const c of info.subgroupMatrixConfigs ?? []) {
    console.log(`subgroup matrix: ${c.componentType} -> ${c.resultComponentType}, ${c.M} x ${c.N} x ${c.K}`);
  }
}
