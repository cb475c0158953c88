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
