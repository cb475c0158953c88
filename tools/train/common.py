"""Shapes of the demo pair and helpers shared by the training scripts (torch needed, transformers
only where a function imports it).

The target has E2B's architecture at a small size: (3 sliding, 1 full) x 2 layers, the last four
sharing the K/V of the last sliding and full layers before them (donors: layers 2 and 3),
double-wide MLP on the shared layers, per-layer embeddings, one KV head, full layers with twice
the head size and proportional RoPE, final logit softcap 30. The assistant is E2B's assistant
shape at a small size: four query-only layers (3 sliding, 1 full) over the target's donor K/V
and the centroid-masked head."""
import hashlib
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S, F = "sliding_attention", "full_attention"
EOS_IDS = [1, 106]

TARGET = dict(vocab_size=6144, hidden_size=320, intermediate_size=1024, num_hidden_layers=8,
              num_attention_heads=4, num_key_value_heads=1, head_dim=64, global_head_dim=128,
              layer_types=[S, S, S, F] * 2, sliding_window=128, final_logit_softcapping=30.0,
              hidden_size_per_layer_input=32, vocab_size_per_layer_input=6144, num_kv_shared_layers=4,
              use_double_wide_mlp=True)
ASSISTANT = dict(hidden_size=192, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                 layer_types=[S, S, S, F], num_centroids=64, centroid_intermediate_top_k=8)

# A configuration of the same architecture small enough to run every stage in seconds.
SMOKE_TARGET = dict(TARGET, vocab_size=640, hidden_size=64, intermediate_size=128, head_dim=16,
                    global_head_dim=32, hidden_size_per_layer_input=32, vocab_size_per_layer_input=640,
                    sliding_window=16)
SMOKE_ASSISTANT = dict(ASSISTANT, hidden_size=64, intermediate_size=128, num_centroids=32,
                       centroid_intermediate_top_k=4)


def shapes(smoke):
    return (SMOKE_TARGET, SMOKE_ASSISTANT) if smoke else (TARGET, ASSISTANT)


def donor_layers(spec):
    first_shared = spec["num_hidden_layers"] - spec["num_kv_shared_layers"]
    types = spec["layer_types"]
    return {t: max(i for i in range(first_shared) if types[i] == t) for t in (S, F)}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def save_checkpoint(model, out):
    """config.json (without the transformers version) and model.safetensors in bf16 (integer
    tensors as they are, the tied LM head left out), as tools/reference saves its assistants;
    returns the tensor names."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
    from make_assistant_goldens import save_assistant
    return save_assistant(model, out)


def reload(cls, out, device, attn):
    """The checkpoint in `out` as transformers' `cls` reads it (float32, on `device`); an error
    unless every tensor but the tied LM head was found and none was left over."""
    model, info = cls.from_pretrained(out, dtype=torch.float32, attn_implementation=attn, output_loading_info=True)
    missing = [k for k in info["missing_keys"] if k != "lm_head.weight"]
    if missing or info["unexpected_keys"]:
        raise SystemExit(f"{out}: reloads with missing {missing} / unexpected {info['unexpected_keys']}")
    return model.to(device).eval()


def write_generation_config(out):
    write_json(os.path.join(out, "generation_config.json"), {"bos_token_id": 2, "eos_token_id": EOS_IDS, "pad_token_id": 0})


def lr_at(progress, peak, warmup=0.03, floor=0.1):
    """Linear warm-up over the first `warmup` of training, then cosine down to floor * peak."""
    import math
    if progress < warmup:
        return peak * progress / warmup
    p = min(1.0, (progress - warmup) / (1.0 - warmup))
    return peak * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * p)))


def optimizer_step(loss, model, opt, clip=1.0):
    """Backward, gradient clipping, the update, and the gradients cleared."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    opt.zero_grad(set_to_none=True)


def param_groups(model, weight_decay):
    decay, plain = [], []
    for p in {id(p): p for p in model.parameters() if p.requires_grad}.values():
        (decay if p.dim() >= 2 else plain).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


# ---- The project's q8 scheme (src/base/quant.cc), bit for bit ----

GROUP = 32


def quantizable(name, t):
    """What `gemma4 export` quantizes: float tensors of 2+ dimensions whose rows are groups of 32."""
    return t.is_floating_point() and t.dim() >= 2 and t.shape[-1] % GROUP == 0


def q8(w):
    """(int8 values, float16 scales, dequantized float32) of a float tensor, as QuantizeGroupQ8:
    scale = f16(max|x| / 127) (f32 division, round to nearest even), q = lround(x / scale) (f32
    division, halves away from zero) clamped to [-127, 127], value = q * scale."""
    g = w.detach().to(torch.float32).cpu().reshape(-1, GROUP)
    amax = g.abs().amax(dim=1)
    scale = (amax / 127.0).to(torch.float16)
    d = scale.to(torch.float32)[:, None]
    ratio = (g / torch.where(d > 0, d, torch.ones_like(d))).to(torch.float64)
    q = (torch.sign(ratio) * torch.floor(ratio.abs() + 0.5)).clamp(-127, 127)
    q = torch.where(d > 0, q, torch.zeros_like(q)).to(torch.int8)
    deq = q.to(torch.float32) * d
    shape = list(w.shape)
    return q.reshape(shape), scale.reshape(shape[:-1] + [shape[-1] // GROUP]), deq.reshape(shape)


def q8_state(state):
    """The state dict as the q8 artifact holds it, dequantized to float32, and the sha256 of each
    quantized tensor's stored bytes (values, then `NAME_scale`)."""
    out, hashes = {}, {}
    for name, t in state.items():
        if quantizable(name, t):
            q, scale, deq = q8(t)
            out[name] = deq
            hashes[name] = hashlib.sha256(q.contiguous().numpy().tobytes()).hexdigest()
            hashes[name + "_scale"] = hashlib.sha256(scale.contiguous().view(torch.int16).numpy().tobytes()).hexdigest()
        else:
            out[name] = t.to(torch.float32) if t.is_floating_point() else t
    return out, hashes
