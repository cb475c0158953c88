#!/usr/bin/env python3
"""Checks that the q8 artifacts `gemma4 export` wrote hold, byte for byte, the quantized tensors
the goldens were computed from (goldens.py quantizes the bf16 checkpoints in Python with the
project's scheme and records the sha256 of every stored tensor).

  python3 tools/train/check_export.py --hashes W/goldens/q8_hashes.json --artifact testdata/models/demo

Pure Python (no torch): reads the safetensors headers and hashes the tensors' bytes. Exits 1 and
names the first tensors that differ, are missing or are extra."""
import argparse
import hashlib
import json
import os
import struct
import sys


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            f.seek(base + a)
            out[name] = (info["dtype"], info["shape"], f.read(b - a))
    return out


def check(hashes, model_dir):
    """Problems (strings) for the quantized tensors of one model folder."""
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    problems = []
    for name, want in sorted(hashes.items()):
        if name not in tensors:
            problems.append(f"{model_dir}: tensor {name} is missing")
            continue
        dtype = tensors[name][0]
        expected = "F16" if name.endswith("_scale") else "I8"
        if dtype != expected:
            problems.append(f"{model_dir}: tensor {name} is {dtype}, expected {expected}")
        elif hashlib.sha256(tensors[name][2]).hexdigest() != want:
            problems.append(f"{model_dir}: tensor {name} differs from the quantization the goldens used")
    extra = sorted(n for n, t in tensors.items() if t[0] in ("I8", "U8") and n not in hashes)
    problems += [f"{model_dir}: tensor {n} is quantized here but not in the goldens' quantization" for n in extra]
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--hashes", required=True, help="q8_hashes.json: {model: {tensor: sha256}, assistant: {...}}")
    ap.add_argument("--artifact", required=True, help="the exported folder (the assistant in ARTIFACT/assistant)")
    args = ap.parse_args(argv)
    with open(args.hashes) as f:
        hashes = json.load(f)
    problems = check(hashes["model"], args.artifact)
    if "assistant" in hashes:
        problems += check(hashes["assistant"], os.path.join(args.artifact, "assistant"))
    for p in problems[:20]:
        print(p, file=sys.stderr)
    n = len(hashes["model"]) + len(hashes.get("assistant", {}))
    if problems:
        print(f"{len(problems)} of {n} quantized tensors differ", file=sys.stderr)
        return 1
    print(f"all {n} quantized tensors ({args.artifact}) equal the goldens' quantization")
    return 0


if __name__ == "__main__":
    sys.exit(main())
