#!/usr/bin/env python3
"""Builds tiny random-weight Gemma 4 checkpoints and records what transformers computes for them.

Runs where torch and transformers (5.17) are installed. For every spec below it writes
OUT/<name>/ with config.json, generation_config.json, bf16 safetensors (single file or sharded
with model.safetensors.index.json) and golden.json:
  - greedy continuations of several prompts (full recompute each step, checked against
    model.generate with its KV cache), with the top-1/top-2 margin of every chosen token;
  - final (softcapped) logits at several positions of each prompt + continuation.
All reference numbers are computed in float32 from the bf16-rounded weights, on the CPU.

  python3 make_goldens.py --out testdata/models            # the committed set
  python3 make_goldens.py --out /tmp/other --seed 7         # another set made the same way
"""
import argparse
import json
import os
import random
import shutil
import sys

import torch
from safetensors.torch import save_file

import transformers
from transformers import (AutoConfig, Gemma4Config, Gemma4ForCausalLM,
                          Gemma4ForConditionalGeneration, Gemma4TextConfig)

S, F = "sliding_attention", "full_attention"

# Each spec exercises a set of architecture features; together they cover all of them.
SPECS = {
    # Plain text layout, GQA, windows shorter than the prompts, full layers with a wider head
    # given as global_head_dim, one shard.
    "dense": dict(
        layout="text", shards=1, config_form="global",
        text=dict(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=6,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  layer_types=[S, S, F, S, S, F], sliding_window=5,
                  final_logit_softcapping=30.0, hidden_size_per_layer_input=0),
        extra=dict(global_head_dim=32)),
    # Multimodal container layout with vision/audio tensors to skip, sharded, PLE, KV sharing,
    # double-wide MLP on the shared layers, per_layer_config as transformers writes it.
    "ple_shared": dict(
        layout="container", shards=3, config_form="native",
        text=dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=7,
                  num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                  layer_types=[S, S, F, S, S, S, F], sliding_window=6,
                  final_logit_softcapping=30.0, hidden_size_per_layer_input=16,
                  vocab_size_per_layer_input=256, num_kv_shared_layers=3,
                  use_double_wide_mlp=True),
        extra=dict(global_head_dim=32)),
    # K equals V on full layers with fewer KV heads there, MoE block next to the dense MLP,
    # no final softcap, global_head_dim / num_global_key_value_heads form.
    "moe_keqv": dict(
        layout="text", shards=2, config_form="global",
        text=dict(vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=6,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  layer_types=[S, S, F, S, S, F], sliding_window=4,
                  final_logit_softcapping=None, hidden_size_per_layer_input=0,
                  attention_k_eq_v=True, enable_moe_block=True, num_experts=6, top_k_experts=2,
                  moe_intermediate_size=32),
        extra=dict(global_head_dim=32, num_global_key_value_heads=1)),
    # The bundled model: E2B's features at a small size (PLE, KV sharing, double-wide MLP,
    # single KV head, (4 sliding, 1 full) pattern), container layout, one file.
    "e2b_mini": dict(
        layout="container", shards=1, config_form="native",
        text=dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=10,
                  num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                  layer_types=[S, S, S, S, F] * 2, sliding_window=8,
                  final_logit_softcapping=30.0, hidden_size_per_layer_input=16,
                  vocab_size_per_layer_input=512, num_kv_shared_layers=4,
                  use_double_wide_mlp=True),
        extra=dict(global_head_dim=64)),
}

EOS = [1, 106]
PROMPT_LENGTHS = [1, 4, 11, 19]
MAX_NEW = 24
MIN_MARGIN = 2e-3


def randomize(model, gen, embed_std, final_norm):
    """Random weights, then rounded to bf16. The embedding is kept small against the layers'
    contributions (else a random model only repeats its input), and the final norm's weights
    large, so that the tied head still spreads the logits and argmax margins are clear."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("lm_head"):
                continue  # tied to the embedding
            if name in ("model.norm.weight",):
                p.copy_(torch.empty_like(p).uniform_(final_norm[0], final_norm[1], generator=gen))
            elif p.dim() == 1 or name.endswith("per_expert_scale"):
                # norm weights (multiplied directly), router scales
                p.copy_(torch.empty_like(p).uniform_(0.6, 1.4, generator=gen))
            elif "embed_tokens_per_layer" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * embed_std)
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) / fan_in ** 0.5)
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(torch.empty_like(b).uniform_(0.6, 1.2, generator=gen))
                b.copy_(b.to(torch.bfloat16).to(torch.float32))


def persistent_state(model):
    sd = model.state_dict()
    sd.pop("lm_head.weight", None)
    return {k: v.detach().to(torch.bfloat16).contiguous() for k, v in sd.items()}


def write_checkpoint(out, spec, text_cfg, state):
    os.makedirs(out, exist_ok=True)
    if spec["layout"] == "container":
        state = {"model.language_model." + k[len("model."):]: v for k, v in state.items()}
        # Tensors of the other towers, which the runtime must skip unread.
        g = torch.Generator().manual_seed(5)
        state["model.vision_tower.encoder.layers.0.mlp.fc.weight"] = torch.randn(8, 8, generator=g).to(torch.bfloat16)
        state["model.embed_vision.embedding_projection.weight"] = torch.randn(8, 4, generator=g)
        state["model.audio_tower.conv.weight"] = torch.randn(4, 4, generator=g).to(torch.float16)
        cfg = Gemma4Config(text_config=text_cfg.to_dict(), vision_config=None, audio_config=None)
    else:
        cfg = text_cfg
    cfg.save_pretrained(out)
    path = os.path.join(out, "config.json")
    with open(path) as f:
        cj = json.load(f)
    if spec["config_form"] == "global":
        tc = cj.get("text_config", cj)
        tc.pop("per_layer_config", None)
        tc.update(spec["extra"])
    cj.pop("transformers_version", None)
    with open(path, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 2, "eos_token_id": EOS, "pad_token_id": 0}, f, indent=2)

    names = sorted(state)
    n = spec["shards"]
    if n == 1:
        save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
        return
    weight_map = {}
    for i in range(n):
        fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        part = {k: state[k] for k in names[i::n]}
        save_file(part, os.path.join(out, fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in part})
    total = sum(v.numel() * v.element_size() for v in state.values())
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)


def last_logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()


def greedy(model, prompt):
    """Greedy continuation by full recompute at every step (no cache)."""
    seq, out, margins = list(prompt), [], []
    for _ in range(MAX_NEW):
        lg = last_logits(model, seq)
        top = torch.topk(lg, 2)
        tok = int(top.indices[0])
        margins.append(float(top.values[0] - top.values[1]))
        out.append(tok)
        seq.append(tok)
        if tok in EOS:
            break
    return out, margins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--embed-std", type=float, default=0.05)
    ap.add_argument("--final-norm", type=float, nargs=2, default=[3.0, 6.0])
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    report = {}
    for idx, (name, spec) in enumerate(SPECS.items()):
        if args.only and name not in args.only:
            continue
        seed = args.seed * 1000 + idx
        gen = torch.Generator().manual_seed(seed)
        kwargs = dict(spec["text"])
        kwargs.update(spec["extra"])
        text_cfg = Gemma4TextConfig(**kwargs)
        text_cfg._attn_implementation = "eager"
        model = Gemma4ForCausalLM(text_cfg).eval().float()
        randomize(model, gen, args.embed_std, args.final_norm)
        model.tie_weights()
        assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight), "head not tied"
        out = os.path.join(args.out, name)
        shutil.rmtree(out, ignore_errors=True)
        write_checkpoint(out, spec, text_cfg, persistent_state(model))

        # The files on disk must be what transformers reads back.
        auto_cls = Gemma4ForConditionalGeneration if spec["layout"] == "container" else Gemma4ForCausalLM
        loaded = auto_cls.from_pretrained(out, dtype=torch.float32, attn_implementation="eager").eval()
        reread = AutoConfig.from_pretrained(out)
        reread_text = reread.get_text_config()
        probe = list(range(2, 2 + 9))
        diff = float((last_logits(loaded, probe) - last_logits(model, probe)).abs().max())
        assert diff < 1e-4, f"{name}: checkpoint reloads differently ({diff})"

        rng = random.Random(seed)
        prompts, min_margin = [], None
        for plen in PROMPT_LENGTHS:
            for attempt in range(50):
                prompt = [2] + [rng.randrange(3, text_cfg.vocab_size) for _ in range(plen - 1)]
                toks, margins = greedy(model, prompt)
                if min(margins) >= MIN_MARGIN:
                    break
            with torch.no_grad():
                gen_out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=MAX_NEW,
                                         eos_token_id=EOS, pad_token_id=0)[0, len(prompt):].tolist()
            full = prompt + toks
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([full]), use_cache=False).logits[0].float()
            positions = sorted({0, len(prompt) // 2, len(prompt) - 1, len(full) - 2, len(full) - 1,
                                min(len(full) - 1, len(prompt) + 5)})
            positions = [p for p in positions if p >= 0]
            prompts.append(dict(
                prompt_ids=prompt, greedy_tokens=toks,
                stop_reason="eos" if toks and toks[-1] in EOS else "length",
                margins=[round(m, 6) for m in margins],
                generate_with_cache_matches=gen_out == toks,
                logits=[dict(position=p, values=[float(v) for v in logits[p].tolist()]) for p in positions]))
            mm = min(margins)
            min_margin = mm if min_margin is None else min(min_margin, mm)
        golden = dict(
            generator="tools/reference/make_goldens.py", transformers=transformers.__version__,
            torch=torch.__version__, seed=seed, spec=name, embed_std=args.embed_std, final_norm=args.final_norm, max_new_tokens=MAX_NEW, eos_token_ids=EOS,
            per_layer_config={str(k): v for k, v in
                              {i: {"head_dim": reread_text.per_layer_config[i].head_dim,
                                   "num_key_value_heads": reread_text.per_layer_config[i].num_key_value_heads}
                               for i in range(reread_text.num_hidden_layers)}.items()},
            prompts=prompts)
        with open(os.path.join(out, "golden.json"), "w") as f:
            json.dump(golden, f)
        report[name] = dict(min_margin=min_margin, reload_diff=diff,
                            generate_matches=[p["generate_with_cache_matches"] for p in prompts],
                            tokens=[len(p["greedy_tokens"]) for p in prompts],
                            distinct=[len(set(p["greedy_tokens"])) for p in prompts])
        print(name, json.dumps(report[name]), flush=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
