#!/usr/bin/env python3
"""The peer figures for bench: transformers' prefill, decode and assisted generation on the same
checkpoint folders that `gemma4 synth` writes, on the GPU, bf16. Prints one JSON object a line.

  python3 tools/reference/bench_transformers.py --model DIR [--assistant DIR]
      [--prompt-tokens 512] [--decode-tokens 256] [--compile]

- prefill: one forward pass over the prompt (logits of the last position only), each attention
  implementation, with a dynamic cache and with a static cache;
- decode: generate() of decode-tokens greedy tokens after the prompt, less generate() of one,
  per token; dynamic and static cache, the static one eager (generate() would otherwise compile the
  model for it) and, with --compile, also under torch.compile;
- assisted: generate(assistant_model=...) with the assistant drafting 2 tokens a round (constant
  schedule, set on the assistant's generation_config), greedy, each attention implementation.
Each figure is the median of a few runs after a warm-up (untimed calls until the GPU has been
busy a second), with the GPU synchronised around it.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import transformers
from transformers import AutoConfig, Gemma4AssistantForCausalLM, Gemma4ForCausalLM, StaticCache


def say(**kv):
    print(json.dumps(kv), flush=True)


def timed(fn, reps, warm_s=1.0):
    # Untimed calls until the GPU has been busy for warm_s: a GPU left idle runs at a low clock
    # for a while, which one short call (a prefill is tens of milliseconds) does not cover.
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    while time.perf_counter() - start < warm_s:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--assistant")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--decode-tokens", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    say(what="versions", torch=torch.__version__, transformers=transformers.__version__,
        gpu=torch.cuda.get_device_name(0))
    dev = "cuda"
    gen = torch.Generator().manual_seed(1)
    vocab = AutoConfig.from_pretrained(a.model).vocab_size
    ids = torch.randint(3, min(vocab, 200000), (1, a.prompt_tokens), generator=gen).to(dev)
    n = a.prompt_tokens
    for impl in ("sdpa", "eager"):
        try:
            model = Gemma4ForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16,
                                                      attn_implementation=impl).to(dev).eval()
        except Exception as e:  # noqa: BLE001 - report and go on to what can run
            say(what="load", attn=impl, error=str(e)[:400])
            continue
        with torch.inference_mode():
            s = timed(lambda: model(ids, logits_to_keep=1), a.reps)
            say(what="prefill", attn=impl, cache="dynamic", tokens=n, seconds=s, tokens_per_s=n / s)
            try:
                def static_prefill():
                    cache = StaticCache(config=model.config, max_cache_len=n + a.decode_tokens + 8)
                    model(ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
                s = timed(static_prefill, a.reps)
                say(what="prefill", attn=impl, cache="static", tokens=n, seconds=s, tokens_per_s=n / s)
            except Exception as e:  # noqa: BLE001
                say(what="prefill", attn=impl, cache="static", error=str(e)[:400])
            kinds = ["dynamic", "static"] + (["static+compile"] if a.compile and impl == "sdpa" else [])
            for kind in kinds:
                try:
                    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
                    if kind != "dynamic":
                        kw["cache_implementation"] = "static"
                    if kind == "static":
                        kw["disable_compile"] = True
                    if kind == "static+compile":
                        kw["compile_config"] = transformers.CompileConfig(fullgraph=False)
                    one = timed(lambda: model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw), a.reps)
                    many = timed(lambda: model.generate(ids, max_new_tokens=a.decode_tokens + 1,
                                                        min_new_tokens=a.decode_tokens + 1, **kw), a.reps)
                    per = (many - one) / a.decode_tokens
                    say(what="decode", attn=impl, cache=kind, tokens=a.decode_tokens, ms_per_token=per * 1e3,
                        tokens_per_s=1 / per)
                except Exception as e:  # noqa: BLE001
                    say(what="decode", attn=impl, cache=kind, error=str(e)[:400])
            if a.assistant:
                try:
                    asst = Gemma4AssistantForCausalLM.from_pretrained(a.assistant, dtype=torch.bfloat16,
                                                                      attn_implementation=impl).to(dev).eval()
                    asst.generation_config.num_assistant_tokens = 2
                    asst.generation_config.num_assistant_tokens_schedule = "constant"
                    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None, assistant_model=asst)
                    m = a.decode_tokens
                    s = timed(lambda: model.generate(ids, max_new_tokens=m, min_new_tokens=m, **kw), a.reps)
                    one = timed(lambda: model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw), a.reps)
                    say(what="assisted", attn=impl, tokens=m, seconds=s, tokens_per_s_with_prefill=m / s,
                        tokens_per_s=(m - 1) / (s - one))
                    del asst
                except Exception as e:  # noqa: BLE001
                    say(what="assisted", attn=impl, error=str(e)[:400])
        del model
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
