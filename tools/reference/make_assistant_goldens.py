#!/usr/bin/env python3
"""Builds a tiny Gemma 4 MTP assistant for each target checkpoint made by make_goldens.py (with
the plain tied head or the centroid-masked head), distils it briefly towards its
target's greedy choices so that drafts are often accepted, and records what transformers'
modules compute for it:

  - single draft steps: the assistant's logits and next state for given (token, state, position);
  - the speculative round this project implements (GEMMA4.md), driven here in Python over
    transformers' target and assistant modules: per round the seed, the drafts, how many were
    accepted and the bonus token, for K = 2 and K = 4;
  - whether transformers' own generate(assistant_model=...) gives the same tokens.

  python3 make_assistant_goldens.py --models testdata/models     # writes <model>/assistant_<kind>
  python3 make_assistant_goldens.py --models testdata/models --only moe_keqv --kinds kv2 --out DIR
The centroid-masked head goes with e2b_mini and ple_shared, the plain tied head with the others.
moe_keqv (a K=V target: one KV head on its full layers) also gets `kv2`: a plain-head assistant
whose saved config keeps two KV heads everywhere (num_key_value_heads, per_layer_config,
num_global_key_value_heads, attention_k_eq_v), as assistants of K=V targets do. Its query-only
layers read the donor's KV heads whatever the config says, so its reference numbers are
computed with the config that states the donor's heads; transformers is then also run with the
saved config (each attention implementation, and generate(assistant_model=...)) and what it gave
is recorded beside them ("declared_config").
All reference numbers are float32 computations from the bf16-rounded weights, on the CPU.
"""
import argparse
import json
import os
import random
import shutil
import sys
import time

import torch
import torch.nn.functional as Fn
from safetensors.torch import save_file

import transformers
from transformers import (AutoConfig, Gemma4AssistantConfig, Gemma4AssistantForCausalLM,
                          Gemma4ForCausalLM, Gemma4ForConditionalGeneration, Gemma4TextConfig)

S, F = "sliding_attention", "full_attention"
EOS = [1, 106]


def load_target(path):
    cfg = AutoConfig.from_pretrained(path)
    cls = Gemma4ForConditionalGeneration if cfg.model_type == "gemma4" else Gemma4ForCausalLM
    model = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    if cls is Gemma4ForConditionalGeneration:
        text_model, head = model.model.language_model, model.lm_head
    else:
        text_model, head = model.model, model.lm_head
    return model, text_model, head, cfg.get_text_config()


def donor_layers(tc):
    first_shared = tc.num_hidden_layers - (tc.num_kv_shared_layers or 0)
    out = {}
    for t in (S, F):
        out[t] = max(i for i in range(first_shared) if tc.layer_types[i] == t)
    return out


def target_pass(text_model, head, tc, ids):
    """Final-normed hidden states, softcapped logits and full-length donor K/V for a sequence."""
    with torch.no_grad():
        out = text_model(input_ids=torch.tensor([ids]), use_cache=False, return_shared_kv_states=True)
        h = out.last_hidden_state[0]
        logits = head(h)
        if tc.final_logit_softcapping is not None:
            logits = torch.tanh(logits / tc.final_logit_softcapping) * tc.final_logit_softcapping
    return h, logits, out.shared_kv_states


def make_assistant(tc, centroid, seed):
    d = donor_layers(tc)
    sl, fl = tc.per_layer_config[d[S]], tc.per_layer_config[d[F]]
    text = Gemma4TextConfig(
        vocab_size=tc.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=sl.num_key_value_heads, head_dim=sl.head_dim,
        layer_types=[S, F], sliding_window=tc.sliding_window, final_logit_softcapping=None,
        hidden_size_per_layer_input=0, vocab_size_per_layer_input=0, num_kv_shared_layers=2,
        per_layer_config={1: {"head_dim": fl.head_dim, "num_key_value_heads": fl.num_key_value_heads}})
    cfg = Gemma4AssistantConfig(text_config=text, backbone_hidden_size=tc.hidden_size,
                                use_ordered_embeddings=centroid, num_centroids=16 if tc.vocab_size == 256 else 32,
                                centroid_intermediate_top_k=4)
    cfg.text_config._attn_implementation = "eager"
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    a = Gemma4AssistantForCausalLM(cfg).float().train()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in a.named_parameters():
            if name.startswith("lm_head"):
                continue
            if p.dim() == 1:
                p.copy_(torch.empty_like(p).uniform_(0.8, 1.2, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
        if centroid:
            a.masked_embedding.token_ordering.copy_(torch.randperm(tc.vocab_size, generator=g))
    a.tie_weights()
    return a


def draft_step(assistant, text_model, kv, p, token, state):
    """One draft step at position p over the donor K/V of positions 0..p-1."""
    emb = text_model.embed_tokens(torch.tensor([[token]]))[0, 0]
    x = torch.cat([emb, state])[None, None, :]
    shared = {t: (k[:, :, :p], v[:, :, :p]) for t, (k, v) in kv.items()}
    out = assistant(inputs_embeds=x, position_ids=torch.tensor([[p]]), shared_kv_states=shared,
                    attention_mask=torch.ones(1, p + 1, dtype=torch.long))
    return out.logits[0, 0], out.last_hidden_state[0, 0]


def greedy_sequence(text_model, head, tc, prompt, n):
    seq = list(prompt)
    for _ in range(n):
        _, logits, _ = target_pass(text_model, head, tc, seq)
        seq.append(int(torch.argmax(logits[-1])))
    return seq


def distil(assistant, text_model, head, tc, rng, steps, prompts):
    """Distils the assistant's draft steps (unrolled over 4 drafts, teacher-forced) towards the
    target's greedy choices on the greedy continuations of `prompts`: the sequences the recorded
    traces visit, so that the traces see drafts accepted. (The goldens test this runtime against
    the reference, not how well a tiny assistant generalises.)"""
    data = []
    for prompt in prompts:
        seq = greedy_sequence(text_model, head, tc, prompt, 24)
        h, _, kv = target_pass(text_model, head, tc, seq)
        data.append((seq, len(prompt), h, kv))
    print(f"  data ready ({len(data)} sequences)", flush=True)
    params = [p for n, p in assistant.named_parameters() if not n.startswith("lm_head")]
    opt = torch.optim.Adam(params, lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    masked = assistant.masked_embedding
    cluster_of = None
    if masked is not None:
        per = tc.vocab_size // assistant.config.num_centroids
        cluster_of = torch.empty(tc.vocab_size, dtype=torch.long)
        cluster_of[masked.token_ordering.long()] = torch.arange(tc.vocab_size) // per
    total = 0.0
    for step in range(steps):
        opt.zero_grad()
        loss = 0.0
        for _ in range(6):
            seq, plen, h, kv = rng.choice(data)
            p = rng.randrange(plen, len(seq) - 4)
            state, token = h[p - 1], seq[p]
            for j in range(4):
                logits, state = draft_step(assistant, text_model, kv, p, token, state)
                label = seq[p + 1 + j]
                loss = loss + Fn.cross_entropy(logits[None], torch.tensor([label]))
                if masked is not None:
                    cl = masked.centroids(last_normed[0])
                    loss = loss + Fn.cross_entropy(cl[None], cluster_of[label][None])
                token = label
        loss.backward()
        opt.step()
        sched.step()
        total = float(loss.detach()) / 24
    return total


last_normed = [None]


def capture_normed(assistant):
    def hook(_m, _i, out):
        last_normed[0] = out[0, 0]
    assistant.model.norm.register_forward_hook(hook)


def round_bf16(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))


def declare_kv_heads(cj, kv):
    """The assistant config `cj` (a dict as saved) with its own KV head fields set to `kv`
    everywhere and the K=V form a K=V target's assistant keeps. Only the fields that name KV heads
    change: query-only layers have no K/V weights, so the checkpoint is the same."""
    cj = json.loads(json.dumps(cj))
    tc = cj["text_config"]
    tc["num_key_value_heads"] = kv
    tc["num_global_key_value_heads"] = kv
    tc["attention_k_eq_v"] = True
    for layer in (tc.get("per_layer_config") or {}).values():
        layer["num_key_value_heads"] = kv
    return cj


def save_assistant(a, out, declared_kv=None):
    os.makedirs(out, exist_ok=True)
    a.config.save_pretrained(out)
    path = os.path.join(out, "config.json")
    with open(path) as f:
        cj = json.load(f)
    cj.pop("transformers_version", None)
    if declared_kv is not None:
        cj = declare_kv_heads(cj, declared_kv)
    with open(path, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
    sd = {k: v.detach() for k, v in a.state_dict().items() if k != "lm_head.weight"}
    sd = {k: (v.to(torch.bfloat16) if v.is_floating_point() else v).contiguous() for k, v in sd.items()}
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    return sorted(sd)


def speculative(text_model, head, tc, assistant, prompt, k, max_new):
    """The round of GEMMA4.md, greedy, by full recompute of the target."""
    seq = list(prompt)
    h, logits, kv = target_pass(text_model, head, tc, seq)
    t0 = int(torch.argmax(logits[-1]))
    out = [t0]
    state = h[-1]
    rounds = []
    if t0 in EOS or max_new <= 1:
        return out, rounds
    while True:
        p = len(seq)
        remaining = max_new - len(out)
        nd = min(k, remaining - 1)
        drafts, s, tok = [], state, t0
        with torch.no_grad():
            for _ in range(nd):
                lg, s = draft_step(assistant, text_model, kv, p, tok, s)
                tok = int(torch.argmax(lg))
                drafts.append(tok)
        cand = seq + [t0] + drafts
        h, logits, kv = target_pass(text_model, head, tc, cand)
        g = [int(torch.argmax(logits[p + i])) for i in range(nd + 1)]
        m = 0
        while m < nd and drafts[m] == g[m]:
            m += 1
        emitted = drafts[:m] + [g[m]]
        stop = False
        for i, t in enumerate(emitted):
            if t in EOS:
                emitted = emitted[: i + 1]
                stop = True
                break
        rounds.append({"position": p, "seed": t0, "drafts": drafts, "accepted": m, "bonus": g[m]})
        seq = seq + [t0] + drafts[:m]
        out += emitted
        if stop or len(out) >= max_new:
            break
        t0 = g[m]
        state = h[p + m]
        h, logits, kv = target_pass(text_model, head, tc, seq)  # K/V of the verified positions only
    return out, rounds


def plain_greedy(text_model, head, tc, prompt, max_new):
    seq, out = list(prompt), []
    for _ in range(max_new):
        _, logits, _ = target_pass(text_model, head, tc, seq)
        t = int(torch.argmax(logits[-1]))
        out.append(t)
        seq.append(t)
        if t in EOS:
            break
    return out


def assistant_kinds(name):
    """(kind, centroid head, KV heads the saved config declares or None) for a target."""
    kinds = [("centroid", True, None)] if name in ("e2b_mini", "ple_shared") else [("plain", False, None)]
    if name == "moe_keqv":
        kinds.append(("kv2", False, 2))
    return kinds


def kind_seed(base, idx, kind, centroid):
    # The seeds the committed plain and centroid assistants were made with; kv2 its own.
    return base * 100 + idx * 2 + (50 if kind == "kv2" else int(centroid))


def draft_steps_of(assistant, text_model, kv, seq, h, positions):
    with torch.no_grad():
        return [draft_step(assistant, text_model, kv, p, seq[p], h[p - 1])[0] for p in positions]


def declared_config_runs(out, run_dir, target, a, text_model, head, tc, seq, positions, traces):
    """transformers with the saved config (which declares other KV heads than the donors'):
    per attention implementation, whether it runs and how far its draft logits are from the
    reference's, and what generate(assistant_model=...) gives with it."""
    h, _, kv = target_pass(text_model, head, tc, seq)
    want = draft_steps_of(a, text_model, kv, seq, h, positions)
    report = {"config": json.load(open(os.path.join(out, "config.json")))["text_config"]}
    for impl in ("eager", "sdpa"):
        entry = {}
        try:
            m = Gemma4AssistantForCausalLM.from_pretrained(out, dtype=torch.float32, attn_implementation=impl).eval()
            got = draft_steps_of(m, text_model, kv, seq, h, positions)
            entry["max_abs_diff"] = max(float((g - w).abs().max()) for g, w in zip(got, want))
            entry["argmax_equal"] = all(int(torch.argmax(g)) == int(torch.argmax(w)) for g, w in zip(got, want))
            gens = []
            for t in traces:
                m.generation_config.num_assistant_tokens = 2
                m.generation_config.num_assistant_tokens_schedule = "constant"
                with torch.no_grad():
                    g = target.generate(torch.tensor([t["prompt_ids"]]), assistant_model=m, do_sample=False,
                                        max_new_tokens=t["max_new_tokens"], eos_token_id=EOS, pad_token_id=0)
                gens.append(g[0, len(t["prompt_ids"]):].tolist())
            entry["assisted_tokens"] = gens
            entry["assisted_equal_plain"] = [g == t["plain_tokens"] for g, t in zip(gens, traces)]
        except Exception as e:  # record why, do not hide it
            entry["error"] = f"{type(e).__name__}: {e}"[:400]
        report[impl] = entry
        print("  declared config,", impl, json.dumps({k: v for k, v in entry.items() if k != "assisted_tokens"}),
              flush=True)
    # The run config's draft logits reread from disk, as a check of the comparison itself.
    m = Gemma4AssistantForCausalLM.from_pretrained(run_dir, dtype=torch.float32, attn_implementation="eager").eval()
    got = draft_steps_of(m, text_model, kv, seq, h, positions)
    report["run_config_max_abs_diff"] = max(float((g - w).abs().max()) for g, w in zip(got, want))
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", default=None, help="write OUT/<target>/assistant_<kind> (default: beside the target)")
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--kinds", nargs="*", default=None, help="plain, centroid, kv2 (default: all)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads or max(1, os.cpu_count() or 1))
    names = sorted(n for n in os.listdir(args.models) if os.path.exists(os.path.join(args.models, n, "golden.json")))
    for idx, name in enumerate(names):
        if args.only and name not in args.only:
            continue
        tpath = os.path.join(args.models, name)
        target, text_model, head, tc = load_target(tpath)
        for kind, centroid, declared_kv in assistant_kinds(name):
            if args.kinds and kind not in args.kinds:
                continue
            seed = kind_seed(args.seed, idx, kind, centroid)
            rng = random.Random(seed)
            a = make_assistant(tc, centroid, seed)
            capture_normed(a)
            step_prompt = [2] + [rng.randrange(3, tc.vocab_size) for _ in range(17)]
            trace_prompts = [[2] + [rng.randrange(3, tc.vocab_size) for _ in range(rng.randint(2, 16))] for _ in range(5)]
            t_start = time.time()
            loss = distil(a, text_model, head, tc, rng, args.steps, trace_prompts + [step_prompt])
            print(name, kind, f"distilled in {time.time() - t_start:.1f}s", flush=True)
            round_bf16(a)
            a.eval()
            out = os.path.join(args.out, name, "assistant_" + kind) if args.out else os.path.join(tpath, "assistant_" + kind)
            shutil.rmtree(out, ignore_errors=True)
            # The config the reference numbers are computed with (the donors' KV heads), then the
            # one saved, when it declares others.
            run_dir = out if declared_kv is None else out + ".run_config"
            shutil.rmtree(run_dir, ignore_errors=True)
            keys = save_assistant(a, run_dir)
            if declared_kv is not None:
                save_assistant(a, out, declared_kv)
            reloaded = Gemma4AssistantForCausalLM.from_pretrained(run_dir, dtype=torch.float32,
                                                                  attn_implementation="eager").eval()
            # Single draft steps, and what the sliding layers see.
            steps = []
            seq = greedy_sequence(text_model, head, tc, step_prompt, 6)
            h, _, kv = target_pass(text_model, head, tc, seq)
            with torch.no_grad():
                for p in (3, 9, len(seq) - 1):
                    l1, s1 = draft_step(a, text_model, kv, p, seq[p], h[p - 1])
                    l1r, _ = draft_step(reloaded, text_model, kv, p, seq[p], h[p - 1])
                    assert float((l1 - l1r).abs().max()) < 1e-4, "assistant reloads differently"
                    t1 = int(torch.argmax(l1))
                    l2, s2 = draft_step(a, text_model, kv, p, t1, s1)
                    steps.append({"sequence": seq[: p + 1], "position": p, "token": seq[p],
                                  "logits": [float(v) for v in l1], "next_state": [float(v) for v in s1],
                                  "second_token": t1, "second_logits": [float(v) for v in l2]})
            traces, agree = [], []
            for prompt in trace_prompts:
                plain = plain_greedy(text_model, head, tc, prompt, 20)
                entry = {"prompt_ids": prompt, "plain_tokens": plain, "max_new_tokens": 20}
                for k in (2, 4):
                    toks, rounds = speculative(text_model, head, tc, a, prompt, k, 20)
                    assert toks == plain, f"{name}/{kind}: speculative K={k} differs from plain greedy"
                    entry[f"k{k}"] = {"tokens": toks, "rounds": rounds}
                try:
                    a.generation_config.num_assistant_tokens = 2
                    a.generation_config.num_assistant_tokens_schedule = "constant"
                    with torch.no_grad():
                        gen = target.generate(torch.tensor([prompt]), assistant_model=a, do_sample=False,
                                              max_new_tokens=20, eos_token_id=EOS, pad_token_id=0)
                    hf = gen[0, len(prompt):].tolist()
                    agree.append(hf == plain)
                    entry["transformers_assisted_tokens"] = hf
                except Exception as e:  # record why, do not hide it
                    agree.append(f"error: {type(e).__name__}: {e}"[:300])
                traces.append(entry)
            acc = [r["accepted"] for t in traces for r in t["k2"]["rounds"]]
            drafted = [len(r["drafts"]) for t in traces for r in t["k2"]["rounds"]]
            golden = {"generator": "tools/reference/make_assistant_goldens.py", "transformers": transformers.__version__,
                      "command": "python3 " + " ".join(sys.argv), "seed": seed, "target": name,
                      "head": "centroid" if centroid else "plain", "kind": kind, "distil_loss": loss, "tensors": keys,
                      "donor_layers": donor_layers(tc), "steps": steps, "traces": traces,
                      "transformers_generate_matches": agree,
                      "acceptance_k2": sum(acc) / max(1, sum(drafted))}
            with open(os.path.join(out, "golden.json"), "w") as f:
                json.dump(golden, f)
            print(name, kind, json.dumps({"loss": round(loss, 3), "acceptance_k2": round(golden["acceptance_k2"], 3),
                                          "hf_generate": agree}), flush=True)
            if declared_kv is not None:
                try:
                    golden["declared_config"] = declared_config_runs(
                        out, run_dir, target, a, text_model, head, tc, seq, [3, 9, len(seq) - 1], traces)
                except Exception as e:  # record why, do not hide it
                    golden["declared_config"] = {"error": f"{type(e).__name__}: {e}"[:400]}
                golden["torch"] = torch.__version__
                with open(os.path.join(out, "golden.json"), "w") as f:
                    json.dump(golden, f)
                shutil.rmtree(run_dir, ignore_errors=True)
    print("tensors:", keys)


if __name__ == "__main__":
    main()
