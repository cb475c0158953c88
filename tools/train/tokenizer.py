#!/usr/bin/env python3
"""Trains the demo model's tokenizer with Hugging Face `tokenizers` (0.23) and records goldens.

A Gemma-style BPE: spaces become U+2581 (no prefix space), byte fallback (<0x00>..<0xFF>) for
characters outside the alphabet, and Gemma 4's special tokens at Gemma 4's ids: <pad> 0, <eos> 1,
<bos> 2, <unk> 3, <mask> 4, the tool markers 46-52, <|think|> 98, <|channel> 100, <channel|> 101,
<|turn> 105, <turn|> 106 (the other ids below 107 are <unusedN>). Ids 107-362 are the byte
tokens; the rest are the alphabet (printable ASCII and the newline) and the learnt merges. The
file has the layout of Gemma's tokenizer.json (Replace normalizer, Split pre-tokenizer, BOS
post-processor, Replace/ByteFallback/Fuse decoder).

Merges are learnt on words (each starting with its U+2581), so none crosses a word boundary and
the text of consecutive sentences encodes as the concatenation of their encodings (train.py
relies on this and checks it).

  python3 tools/train/tokenizer.py --work W [--vocab 6144]
reads W/corpus.jsonl.gz (corpus.py), writes W/tokenizer/tokenizer.json and
W/tokenizer/golden.json: ids and decoded text by `tokenizers` for testdata/tokenizer/corpus.json
(every corner of Unicode, whitespace, special tokens inside text), held-out sentences and chat
prompts, which the runtime's tokenizer must reproduce."""
import argparse
import gzip
import json
import os
import string
import sys

SPECIAL = {0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>", 4: "<mask>", 46: "<|tool>", 47: "<tool|>",
           48: "<|tool_call>", 49: "<tool_call|>", 50: "<|tool_response>", 51: "<tool_response|>", 52: '<|"|>',
           98: "<|think|>", 100: "<|channel>", 101: "<channel|>", 105: "<|turn>", 106: "<turn|>"}
FIRST_BYTE = 107
META = "\u2581"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def prefix_tokens():
    """Ids 0..362: specials and unused ids, then the 256 byte tokens."""
    out, unused = [], 0
    for i in range(FIRST_BYTE):
        if i in SPECIAL:
            out.append(SPECIAL[i])
        else:
            out.append(f"<unused{unused}>")
            unused += 1
    out += [f"<0x{b:02X}>" for b in range(256)]
    return out


def read_corpus(work, split=None):
    with gzip.open(os.path.join(work, "corpus.jsonl.gz"), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    return [d for d in docs if split is None or d["split"] == split]


def train(texts, vocab_size):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    prefix = prefix_tokens()
    alphabet = [c for c in string.printable if c not in " \t\r\x0b\x0c"] + [META]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", META)
    tok.pre_tokenizer = pre_tokenizers.Split(META, behavior="merged_with_next")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=prefix, initial_alphabet=alphabet,
                                  limit_alphabet=len(alphabet), min_frequency=2, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    for i, piece in enumerate(prefix):
        if vocab[i] != (piece, i):
            raise SystemExit(f"trainer put {vocab[i]} at id {i}, expected {piece}")
    merges = [m.split(" ", 1) if isinstance(m, str) else m for m in model["merges"]]
    return vocab, merges


def gemma_json(vocab, merges, vocab_size):
    """tokenizer.json in Gemma's layout; pads the vocabulary to exactly vocab_size ids."""
    pieces = dict(vocab)
    i = 0
    while len(pieces) < vocab_size:
        pieces.setdefault(f"<unused_tail{i}>", len(pieces))
        i += 1
    if len(pieces) != vocab_size or sorted(pieces.values()) != list(range(vocab_size)):
        raise SystemExit(f"vocabulary has {len(pieces)} ids, expected {vocab_size}")
    added = [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": i in SPECIAL} for i, p in enumerate(prefix_tokens()[:FIRST_BYTE])]
    bos = {"SpecialToken": {"id": "<bos>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": META},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                          "invert": False},
        "post_processor": {
            "type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<bos>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": META}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": pieces, "merges": merges},
    }


def golden_texts(work):
    with open(os.path.join(ROOT, "testdata", "tokenizer", "corpus.json"), encoding="utf-8") as f:
        texts = json.load(f)
    held_out = [s for d in read_corpus(work, "val")[:3] for s in d["sentences"][:40]]
    chats = ["<bos><|turn>user\nWhat is the state of the Union?<turn|>\n<|turn>model\n",
             "<bos><|turn>system\nYou are terse.<turn|>\n<|turn>user\n  Hello  there \n<turn|>\n<|turn>model\nHi.<turn|>\n",
             "<|channel>thought\n<channel|><|tool_call>call:f{}<tool_call|><|\"|>x<|\"|><|think|><unused3><0x41>"]
    return texts + held_out + chats


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--vocab", type=int, default=6144)
    args = ap.parse_args(argv)
    import tokenizers
    from tokenizers import Tokenizer
    texts = [" ".join(d["sentences"]) for d in read_corpus(args.work, "train")]
    vocab, merges = train(texts, args.vocab)
    out = os.path.join(args.work, "tokenizer")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(gemma_json(vocab, merges, args.vocab), f, ensure_ascii=False, indent=1)
        f.write("\n")
    tok = Tokenizer.from_file(path)
    cases = []
    for text in golden_texts(args.work):
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(out, "golden.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/train/tokenizer.py", "tokenizers": tokenizers.__version__, "cases": cases}, f,
                  ensure_ascii=True)
    sample = " ".join(read_corpus(args.work, "val")[0]["sentences"][:3])
    enc = tok.encode(sample, add_special_tokens=True)
    print(f"{path}: {tok.get_vocab_size()} ids, {len(merges)} merges; {len(cases)} golden cases", flush=True)
    print("sample:", enc.tokens[:40], flush=True)


if __name__ == "__main__":
    sys.exit(main())
