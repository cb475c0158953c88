// Entry of the gemma4-mtp build (speculative decoding with the MTP assistant, no profiling):
// bundled into dist/gemma4-mtp.mjs beside dist/gemma4-mtp.wasm (scripts/build-web.sh).
import { defineFactory } from '../api.mjs';
import { serveIfWorker } from '../worker.mjs';

export const createGemma4Mtp = defineFactory({
  factory: 'createGemma4Mtp', mtp: true, profile: false,
  wasm: new URL('./gemma4-mtp.wasm', import.meta.url),
  moduleUrl: import.meta.url,
});
export default createGemma4Mtp;
serveIfWorker(createGemma4Mtp);
