#!/usr/bin/env python3
"""Trains the demo target with transformers' Gemma 4 modules (Gemma4ForCausalLM is the model
definition, so the checkpoint loads in transformers as it is).

Next-token cross-entropy on samples of the corpus (data.py): 80% running text from a sentence
start, 20% chat conversations. AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), bf16
autocast over float32 weights, gradient clipping at 1, linear warm-up then cosine decay, all
paced by a wall-clock budget or a number of epochs, whichever ends first. The held-out addresses
give the validation loss; the weights with the best one are kept.

  python3 tools/train/train.py --work W [--budget 130] [--smoke]
reads W/corpus.jsonl.gz and W/tokenizer/tokenizer.json; writes W/target/ (config.json,
generation_config.json, tokenizer.json, model.safetensors in bf16) and W/reports/train.json."""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as Fn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import data  # noqa: E402
from tokenizer import read_corpus  # noqa: E402


def make_target(spec, attn):
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig
    cfg = Gemma4TextConfig(**spec)
    cfg._attn_implementation = attn
    model = Gemma4ForCausalLM(cfg)
    model.tie_weights()
    assert model.lm_head.weight is model.model.embed_tokens.weight, "LM head not tied"
    return model


def encoder(tokenizer_path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_path)
    return tok, (lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)])


def lm_loss(model, x):
    logits = model(input_ids=x, use_cache=False).logits
    labels = x[:, 1:].masked_fill(x[:, 1:] == data.PAD, -100)
    return Fn.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


@torch.no_grad()
def mean_loss(model, rows, device, batch=32):
    total, n = 0.0, 0
    for i in range(0, len(rows), batch):
        x = torch.from_numpy(rows[i:i + batch]).long().to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            total += float(lm_loss(model, x)) * len(x)
        n += len(x)
    return total / n


@torch.no_grad()
def greedy_text(model, tok, prompt, n, device, stop=(1, 106)):
    ids = [data.BOS] + tok.encode(prompt, add_special_tokens=False).ids
    start = len(ids)
    for _ in range(n):
        logits = model(input_ids=torch.tensor([ids], device=device), use_cache=False).logits[0, -1]
        ids.append(int(logits.argmax()))
        if ids[-1] in stop:
            break
    return tok.decode(ids[start:], skip_special_tokens=False)


def count_params(model):
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny shapes and a few steps: checks every stage runs")
    ap.add_argument("--budget", type=float, default=130.0, help="seconds of training")
    ap.add_argument("--max-epochs", type=float, default=16.0)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--chat-fraction", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args(argv)
    spec, _ = common.shapes(args.smoke)
    if args.smoke:
        args.budget, args.length, args.batch = min(args.budget, 8.0), 64, 8
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    tok_path = os.path.join(args.work, "tokenizer", "tokenizer.json")
    tok, encode = encoder(tok_path)
    if tok.get_vocab_size() != spec["vocab_size"]:
        raise SystemExit(f"{tok_path}: {tok.get_vocab_size()} ids, the model wants {spec['vocab_size']}")

    t0 = time.time()
    train_docs, val_docs = read_corpus(args.work, "train"), read_corpus(args.work, "val")
    plain = data.SentenceSamples(train_docs, encode, args.length)
    bad = data.check_concatenation(plain, encode)
    chat = data.ChatSamples(data.chat_texts(train_docs, rng, 4000 if args.smoke else 16000, args.length * 5),
                            encode, args.length)
    val_rng = np.random.default_rng(1)
    val_plain = data.SentenceSamples(val_docs, encode, args.length).sample(val_rng, 96)
    val_chat = data.ChatSamples(data.chat_texts(val_docs, val_rng, 32, args.length * 5), encode, args.length).rows
    print(f"data: {plain.tokens} training tokens in {len(plain)} sentences, {len(chat)} conversations; "
          f"{bad} of 3 addresses encode differently whole ({time.time() - t0:.1f}s)", flush=True)

    model = make_target(spec, "sdpa").to(device)
    n_params = count_params(model)
    print(f"target: {n_params} parameters", flush=True)
    opt = torch.optim.AdamW(common.param_groups(model, 0.1), lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                            fused=device.type == "cuda")
    token_budget = args.max_epochs * plain.tokens / (1.0 - args.chat_fraction)
    best = (float("inf"), None, 0)
    history = []
    step, seen, run_loss = 0, 0, torch.zeros((), device=device)
    next_eval, eval_every = 0.0, args.budget / 12
    start = time.time()
    model.train()
    while True:
        elapsed = time.time() - start
        progress = max(elapsed / args.budget, seen / token_budget)
        if progress >= next_eval / args.budget or progress >= 1.0:
            model.eval()
            vl, vc = mean_loss(model, val_plain, device), mean_loss(model, val_chat, device)
            model.train()
            history.append({"step": step, "seconds": round(elapsed, 1), "epochs": round(seen * (1 - args.chat_fraction) / plain.tokens, 2),
                            "train_loss": round(float(run_loss) / max(1, step - (history[-1]["step"] if history else 0)), 4),
                            "val_loss": round(vl, 4), "val_chat_loss": round(vc, 4)})
            run_loss.zero_()
            print("eval", json.dumps(history[-1]), flush=True)
            if vl < best[0]:
                best = (vl, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}, step)
            next_eval += eval_every
            if progress >= 1.0:
                break
        for g in opt.param_groups:
            g["lr"] = common.lr_at(progress, args.lr)
        rows = data.mixed_batch(plain, chat, rng, args.batch, args.chat_fraction)
        x = torch.from_numpy(rows).long().to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = lm_loss(model, x)
        common.optimizer_step(loss, model, opt)
        run_loss += loss.detach()
        step += 1
        seen += int((rows != data.PAD).sum())
        if step == 20:
            if device.type == "cuda":
                torch.cuda.synchronize()
            print(f"speed: {seen / (time.time() - start):.0f} tokens/s", flush=True)
    train_seconds = time.time() - start
    model.load_state_dict(best[1])
    model.eval()
    print(f"trained {step} steps, {seen} tokens in {train_seconds:.0f}s; best val loss {best[0]:.4f} at step {best[2]}",
          flush=True)

    out = os.path.join(args.work, "target")
    shutil.rmtree(out, ignore_errors=True)
    common.save_checkpoint(model, out)
    common.write_generation_config(out)
    shutil.copy(tok_path, os.path.join(out, "tokenizer.json"))
    # The files as transformers reads them back: same tensors, same loss.
    from transformers import Gemma4ForCausalLM
    loaded = common.reload(Gemma4ForCausalLM, out, device, "eager")
    reloaded_val = mean_loss(loaded, val_plain, device)
    samples = {p: greedy_text(loaded, tok, p, 40, device) for p in ("The people of this country", "In the coming year, we will")}
    for p, s in samples.items():
        print(f"  {p!r} -> {s!r}", flush=True)
    report = {"parameters": n_params, "steps": step, "tokens": seen, "seconds": round(train_seconds, 1),
              "batch": args.batch, "length": args.length, "peak_lr": args.lr, "chat_fraction": args.chat_fraction,
              "training_tokens_per_epoch": plain.tokens, "best_step": best[2], "best_val_loss": round(best[0], 4),
              "reloaded_val_loss_f32": round(reloaded_val, 4), "history": history, "samples": samples,
              "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "transformers": __import__("transformers").__version__}
    os.makedirs(os.path.join(args.work, "reports"), exist_ok=True)
    common.write_json(os.path.join(args.work, "reports", "train.json"), report)
    print(f"{out}: saved; val loss {best[0]:.4f} (bf16 autocast), {reloaded_val:.4f} (float32, reloaded)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
