"""Training samples from the corpus (corpus.py) for train.py and distil.py. No torch here.

A sample is T token ids: <bos>, then text that starts at a sentence start, encoded as a prompt
would be (its first word without the U+2581 a space before it would give), running on through
the rest of the address and into the next one (<eos> between them); padded with <pad> (0) at
the end of the corpus. Chat samples are conversations in Gemma 4's format (an optional system
turn, then user turns of one sentence and model turns of the next one to four sentences, each
turn closed by <turn|>), cut at T.

Sentences are encoded one by one, alone and after a space; since no merge crosses a word
boundary, a run of sentences is the concatenation of those encodings (check_concatenation)."""
import numpy as np

PAD, EOS, BOS = 0, 1, 2
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You are a concise assistant.", "Answer in plain English."]


class SentenceSamples:
    def __init__(self, docs, encode_batch, length):
        """docs: [{"sentences": [...]}, ...]; encode_batch: list of str -> list of id lists."""
        self.length = length
        sents = [s for d in docs for s in d["sentences"]]
        plain = encode_batch(sents)
        spaced = encode_batch([" " + s for s in sents])
        flat, ends, firsts = [], [], []
        i = 0
        for d in docs:
            flat.append(BOS)
            for k in range(len(d["sentences"])):
                ids = plain[i] if k == 0 else spaced[i]
                flat.extend(ids)
                ends.append(len(flat))
                firsts.append(k == 0)
                i += 1
            flat.append(EOS)
        self.flat = np.asarray(flat, dtype=np.int32)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.plain = [np.asarray(p, dtype=np.int32) for p in plain]
        self.docs = docs
        self.tokens = int(sum(len(s) for s in spaced))

    def __len__(self):
        return len(self.plain)

    def row(self, i):
        out = np.full(self.length, PAD, dtype=np.int32)
        head = self.plain[i][: self.length - 1]
        out[0] = BOS
        out[1:1 + len(head)] = head
        n = 1 + len(head)
        rest = self.flat[self.ends[i]: self.ends[i] + self.length - n]
        out[n:n + len(rest)] = rest
        return out

    def sample(self, rng, n):
        return np.stack([self.row(i) for i in rng.integers(0, len(self), n)])


def chat_texts(docs, rng, n, max_chars):
    """n conversations made of consecutive sentences of the addresses, without <bos>."""
    out = []
    docs = [d for d in docs if len(d["sentences"]) >= 8]
    while len(out) < n:
        sents = docs[rng.integers(0, len(docs))]["sentences"]
        k = int(rng.integers(0, len(sents) - 4))
        text = ""
        if rng.random() < 0.3:
            text += "<|turn>system\n" + SYSTEM_PROMPTS[rng.integers(0, len(SYSTEM_PROMPTS))] + "<turn|>\n"
        while k + 1 < len(sents) and len(text) < max_chars:
            m = int(rng.integers(1, 5))
            reply = " ".join(sents[k + 1:k + 1 + m])
            text += "<|turn>user\n" + sents[k] + "<turn|>\n<|turn>model\n" + reply + "<turn|>\n"
            k += 1 + m
        out.append(text)
    return out


class ChatSamples:
    def __init__(self, texts, encode_batch, length):
        self.rows = np.full((len(texts), length), PAD, dtype=np.int32)
        for r, ids in enumerate(encode_batch(texts)):
            ids = [BOS] + list(ids[: length - 1])
            self.rows[r, :len(ids)] = ids

    def __len__(self):
        return len(self.rows)

    def sample(self, rng, n):
        return self.rows[rng.integers(0, len(self.rows), n)]


def mixed_batch(plain, chat, rng, n, chat_fraction):
    n_chat = int(round(n * chat_fraction)) if chat is not None else 0
    parts = [plain.sample(rng, n - n_chat)]
    if n_chat:
        parts.append(chat.sample(rng, n_chat))
    return np.concatenate(parts)


def check_concatenation(samples, encode_batch, docs=3):
    """Count of addresses (of the first `docs`) whose whole-text encoding differs from the
    concatenation of their sentences' encodings."""
    bad = 0
    texts = [" ".join(d["sentences"]) for d in samples.docs[:docs]]
    start = 0
    for d, ids in zip(samples.docs[:docs], encode_batch(texts)):
        n = len(ids)
        got = samples.flat[start + 1:start + 1 + n].tolist()
        bad += got != list(ids)
        start += 1 + n + 1
    return bad
