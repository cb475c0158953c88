// Compiled (never run) by tests/js/types.test.mjs with tsc --strict: the package's declarations
// describe the API as the tests and the demo use it.
import { createGemma4, createGemma4Mtp } from '../../web/index.mjs';
import type { ChatCompletionChunk, Stats } from '../../web/index.mjs';
import { createGemma4MtpProfile } from '../../dist/gemma4-mtp-profile.mjs';

export async function use(): Promise<string> {
  const gemma = await createGemma4Mtp({ backend: 'webgpu', cache: true });
  await gemma.load({ target: 'models/e2b/', assistant: 'models/e2b-assistant/', contextLength: 2048,
                     onProgress: (p) => { console.log(p.phase, p.loaded, p.total); } });
  let text = '';
  const stream = await gemma.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], stream: true,
                                                       max_tokens: 32, temperature: 0, stop: ['\n'], mtp: true });
  for await (const chunk of stream) {
    const c: ChatCompletionChunk = chunk;
    text += c.choices[0].delta.content ?? '';
    if (c.usage) console.log(c.usage.speculative.acceptance_rate, c.usage.speculative.rounds_ahead, c.usage.time_to_first_token_ms);
  }
  const done = await gemma.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], seed: 3, top_p: 0.9 });
  text += done.choices[0].message.content;
  gemma.interrupt();
  await gemma.reset();
  const s: Stats = gemma.stats();
  console.log(s.drafted, s.accepted_per_position, s.profile.schema_version);
  await gemma.unload();
  const deleted: number = await createGemma4Mtp.deleteCache();
  console.log(deleted);
  const plain = await createGemma4({ worker: true });
  plain.terminate?.();
  const prof = await createGemma4MtpProfile();
  const mode: 'kernels' | 'passes' = prof.stats().profile.mode;
  console.log(mode, prof.stats().profile.passes.ms, prof.stats().profile.passes.dispatches);
  for (const [name, op] of Object.entries(prof.stats().profile.ops)) {
    for (const [groups, size] of Object.entries(op.by_workgroups)) console.log(name, groups, size.ms, size.calls);
  }
  return text;
}
