// Entry of the gemma4-mtp-profile build (speculative decoding with the MTP assistant, GPU timestamps per kernel):
// bundled into dist/gemma4-mtp-profile.mjs beside dist/gemma4-mtp-profile.wasm (scripts/build-web.sh).
import { defineFactory } from '../api.mjs';
import { serveIfWorker } from '../worker.mjs';

export const createGemma4MtpProfile = defineFactory({
  factory: 'createGemma4MtpProfile', mtp: true, profile: true,
  wasm: new URL('./gemma4-mtp-profile.wasm', import.meta.url),
  moduleUrl: import.meta.url,
});
export default createGemma4MtpProfile;
serveIfWorker(createGemma4MtpProfile);
