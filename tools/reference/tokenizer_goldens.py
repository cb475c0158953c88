#!/usr/bin/env python3
"""Records what Hugging Face `tokenizers` (0.23) and transformers' chat templates produce, as
golden data for the C++ tokenizer.

  python3 tokenizer_goldens.py --tokenizer DIR/tokenizer.json --config DIR/tokenizer_config.json \
      --corpus testdata/tokenizer/corpus.json --out testdata/tokenizer/golden.json

For every corpus text: ids of encode(text, add_special_tokens=False) and decode(ids). The same for
a Gemma 4 style variant of the vocabulary (ids 105/106 renamed <|turn>/<turn|>, made as
gemma4_variant() does, which the C++ tests repeat). Chat: Gemma 3 conversations rendered by the
chat template shipped in tokenizer_config.json."""
import argparse
import json
import os
import tempfile

import tokenizers
from tokenizers import Tokenizer

RENAMES = {105: "<|turn>", 106: "<turn|>"}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Why is the sky blue?\n"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, how can I help?"},
     {"role": "user", "content": "Write a haiku about <bos> tokens 🚀"}],
]


def gemma4_variant(src, dst):
    with open(src, encoding="utf-8") as f:
        t = json.load(f)
    for a in t["added_tokens"]:
        if a["id"] in RENAMES:
            old = a["content"]
            a["content"] = RENAMES[a["id"]]
            vocab = t["model"]["vocab"]
            if vocab.get(old) == a["id"]:
                del vocab[old]
                vocab[a["content"]] = a["id"]
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(t, f, ensure_ascii=False)


def encode_all(tok, texts):
    out = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        out.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.corpus, encoding="utf-8") as f:
        texts = json.load(f)
    tok = Tokenizer.from_file(args.tokenizer)
    golden = {"tokenizers": tokenizers.__version__, "gemma3": encode_all(tok, texts)}
    with tempfile.TemporaryDirectory() as d:
        variant = os.path.join(d, "tokenizer.json")
        gemma4_variant(args.tokenizer, variant)
        golden["gemma4_variant"] = encode_all(Tokenizer.from_file(variant), texts)

    from transformers import PreTrainedTokenizerFast
    with open(args.config, encoding="utf-8") as f:
        cfg = json.load(f)
    fast = PreTrainedTokenizerFast(tokenizer_file=args.tokenizer, bos_token="<bos>", eos_token="<eos>")
    fast.chat_template = cfg["chat_template"]
    chats = []
    for conv in CONVERSATIONS:
        text = fast.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
        ids = tok.encode(text, add_special_tokens=False).ids
        chats.append({"messages": conv, "text": text, "ids": ids})
    golden["gemma3_chat"] = chats
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=True)
    n = sum(len(e["ids"]) for e in golden["gemma3"])
    print(f"{len(texts)} texts, {n} ids; tokenizers {tokenizers.__version__}")
    for c in chats:
        print(repr(c["text"]))


if __name__ == "__main__":
    main()
