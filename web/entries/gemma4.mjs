// Entry of the gemma4 build (plain decoding, no profiling):
// bundled into dist/gemma4.mjs beside dist/gemma4.wasm (scripts/build-web.sh).
import { defineFactory } from '../api.mjs';
import { serveIfWorker } from '../worker.mjs';

export const createGemma4 = defineFactory({
  factory: 'createGemma4', mtp: false, profile: false,
  wasm: new URL('./gemma4.wasm', import.meta.url),
  moduleUrl: import.meta.url,
});
export default createGemma4;
serveIfWorker(createGemma4);
