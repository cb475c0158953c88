#!/usr/bin/env python3
"""Makes a GGUF for the llama.cpp peer with llama.cpp's own converter (convert_hf_to_gguf.py of the
release node-llama-cpp ships, which fetch.sh checks out), from a folder `gemma4 synth` or
`make_goldens.py` writes.

  python3 tools/reference/llama_cpp/to_gguf.py --model DIR --out FILE.gguf
      [--outtype bf16|f32|q8_0] [--src .peers/llama/llama.cpp] [--standin]

The converter wants `architectures` in config.json and a tokenizer.json; a synthetic folder has
neither, so it is converted from a staging folder beside OUT (links to the weights, config.json
with `architectures` added, and, when DIR has none, a tokenizer.json of placeholder tokens
`<tN>` with pad 0, eos 1, bos 2 and unk 3, which only ids ever reach). The converter writes
OUT.partial, renamed to OUT when it succeeds. --standin puts
standin/ first on Python's path, for a machine without transformers: its stand-in reads
config.json and tokenizer.json directly (the two things the converter asks transformers for) and
names the torch dtypes an older torch lacks.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SPECIAL = {0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>"}
# One merge whose parts and result are all in the vocabulary (a tokenizer's loader refuses any
# other): llama.cpp's gemma4 tokenizer requires the merges key to be present.
MERGE = {10: "a", 11: "b", 12: "ab"}


def placeholder_tokenizer(vocab_size):
    vocab = {SPECIAL.get(i, MERGE.get(i, f"<t{i}>")): i for i in range(vocab_size)}
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in SPECIAL.items()]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": True,
                      "ignore_merges": False, "vocab": vocab, "merges": [["a", "b"]]}}


def stage(model, staging):
    config = json.loads((model / "config.json").read_text())
    text = config.get("text_config", config)
    if "vocab_size" not in text:
        sys.exit(f"to_gguf.py: {model / 'config.json'}: no vocab_size")
    for f in model.iterdir():
        if f.name.endswith((".safetensors", ".safetensors.index.json")) or f.name in ("generation_config.json", "tokenizer.json"):
            os.symlink(f.resolve(), staging / f.name)
    config.setdefault("architectures", ["Gemma4ForConditionalGeneration" if "text_config" in config else "Gemma4ForCausalLM"])
    (staging / "config.json").write_text(json.dumps(config, indent=1))
    if not (model / "tokenizer.json").exists():
        (staging / "tokenizer.json").write_text(json.dumps(placeholder_tokenizer(text["vocab_size"])))
        (staging / "tokenizer_config.json").write_text(json.dumps(
            {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}))


def main():
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--outtype", default="bf16", choices=["bf16", "f32", "q8_0"])
    p.add_argument("--src", type=Path, default=here.parents[2] / ".peers" / "llama" / "llama.cpp")
    p.add_argument("--standin", action="store_true")
    a = p.parse_args()
    converter = a.src / "convert_hf_to_gguf.py"
    if not converter.is_file():
        sys.exit(f"to_gguf.py: {converter}: missing (run tools/reference/llama_cpp/fetch.sh)")
    if not (a.model / "config.json").is_file():
        sys.exit(f"to_gguf.py: {a.model / 'config.json'}: missing")
    if a.out.exists():
        sys.exit(f"to_gguf.py: {a.out}: already exists")
    # The staging folder has the model folder's name: the converter names the model after it.
    holder = a.out.parent / f"{a.out.name}.staging-{os.getpid()}"
    staging = holder / a.model.resolve().name
    staging.mkdir(parents=True)
    partial = a.out.parent / f"{a.out.name}.partial"
    try:
        stage(a.model, staging)
        path = [str(a.src / "gguf-py")] + ([str(here / "standin")] if a.standin else [])
        path += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        done = subprocess.run([sys.executable, str(converter), str(staging), "--outtype", a.outtype,
                               "--outfile", str(partial)], env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)))
        if done.returncode != 0:
            sys.exit(f"to_gguf.py: the converter failed ({done.returncode}) on {a.model}")
        os.rename(partial, a.out)
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(holder)
    print(json.dumps({"gguf": str(a.out), "model": str(a.model), "outtype": a.outtype,
                      "bytes": a.out.stat().st_size}))


if __name__ == "__main__":
    main()
