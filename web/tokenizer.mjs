// The Gemma tokenizer for JavaScript (Node and browsers): the C++ tokenizer inside the
// WebAssembly module, loaded from tokenizer.json bytes.
//   const tok = await loadTokenizer(wasmBytes, tokenizerJsonBytes);
//   tok.encode('Hello') -> [9259]; tok.decode([9259]) -> 'Hello';
//   tok.chat([{ role: 'user', content: 'Hi' }]) -> '<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n'
import { createMemoryWasi } from './wasi_memfs.mjs';

export async function loadTokenizer(wasmBytes, tokenizerJson) {
  const wasi = createMemoryWasi({ files: new Map() });
  const noGpu = new Proxy({}, { get: () => () => { throw new Error('the tokenizer needs no GPU'); } });
  const { instance } = await WebAssembly.instantiate(wasmBytes, { wasi_snapshot_preview1: wasi.imports, gpu: noGpu });
  wasi.initialize(instance);
  const ex = instance.exports;
  const mem = () => new Uint8Array(ex.memory.buffer);
  const u32 = (ptr) => new DataView(ex.memory.buffer).getUint32(ptr, true);
  const cstr = (ptr) => { const m = mem(); let end = ptr; while (m[end]) end++; return new TextDecoder().decode(m.subarray(ptr, end)); };
  const put = (bytes) => { const p = ex.malloc(Math.max(1, bytes.length)); mem().set(bytes, p); return p; };
  const json = tokenizerJson instanceof Uint8Array ? tokenizerJson : new TextEncoder().encode(tokenizerJson);
  const jp = put(json);
  const handle = ex.g4_tokenizer_load(jp, json.length);
  ex.free(jp);
  if (!handle) throw new Error(`gemma4 tokenizer: ${cstr(ex.g4_last_error())}`);
  const out = ex.malloc(4);
  const takeText = (ptr) => {
    if (!ptr) throw new Error(`gemma4 tokenizer: ${cstr(ex.g4_last_error())}`);
    const s = new TextDecoder('utf-8', { ignoreBOM: true }).decode(mem().slice(ptr, ptr + u32(out)));
    ex.free(ptr);
    return s;
  };
  return {
    bos: ex.g4_tokenizer_bos(handle),
    encode(text) {
      const bytes = new TextEncoder().encode(text);
      const tp = put(bytes);
      const ip = ex.g4_tokenizer_encode(handle, tp, bytes.length, out);
      ex.free(tp);
      const ids = Array.from(new Int32Array(ex.memory.buffer, ip, u32(out)));
      ex.free(ip);
      return ids;
    },
    decode(ids) {
      const ip = ex.malloc(Math.max(1, 4 * ids.length));
      new Int32Array(ex.memory.buffer, ip, ids.length).set(ids);
      const s = takeText(ex.g4_tokenizer_decode(handle, ip, ids.length, out));
      ex.free(ip);
      return s;
    },
    chat(messages, { addGenerationPrompt = true } = {}) {
      const bytes = new TextEncoder().encode(JSON.stringify(messages));
      const mp = put(bytes);
      const s = takeText(ex.g4_tokenizer_chat(handle, mp, bytes.length, addGenerationPrompt ? 1 : 0, out));
      ex.free(mp);
      return s;
    },
    dispose() { ex.g4_tokenizer_free(handle); },
  };
}
