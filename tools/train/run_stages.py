#!/usr/bin/env python3
"""Runs the stages that need torch, transformers 5.17 and tokenizers 0.23 (a CUDA GPU for the
real run) in one process: tokenizer.py, train.py, distil.py, goldens.py, in that order.

  python3 tools/train/run_stages.py --work W [--smoke] [--stages train,distil] [--train-budget S] [--distil-budget S]

W must hold corpus.jsonl.gz (corpus.py). --smoke runs every stage at a tiny size in seconds,
to check that the whole chain works before the real run."""
import argparse
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
STAGES = ["tokenizer", "train", "distil", "goldens"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--train-budget", type=float, default=140.0)
    ap.add_argument("--distil-budget", type=float, default=80.0)
    args = ap.parse_args(argv)
    start = time.time()
    for stage in args.stages.split(","):
        if stage not in STAGES:
            raise SystemExit(f"--stages: unknown stage {stage!r} (known: {', '.join(STAGES)})")
        argv = ["--work", args.work]
        if stage == "tokenizer":
            argv += ["--vocab", "640"] if args.smoke else []
        else:
            argv += ["--smoke"] if args.smoke else []
        if stage == "train":
            argv += ["--budget", str(args.train_budget)]
        if stage == "distil":
            argv += ["--budget", str(args.distil_budget)]
        t = time.time()
        print(f"=== {stage} {' '.join(argv)}", flush=True)
        importlib.import_module(stage).main(argv)
        print(f"=== {stage} done in {time.time() - t:.0f}s ({time.time() - start:.0f}s in all)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
