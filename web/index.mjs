// The package's entry: the four builds' factories (each module also stands alone: dist/*.mjs).
export { createGemma4 } from '../dist/gemma4.mjs';
export { createGemma4Mtp } from '../dist/gemma4-mtp.mjs';
export { createGemma4Profile } from '../dist/gemma4-profile.mjs';
export { createGemma4MtpProfile } from '../dist/gemma4-mtp-profile.mjs';
