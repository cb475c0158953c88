#!/usr/bin/env python3
"""Distils the demo's MTP assistant (transformers' Gemma4AssistantForCausalLM, centroid-masked
head) on the trained target's outputs.

The assistant drafts as GEMMA4.md describes: from (token t at position p, the target's
final-normed hidden state at p - 1) over the target's donor K/V of positions 0..p-1, then again
from its own next state. Here every position of a sequence drafts at once: the query at p sees
the donor K/V of positions below p (sliding layers: the last window + 1 of them), which is what
the one-position reference forward sees; a check against that forward at several positions runs
first and stops the script if they differ. Three draft steps are unrolled, teacher-forced with
the sequence's tokens; step j at p is trained towards the target's distribution at p + j (KL
divergence, plus cross-entropy on the target's greedy token, which is what greedy drafting must
hit). The sequences are mostly the target's own greedy continuations of corpus and chat prompts
(what drafting meets in use), the rest corpus text.

The centroid head: after the first third of the budget (full-vocabulary logits only), the
vocabulary is split into equal clusters by balanced k-means over the assistant's own embedding
rows (token_ordering), the centroids start at the clusters' means, and from then on they learn
to pick the cluster of the target's greedy token (cross-entropy). Drafting scores only the
top-k clusters' tokens, so the acceptance printed is that of the masked head.

  python3 tools/train/distil.py --work W [--budget 80] [--smoke]
reads W/target/ and the corpus; writes W/assistant/ (bf16) and W/reports/distil.json."""
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
from common import F, S  # noqa: E402
from tokenizer import read_corpus  # noqa: E402
from train import count_params, encoder  # noqa: E402


def load_target(path, device, attn="sdpa"):
    from transformers import Gemma4ForCausalLM
    m = Gemma4ForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation=attn).to(device).eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def make_assistant(tc, aspec, attn, seed):
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig
    d = {t: max(i for i in range(tc.num_hidden_layers - tc.num_kv_shared_layers) if tc.layer_types[i] == t) for t in (S, F)}
    sl, fl = tc.per_layer_config[d[S]], tc.per_layer_config[d[F]]
    types = aspec["layer_types"]
    text = Gemma4TextConfig(
        vocab_size=tc.vocab_size, hidden_size=aspec["hidden_size"], intermediate_size=aspec["intermediate_size"],
        num_hidden_layers=len(types), num_attention_heads=aspec["num_attention_heads"],
        num_key_value_heads=sl.num_key_value_heads, head_dim=sl.head_dim, layer_types=types,
        sliding_window=tc.sliding_window, final_logit_softcapping=None, hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=0, num_kv_shared_layers=len(types), use_double_wide_mlp=False,
        per_layer_config={i: {"head_dim": fl.head_dim, "num_key_value_heads": fl.num_key_value_heads}
                          for i, t in enumerate(types) if t == F})
    cfg = Gemma4AssistantConfig(text_config=text, backbone_hidden_size=tc.hidden_size, use_ordered_embeddings=True,
                                num_centroids=aspec["num_centroids"],
                                centroid_intermediate_top_k=aspec["centroid_intermediate_top_k"])
    cfg.text_config._attn_implementation = attn
    cfg._attn_implementation = attn
    torch.manual_seed(seed)
    a = Gemma4AssistantForCausalLM(cfg)
    a.tie_weights()
    with torch.no_grad():
        a.masked_embedding.token_ordering.copy_(torch.randperm(tc.vocab_size, generator=torch.Generator().manual_seed(seed)))
    return a


def target_pass(target, x):
    """Final-normed hidden states, softcapped logits and full-length donor K/V of a batch."""
    out = target.model(input_ids=x, use_cache=False, return_shared_kv_states=True)
    h = out.last_hidden_state
    logits = target.lm_head(h)
    cap = target.config.final_logit_softcapping
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return h, logits, {t: (k, v) for t, (k, v) in out.shared_kv_states.items()}


def draft_masks(T, window, device, extra):
    """Boolean masks (True: attend) of every position's draft query over the donor K/V: full
    layers see positions below p, sliding layers the last window + extra of those. Position 0
    (no K/V before it; never trained) sees position 0, so that no row is empty."""
    q = torch.arange(T, device=device)[:, None]
    k = torch.arange(T, device=device)[None, :]
    full = k < q
    full[0, 0] = True
    sliding = full & (k >= q - window - extra)
    sliding[0, 0] = True
    return {F: full[None, None], S: sliding[None, None]}


def draft_all(a, target, x, h, kv, masks, steps):
    """Normed outputs y_j (B, T, h) of `steps` unrolled draft steps at every position p: step 0
    from (x[p], h[p-1]), step j from (x[p+j], the state step j-1 made); all at position p."""
    B, T = x.shape
    pos = torch.arange(T, device=x.device)[None].expand(B, T)
    emb = target.model.embed_tokens(x)
    state = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
    ys = []
    for j in range(steps):
        z = a.pre_projection(torch.cat([torch.roll(emb, -j, dims=1), state], dim=-1))
        y = a.model(inputs_embeds=z, position_ids=pos, attention_mask=masks, shared_kv_states=kv, use_cache=False).last_hidden_state
        state = a.post_projection(y)
        ys.append(y)
    return ys


@torch.no_grad()
def check_against_reference(a, target, x, window, device):
    """Which sliding-window reach (window + 1 or window entries) makes the batched draft equal
    the reference's one-position forward (float32); raises if neither does."""
    h, _, kv = target_pass(target, x[:1])
    T = x.shape[1]
    positions = sorted({1, 2, 5, min(T - 1, window + 2), min(T - 1, window + 3), T - 1})
    emb = target.model.embed_tokens(x[:1])
    refs = []
    for p in positions:
        shared = {t: (k[:, :, :p], v[:, :, :p]) for t, (k, v) in kv.items()}
        ref = a(inputs_embeds=torch.cat([emb[0, p], h[0, p - 1]])[None, None], position_ids=torch.tensor([[p]], device=device),
                shared_kv_states=shared, attention_mask=torch.ones(1, p + 1, dtype=torch.long, device=device))
        refs.append(ref.last_hidden_state[0, 0])
    worst = {}
    for extra in (1, 0):
        y = draft_all(a, target, x[:1], h, kv, draft_masks(T, window, device, extra), 1)[0]
        mine = a.post_projection(y)[0]
        worst[extra] = max(float((r - mine[p]).abs().max()) for r, p in zip(refs, positions))
    extra = min(worst, key=worst.get)
    if worst[extra] > 1e-4:
        raise SystemExit(f"batched drafts differ from the reference forward at positions {positions}: {worst}")
    print(f"batched drafts equal the reference forward at positions {positions} with sliding layers over the last "
          f"window + {extra} entries (max diff by reach: {worst})", flush=True)
    return extra


@torch.no_grad()
def greedy_batch(target, prompts, new_tokens):
    x = prompts
    for _ in range(new_tokens):
        logits = target(input_ids=x, use_cache=False, logits_to_keep=1).logits[:, -1]
        x = torch.cat([x, logits.argmax(-1, keepdim=True)], dim=1)
    return x


def chat_prompts(docs, encode, rng, n, user_tokens):
    sents = [s for d in docs for s in d["sentences"]]
    head = encode(["<|turn>user\n"])[0]
    tail = encode(["<turn|>\n<|turn>model\n"])[0]
    picked = [sents[i] for i in rng.integers(0, len(sents), n * 3)]
    rows = [[data.BOS] + head + ids[:user_tokens] + tail for ids in encode(picked) if len(ids) >= user_tokens]
    return np.asarray(rows[:n], dtype=np.int64)


def balanced_clusters(emb, C, iters, seed):
    """Balanced k-means over the rows of `emb` (cosine): C clusters of exactly V / C tokens.
    Each round assigns tokens, most confident first, to their best cluster that still has room."""
    V = emb.shape[0]
    per = V // C
    X = Fn.normalize(emb.float(), dim=-1)
    g = torch.Generator(device="cpu").manual_seed(seed)
    cent = X[torch.randperm(V, generator=g)[:C].to(X.device)]
    for _ in range(iters):
        sim = (X @ cent.T).cpu().numpy()
        order = np.argsort(-sim.max(axis=1), kind="stable")
        room = np.full(C, per)
        assign = np.empty(V, dtype=np.int64)
        for t in order:
            s = np.where(room > 0, sim[t], -np.inf)
            c = int(np.argmax(s))
            assign[t] = c
            room[c] -= 1
        a = torch.from_numpy(assign).to(X.device)
        cent = Fn.normalize(torch.zeros_like(cent).index_add_(0, a, X), dim=-1)
    return torch.from_numpy(assign)


def masked_argmax(a, y):
    """The greedy draft of the centroid-masked head: the best-scoring token of the top-k
    clusters (what Gemma4AssistantMaskedEmbedder's logits pick), without materialising them."""
    me = a.masked_embedding
    per = me.vocab_size_per_centroid
    cluster_of = torch.empty_like(me.token_ordering)
    cluster_of[me.token_ordering.long()] = torch.arange(len(cluster_of), device=cluster_of.device) // per
    top = me.centroids(y).topk(me.centroid_intermediate_top_k, dim=-1).indices
    chosen = torch.zeros(*y.shape[:-1], me.num_centroids, dtype=torch.bool, device=y.device).scatter_(-1, top, True)
    logits = Fn.linear(y, a.lm_head.weight).float()
    return logits.masked_fill(~chosen[..., cluster_of], float("-inf")).argmax(-1)


@torch.no_grad()
def acceptance(a, target, seqs, prompt_len, masks, device, batch=64):
    """Teacher-forced estimate on greedy sequences, masked head: the share of first drafts equal
    to the target's greedy token, of first and second drafts both equal, and what K=2 accepts."""
    hit1 = hit2 = n = 0
    for i in range(0, len(seqs), batch):
        x = seqs[i:i + batch]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            h, tl, kv = target_pass(target, x)
            ys = draft_all(a, target, x, h, kv, masks, 2)
            d = [masked_argmax(a, y) for y in ys]
        g = tl.float().argmax(-1)
        T = x.shape[1]
        ok1 = d[0] == g
        ok2 = ok1 & (d[1] == torch.roll(g, -1, dims=1))
        sel = slice(prompt_len, T - 2)
        hit1 += int(ok1[:, sel].sum())
        hit2 += int(ok2[:, sel].sum())
        n += ok1[:, sel].numel()
    return {"first": hit1 / n, "both": hit2 / n, "k2_acceptance": (hit1 + hit2) / (2 * n)}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget", type=float, default=80.0, help="seconds of distillation")
    ap.add_argument("--steps-unrolled", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=24, help="prompt tokens of the greedy sequences")
    ap.add_argument("--length", type=int, default=160, help="tokens of a training sequence")
    ap.add_argument("--sequences", type=int, default=1536, help="greedy sequences to make")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=4242)
    args = ap.parse_args(argv)
    _, aspec = common.shapes(args.smoke)
    if args.smoke:
        args.budget, args.batch, args.length, args.sequences, args.prompt = min(args.budget, 6.0), 8, 48, 64, 12
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    rng = np.random.default_rng(args.seed)
    target = load_target(os.path.join(args.work, "target"), device)
    tc = target.config
    window = tc.sliding_window
    _, encode = encoder(os.path.join(args.work, "target", "tokenizer.json"))
    train_docs, val_docs = read_corpus(args.work, "train"), read_corpus(args.work, "val")

    t0 = time.time()
    plain = data.SentenceSamples(train_docs, encode, args.length)
    val_plain = data.SentenceSamples(val_docs, encode, args.length)
    chat = data.ChatSamples(data.chat_texts(train_docs, rng, 2000, args.length * 5), encode, args.length)

    def prompts(samples, docs, n):
        p = samples.sample(rng, n - n // 4)[:, :args.prompt].astype(np.int64)
        c = chat_prompts(docs, encode, rng, n // 4, max(4, args.prompt - 9))
        out = []
        for rows in (p, c):
            for i in range(0, len(rows), 256):
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                    out.append(greedy_batch(target, torch.from_numpy(rows[i:i + 256]).to(device),
                                            args.length - rows.shape[1]))
        return torch.cat(out, dim=0)

    pool = prompts(plain, train_docs, args.sequences)
    val_pool = prompts(val_plain, val_docs, 256 if not args.smoke else 16)
    print(f"greedy sequences: {len(pool)} for training, {len(val_pool)} held out ({time.time() - t0:.1f}s)", flush=True)

    a = make_assistant(tc, aspec, "sdpa", args.seed).to(device)
    extra = check_against_reference(a, target, val_pool[:1], window, device)
    masks = draft_masks(args.length, window, device, extra)
    n_params = count_params(a)
    print(f"assistant: {n_params} parameters", flush=True)
    opt = torch.optim.AdamW(common.param_groups(a, 0.01), lr=args.lr, betas=(0.9, 0.95), fused=device.type == "cuda")
    C = a.config.num_centroids
    cluster_of = None
    history = []
    step, start, run_loss = 0, time.time(), torch.zeros((), device=device)
    positions = torch.arange(args.length, device=device)[None]
    next_eval = 0.0
    while True:
        progress = (time.time() - start) / args.budget
        if cluster_of is None and progress >= 1 / 3:
            with torch.no_grad():
                assign = balanced_clusters(a.model.embed_tokens.weight.detach(), C, 8, args.seed).to(device)
                ordering = torch.cat([torch.nonzero(assign == c).flatten() for c in range(C)])
                a.masked_embedding.token_ordering.copy_(ordering)
                means = torch.zeros(C, a.config.get_text_config().hidden_size, device=device).index_add_(
                    0, assign, a.model.embed_tokens.weight.detach().float()) / (len(assign) // C)
                a.masked_embedding.centroids.weight.copy_(means)
            cluster_of = assign
            print(f"centroids: {C} clusters of {len(assign) // C} tokens (balanced k-means) at step {step}", flush=True)
        if progress >= next_eval or progress >= 1.0:
            a.eval()
            acc = acceptance(a, target, val_pool, args.prompt, masks, device)
            a.train()
            history.append({"step": step, "seconds": round(time.time() - start, 1),
                            "loss": round(float(run_loss) / max(1, step - (history[-1]["step"] if history else 0)), 4),
                            **{k: round(v, 4) for k, v in acc.items()}})
            run_loss.zero_()
            print("eval", json.dumps(history[-1]), flush=True)
            next_eval += 0.2
            if progress >= 1.0:
                break
        for g in opt.param_groups:
            g["lr"] = common.lr_at(progress, args.lr)
        n_corpus = args.batch // 4
        rows = np.concatenate([plain.sample(rng, n_corpus - n_corpus // 4), chat.sample(rng, n_corpus // 4)])
        x = torch.cat([pool[torch.from_numpy(rng.integers(0, len(pool), args.batch - n_corpus)).to(device)],
                       torch.from_numpy(rows.astype(np.int64)).to(device)])
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            with torch.no_grad():
                h, tl, kv = target_pass(target, x)
            ys = draft_all(a, target, x, h, kv, masks, args.steps_unrolled)
            loss_sum, count = 0.0, 0
            for j, y in enumerate(ys):
                t_logits = torch.roll(tl, -j, dims=1).float()
                valid = (positions >= 1) & (positions + j <= args.length - 1) & (torch.roll(x, -j, dims=1) != data.PAD)
                la = Fn.log_softmax(Fn.linear(y, a.lm_head.weight).float(), -1)
                lt = Fn.log_softmax(t_logits, -1)
                best = t_logits.argmax(-1)
                per = (lt.exp() * (lt - la)).sum(-1) + 0.5 * Fn.nll_loss(la.transpose(1, 2), best, reduction="none")
                if cluster_of is not None:
                    cl = a.masked_embedding.centroids(y).float()
                    per = per + Fn.cross_entropy(cl.transpose(1, 2), cluster_of[best], reduction="none")
                loss_sum = loss_sum + (per * valid).sum()
                count += int(valid.sum())
            loss = loss_sum / count
        common.optimizer_step(loss, a, opt)
        run_loss += loss.detach()
        step += 1
    seconds = time.time() - start
    a.eval()
    out = os.path.join(args.work, "assistant")
    shutil.rmtree(out, ignore_errors=True)
    keys = common.save_checkpoint(a, out)
    from transformers import Gemma4AssistantForCausalLM
    loaded = common.reload(Gemma4AssistantForCausalLM, out, device, "sdpa")
    final = acceptance(loaded, target, val_pool, args.prompt, masks, device)
    print(f"{out}: saved ({len(keys)} tensors); reloaded, held-out greedy sequences: {json.dumps(final)}", flush=True)
    report = {"parameters": n_params, "steps": step, "seconds": round(seconds, 1), "batch": args.batch,
              "length": args.length, "unrolled_steps": args.steps_unrolled, "greedy_sequences": len(pool),
              "sliding_reach": f"window + {extra}", "history": history, "final_acceptance_estimate": final}
    os.makedirs(os.path.join(args.work, "reports"), exist_ok=True)
    common.write_json(os.path.join(args.work, "reports", "distil.json"), report)


if __name__ == "__main__":
    sys.exit(main())
