#!/usr/bin/env python3
"""Records what transformers computes for the demo pair as the project's q8 artifacts hold it.

The bf16 checkpoints (train.py, distil.py) are quantized here with the project's q8 scheme, bit
for bit as `gemma4 export` does (common.q8; check_export.py compares the stored bytes), and every
reference number is a float32 computation on the CPU from those dequantized weights, so the
runtime on the committed q8 files must match them as it matches the other reference models:

  - golden.json (make_goldens.py's format): greedy continuations of English prompts (plain, chat,
    one longer than the sliding window) with their margins, checked against generate() with its
    cache, and the final logits at several positions;
  - assistant_golden.json (make_assistant_goldens.py's format): single draft steps, the
    speculative rounds of this project's loop for K = 2 and 4, driven over transformers' modules,
    and whether generate(assistant_model=...) gives the same tokens;
  - q8_hashes.json: the sha256 of every quantized tensor's values and scales;
  - W/reports/goldens.json: the greedy texts of the quality prompts and K=2 acceptance on them.

  python3 tools/train/goldens.py --work W [--smoke]"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "reference"))
import common  # noqa: E402
from tokenizer import read_corpus  # noqa: E402

# The quality bar's prompts (tests/demo_pair_test.cc has the same list).
QUALITY_PROMPTS = ["The people of this country", "In the coming year, we will", "Our schools and our children",
                   "The weather this morning", "The history of the world", "We must work together to"]
CHAT_PROMPTS = ["Tell me about the economy.", "What should we do about our schools?"]
MAX_NEW = 32
TRACE_NEW = 24
MIN_MARGIN = 1e-3


def round_list(t, digits=5):
    return [round(float(v), digits) for v in t]


def load_q8(cls, path, key, hashes):
    from safetensors.torch import load_file
    state = load_file(os.path.join(path, "model.safetensors"))
    deq, hashes[key] = common.q8_state(state)
    model = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
    result = model.load_state_dict(deq, strict=False)
    missing = [k for k in result.missing_keys if k != "lm_head.weight"]
    if missing or result.unexpected_keys:
        raise SystemExit(f"{path}: dequantized weights miss {missing} / add {result.unexpected_keys}")
    model.tie_weights()
    return model


def greedy_with_margins(model, prompt, n, eos):
    import make_goldens
    seq, out, margins = list(prompt), [], []
    for _ in range(n):
        lg = make_goldens.last_logits(model, seq)
        top = torch.topk(lg, 2)
        out.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
        seq.append(out[-1])
        if out[-1] in eos:
            break
    return out, margins


def prompt_ids(tok, text, chat):
    if chat:
        text = "<|turn>user\n" + text + "<turn|>\n<|turn>model\n"
    return [2] + tok.encode(text, add_special_tokens=False).ids


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    import transformers
    from tokenizers import Tokenizer
    from transformers import Gemma4AssistantForCausalLM, Gemma4ForCausalLM
    import make_assistant_goldens as mag
    torch.set_num_threads(args.threads or max(1, os.cpu_count() or 1))
    max_new, trace_new = (6, 6) if args.smoke else (MAX_NEW, TRACE_NEW)
    out_dir = os.path.join(args.work, "goldens")
    os.makedirs(out_dir, exist_ok=True)
    hashes = {}
    target = load_q8(Gemma4ForCausalLM, os.path.join(args.work, "target"), "model", hashes)
    assistant = load_q8(Gemma4AssistantForCausalLM, os.path.join(args.work, "assistant"), "assistant", hashes)
    common.write_json(os.path.join(out_dir, "q8_hashes.json"), hashes)
    text_model, head, tc = target.model, target.lm_head, target.config
    tok = Tokenizer.from_file(os.path.join(args.work, "target", "tokenizer.json"))
    eos = common.EOS_IDS

    # Target: plain prompts, a chat prompt and a prompt longer than the sliding window.
    long_text = ""
    for s in read_corpus(args.work, "val")[0]["sentences"]:
        long_text = (long_text + " " + s).strip()
        if len(tok.encode(long_text).ids) > tc.sliding_window + 24:
            break
    candidates = [(p, False) for p in QUALITY_PROMPTS] + [(p, True) for p in CHAT_PROMPTS] + [(long_text, False)]
    prompts, skipped = [], []
    for text, chat in candidates:
        ids = prompt_ids(tok, text, chat)
        toks, margins = greedy_with_margins(target, ids, max_new, eos)
        kind = "chat" if chat else ("long" if text == long_text else "plain")
        if min(margins) < MIN_MARGIN:
            skipped.append({"text": text[:60], "min_margin": min(margins)})
            continue
        if sum(p["kind"] == kind for p in prompts) >= (3 if kind == "plain" else 1):
            continue
        with torch.no_grad():
            gen = target.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=max_new, eos_token_id=eos,
                                  pad_token_id=0)[0, len(ids):].tolist()
            full = ids + toks
            logits = target(input_ids=torch.tensor([full]), use_cache=False).logits[0].float()
        positions = sorted({0, len(ids) - 1, min(len(full) - 1, len(ids) + 5), len(full) - 2, len(full) - 1})
        prompts.append({"kind": kind, "text": text, "chat": chat, "prompt_ids": ids, "greedy_tokens": toks,
                        "text_out": tok.decode(toks, skip_special_tokens=False),
                        "stop_reason": "eos" if toks and toks[-1] in eos else "length",
                        "margins": [round(m, 6) for m in margins], "generate_with_cache_matches": gen == toks,
                        "logits": [{"position": p, "values": round_list(logits[p])} for p in positions]})
        print(f"golden prompt ({kind}, {len(ids)} tokens): {tok.decode(toks)!r} min margin {min(margins):.4f}, "
              f"generate() {'matches' if gen == toks else 'DIFFERS'}", flush=True)
    plc = {str(i): {"head_dim": tc.per_layer_config[i].head_dim,
                    "num_key_value_heads": tc.per_layer_config[i].num_key_value_heads} for i in range(tc.num_hidden_layers)}
    golden = {"generator": "tools/train/goldens.py", "transformers": transformers.__version__, "torch": torch.__version__,
              "spec": "demo", "weights": "q8 (dequantized, float32)", "max_new_tokens": max_new, "eos_token_ids": eos,
              "per_layer_config": plc, "skipped_for_small_margins": skipped, "prompts": prompts}
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(golden, f)

    # Assistant: draft steps, speculative rounds, transformers' own generate.
    step_seq = mag.greedy_sequence(text_model, head, tc, prompt_ids(tok, QUALITY_PROMPTS[0], False), 12)
    h, _, kv = mag.target_pass(text_model, head, tc, step_seq)
    steps = []
    with torch.no_grad():
        for p in (3, 9, len(step_seq) - 1):
            l1, s1 = mag.draft_step(assistant, text_model, kv, p, step_seq[p], h[p - 1])
            t1 = int(torch.argmax(l1))
            l2, _ = mag.draft_step(assistant, text_model, kv, p, t1, s1)
            steps.append({"sequence": step_seq[:p + 1], "position": p, "token": step_seq[p], "logits": round_list(l1),
                          "next_state": round_list(s1), "second_token": t1, "second_logits": round_list(l2)})
    assistant.generation_config.num_assistant_tokens = 2
    assistant.generation_config.num_assistant_tokens_schedule = "constant"
    traces, agree, inconsistent = [], [], []
    trace_prompts = [prompt_ids(tok, p, False) for p in QUALITY_PROMPTS] + [prompt_ids(tok, p, True) for p in CHAT_PROMPTS]
    for ids in trace_prompts:
        if len(traces) == 5:
            break
        plain = mag.plain_greedy(text_model, head, tc, ids, trace_new)
        entry = {"prompt_ids": ids, "plain_tokens": plain, "max_new_tokens": trace_new}
        for k in (2, 4):
            toks, rounds = mag.speculative(text_model, head, tc, assistant, ids, k, trace_new)
            entry[f"k{k}"] = {"tokens": toks, "rounds": rounds}
        if any(entry[f"k{k}"]["tokens"] != plain for k in (2, 4)):
            # A near tie that longer and shorter forwards break differently: not a usable trace.
            inconsistent.append(ids)
            continue
        try:
            with torch.no_grad():
                gen = target.generate(torch.tensor([ids]), assistant_model=assistant, do_sample=False,
                                      max_new_tokens=trace_new, eos_token_id=eos, pad_token_id=0)
            agree.append(gen[0, len(ids):].tolist() == plain)
        except Exception as e:  # recorded, not hidden
            agree.append(f"error: {type(e).__name__}: {e}"[:300])
        traces.append(entry)
    acc = sum(r["accepted"] for t in traces for r in t["k2"]["rounds"])
    drafted = sum(len(r["drafts"]) for t in traces for r in t["k2"]["rounds"])
    from safetensors import safe_open
    with safe_open(os.path.join(args.work, "assistant", "model.safetensors"), "pt") as f:
        keys = sorted(f.keys())
    agolden = {"generator": "tools/train/goldens.py", "transformers": transformers.__version__, "target": "demo",
               "head": "centroid", "weights": "q8 (dequantized, float32)", "tensors": keys,
               "donor_layers": mag.donor_layers(tc), "steps": steps, "traces": traces,
               "transformers_generate_matches": agree, "acceptance_k2": acc / max(1, drafted),
               "prompts_left_out_for_ties": inconsistent}
    with open(os.path.join(out_dir, "assistant_golden.json"), "w") as f:
        json.dump(agolden, f)
    print(f"assistant goldens: K=2 acceptance {acc}/{drafted} on the traces; generate() agrees: {agree}", flush=True)

    # The quality prompts: greedy text and K=2 acceptance (the runtime's test measures its own).
    quality = []
    for text, chat in [(p, False) for p in QUALITY_PROMPTS] + [(p, True) for p in CHAT_PROMPTS]:
        ids = prompt_ids(tok, text, chat)
        toks, rounds = mag.speculative(text_model, head, tc, assistant, ids, 2, 48 if not args.smoke else 6)
        quality.append({"prompt": text, "chat": chat, "text": tok.decode(toks, skip_special_tokens=True),
                        "accepted": sum(r["accepted"] for r in rounds), "drafted": sum(len(r["drafts"]) for r in rounds)})
        print(f"  {text!r} -> {quality[-1]['text']!r} ({quality[-1]['accepted']}/{quality[-1]['drafted']})", flush=True)
    a_all = sum(q["accepted"] for q in quality)
    d_all = sum(q["drafted"] for q in quality)
    os.makedirs(os.path.join(args.work, "reports"), exist_ok=True)
    common.write_json(os.path.join(args.work, "reports", "goldens.json"),
                      {"quality": quality, "k2_acceptance": a_all / max(1, d_all), "trace_acceptance_k2": agolden["acceptance_k2"],
                       "golden_prompts": len(prompts), "skipped": skipped, "generate_matches": agree})
    print(f"quality prompts: K=2 acceptance {a_all}/{d_all}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
