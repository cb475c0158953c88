// Dawn's toggles for the devices this package makes in Node (the `webgpu` package's create()).
// Timestamps: Dawn rounds them to steps of 65.5 us by default (a browser's guard against timing
// attacks); kernel profiles want them as the GPU wrote them. validation false has Dawn skip
// validating the runtime's GPU calls (`skip_validation`): less host time per dispatch (README),
// but a bad call is then undefined instead of an error.
export function dawnToggles({ validation = true } = {}) {
  const toggles = ['disable-dawn-features=timestamp_quantization'];
  if (!validation) toggles.push('enable-dawn-features=skip_validation');
  return toggles;
}

// One Dawn instance per set of toggles for the whole process, shared by every runtime (and every
// build's bundle, through globalThis): Dawn's instances must outlive their devices, and each new
// one enumerates the adapters again, printing its warnings (limits "artificially reduced") anew.
export function dawnInstance(webgpu, options = {}) {
  const toggles = dawnToggles(options);
  const instances = (globalThis.__gemma4_dawn ??= new Map());
  const key = toggles.join(' ');
  if (!instances.has(key)) instances.set(key, webgpu.create(toggles));
  return instances.get(key);
}
