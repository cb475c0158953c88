// Must not compile (tests/js/types.test.mjs): the declarations reject a misspelt option and a
// wrong type.
import { createGemma4 } from '../../web/index.mjs';

export async function misuse(): Promise<void> {
  const gemma = await createGemma4();
  await gemma.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperatur: 0 });
  await gemma.load({ target: 'm/', contextLength: '4096' });
}
