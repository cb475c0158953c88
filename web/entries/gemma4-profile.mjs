// Entry of the gemma4-profile build (plain decoding, GPU timestamps per kernel):
// bundled into dist/gemma4-profile.mjs beside dist/gemma4-profile.wasm (scripts/build-web.sh).
import { defineFactory } from '../api.mjs';
import { serveIfWorker } from '../worker.mjs';

export const createGemma4Profile = defineFactory({
  factory: 'createGemma4Profile', mtp: false, profile: true,
  wasm: new URL('./gemma4-profile.wasm', import.meta.url),
  moduleUrl: import.meta.url,
});
export default createGemma4Profile;
serveIfWorker(createGemma4Profile);
