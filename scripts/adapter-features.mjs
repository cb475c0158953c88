// Lists the WebGPU adapter's features and the limits that matter here, through Dawn in Node, with
// and without Dawn's allow_unsafe_apis toggle (which unlocks experimental features such as
// subgroup matrices where the driver has them).
// usage: node scripts/adapter-features.mjs   (on a machine without a GPU: source .lavapipe/env.sh)
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);

const limits = ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxStorageBuffersPerShaderStage',
  'minSubgroupSize', 'maxSubgroupSize'];
const roots = [];  // Dawn instances stay referenced while their adapters are in use
for (const toggles of [[], ['enable-dawn-features=allow_unsafe_apis']]) {
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
}
