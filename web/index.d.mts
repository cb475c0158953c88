import type { Gemma4Factory } from './gemma4-types.js';
export * from './gemma4-types.js';
export declare const createGemma4: Gemma4Factory;
export declare const createGemma4Mtp: Gemma4Factory;
export declare const createGemma4Profile: Gemma4Factory;
export declare const createGemma4MtpProfile: Gemma4Factory;
