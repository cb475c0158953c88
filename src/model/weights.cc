#include "model/weights.h"

#include <cstdlib>
#include <cstring>
#include <set>

#include "base/quant.h"

namespace g4 {
namespace {

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A matrix stored quantized: I8 values in the spec's shape (q8) or U8 with the last dimension
// halved (q4), and F16 scales with the last dimension over 32.
Result<WeightPlan::Item> PlanQuantized(const Checkpoint& ckpt, const WeightSpec& spec, const CheckpointTensor* t) {
  const std::string file = ckpt.file(t->file).Name();
  const DType q = t->info.dtype == DType::kI8 ? DType::kQ8 : DType::kQ4;
  const int64_t cols = spec.shape.back();
  if (cols % kQuantGroup) {
    return InvalidArgument(file + ": tensor " + spec.name + " is quantized but its rows of " + std::to_string(cols) +
                           " are not whole groups of " + std::to_string(kQuantGroup));
  }
  std::vector<int64_t> values = spec.shape, scales = spec.shape;
  if (q == DType::kQ4) values.back() = cols / 2;
  scales.back() = cols / kQuantGroup;
  if (t->info.shape != values) {
    return InvalidArgument(file + ": tensor " + spec.name + " (" + DTypeName(q) + ") has shape " + t->info.ShapeString() +
                           "; the config implies " + ShapeText(values));
  }
  const std::string sname = ScaleTensorName(spec.name);
  const CheckpointTensor* s = ckpt.Find(sname);
  const std::string where = ckpt.dir().empty() ? std::string("checkpoint") : ckpt.dir();
  if (!s) return NotFound(where + ": tensor " + sname + " (the scales of quantized " + spec.name + ") is missing");
  const std::string sfile = ckpt.file(s->file).Name();
  if (s->info.dtype != DType::kF16) {
    return InvalidArgument(sfile + ": tensor " + sname + " has dtype " + DTypeName(s->info.dtype) + "; expected F16");
  }
  if (s->info.shape != scales) {
    return InvalidArgument(sfile + ": tensor " + sname + " has shape " + s->info.ShapeString() + "; expected " +
                           ShapeText(scales));
  }
  return WeightPlan::Item{&spec, t, s, q};
}

}  // namespace

bool IsOtherTower(const std::string& name) {
  static const char* kPrefixes[] = {"model.vision_tower.", "model.audio_tower.", "model.embed_vision.",
                                    "model.embed_audio.", "model.multi_modal_projector.", "vision_tower.",
                                    "audio_tower.", "embed_vision.", "embed_audio.", "multi_modal_projector."};
  for (const char* p : kPrefixes) {
    if (name.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::vector<WeightSpec> ListWeights(const ModelConfig& c, ModelWeights* w) {
  std::vector<WeightSpec> specs;
  const int64_t H = c.hidden;
  auto add = [&](std::string name, std::vector<int64_t> shape, Weight* slot) {
    specs.push_back(WeightSpec{std::move(name), std::move(shape), slot});
  };
  w->layers.assign(c.num_layers, LayerWeights{});
  add("embed_tokens.weight", {c.vocab, H}, &w->embed);
  add("norm.weight", {H}, &w->final_norm);
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab, H}, &w->lm_head);
  if (c.ple_dim) {
    add("embed_tokens_per_layer.weight", {c.ple_vocab, int64_t{c.num_layers} * c.ple_dim}, &w->ple_embed);
    add("per_layer_model_projection.weight", {int64_t{c.num_layers} * c.ple_dim, H}, &w->ple_model_projection);
    add("per_layer_projection_norm.weight", {c.ple_dim}, &w->ple_projection_norm);
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    LayerWeights& lw = w->layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    const int64_t q = int64_t{l.heads} * l.head_dim, kv = int64_t{l.kv_heads} * l.head_dim;
    add(p + "input_layernorm.weight", {H}, &lw.input_norm);
    add(p + "self_attn.q_proj.weight", {q, H}, &lw.q_proj);
    add(p + "self_attn.q_norm.weight", {l.head_dim}, &lw.q_norm);
    if (!l.kv_shared) {
      add(p + "self_attn.k_proj.weight", {kv, H}, &lw.k_proj);
      if (!l.k_eq_v) add(p + "self_attn.v_proj.weight", {kv, H}, &lw.v_proj);
      add(p + "self_attn.k_norm.weight", {l.head_dim}, &lw.k_norm);
    }
    add(p + "self_attn.o_proj.weight", {H, q}, &lw.o_proj);
    add(p + "post_attention_layernorm.weight", {H}, &lw.post_attn_norm);
    add(p + "pre_feedforward_layernorm.weight", {H}, &lw.pre_ff_norm);
    add(p + "mlp.gate_proj.weight", {l.intermediate, H}, &lw.gate_proj);
    add(p + "mlp.up_proj.weight", {l.intermediate, H}, &lw.up_proj);
    add(p + "mlp.down_proj.weight", {H, l.intermediate}, &lw.down_proj);
    add(p + "post_feedforward_layernorm.weight", {H}, &lw.post_ff_norm);
    if (c.moe) {
      add(p + "router.scale", {H}, &lw.router_scale);
      add(p + "router.proj.weight", {c.num_experts, H}, &lw.router_proj);
      add(p + "router.per_expert_scale", {c.num_experts}, &lw.per_expert_scale);
      add(p + "experts.gate_up_proj", {c.num_experts, 2 * int64_t{c.moe_intermediate}, H}, &lw.experts_gate_up);
      add(p + "experts.down_proj", {c.num_experts, H, c.moe_intermediate}, &lw.experts_down);
      add(p + "post_feedforward_layernorm_1.weight", {H}, &lw.post_ff_norm_1);
      add(p + "pre_feedforward_layernorm_2.weight", {H}, &lw.pre_ff_norm_2);
      add(p + "post_feedforward_layernorm_2.weight", {H}, &lw.post_ff_norm_2);
    }
    if (c.ple_dim) {
      add(p + "per_layer_input_gate.weight", {c.ple_dim, H}, &lw.ple_gate);
      add(p + "per_layer_projection.weight", {H, c.ple_dim}, &lw.ple_proj);
      add(p + "post_per_layer_input_norm.weight", {H}, &lw.post_ple_norm);
    }
    add(p + "layer_scalar", {1}, &lw.layer_scalar);
  }
  return specs;
}

Result<std::string> DetectPrefix(const Checkpoint& ckpt) {
  for (const char* candidate : {"model.language_model.", "model.", ""}) {
    if (ckpt.Find(std::string(candidate) + "embed_tokens.weight")) return std::string(candidate);
  }
  const std::string where = ckpt.dir().empty() ? std::string("checkpoint") : ckpt.dir();
  return NotFound(where + ": tensor model.embed_tokens.weight (or model.language_model.embed_tokens.weight) is missing");
}

Result<WeightPlan> PlanWeights(const Checkpoint& ckpt, const std::vector<WeightSpec>& specs) {
  const std::string where = ckpt.dir().empty() ? std::string("checkpoint") : ckpt.dir();
  WeightPlan plan;
  for (const WeightSpec& spec : specs) {
    const CheckpointTensor* t = ckpt.Find(spec.name);
    if (!t) return NotFound(where + ": tensor " + spec.name + " is missing");
    const std::string file = ckpt.file(t->file).Name();
    const DType d = t->info.dtype;
    const bool quantized = !spec.integer && spec.shape.size() >= 2 && (d == DType::kI8 || d == DType::kU8);
    if (quantized) {
      G4_ASSIGN_OR_RETURN(WeightPlan::Item item, PlanQuantized(ckpt, spec, t));
      plan.items.push_back(item);
      continue;
    }
    if (spec.integer ? d != DType::kI64 : (d != DType::kF32 && d != DType::kF16 && d != DType::kBF16)) {
      return InvalidArgument(file + ": tensor " + spec.name + " has dtype " + DTypeName(d) + "; expected " +
                             (spec.integer ? "I64" : "F32, F16 or BF16"));
    }
    if (t->info.shape != spec.shape) {
      return InvalidArgument(file + ": tensor " + spec.name + " has shape " + t->info.ShapeString() + "; the config implies " +
                             ShapeText(spec.shape));
    }
    plan.items.push_back({&spec, t});
  }
  return plan;
}

Status LoadPlan(const Checkpoint& ckpt, const WeightPlan& plan, Backend& backend,
                std::vector<std::unique_ptr<Buffer>>* buffers, std::map<std::string, uint64_t>* bytes_by_dtype) {
  std::vector<std::unique_ptr<Buffer>> loaded;  // released on any error
  std::map<std::string, uint64_t> by_dtype;
  for (const WeightPlan::Item& p : plan.items) {
    const Reader& file = ckpt.file(p.tensor->file);
    const auto& s = p.spec->shape;
    uint64_t elements = 1;
    for (int64_t d : s) elements *= static_cast<uint64_t>(d);
    auto buf = p.scales ? backend.LoadQuantizedWeights(p.quant, elements, file, p.tensor->info.offset,
                                                       ckpt.file(p.scales->file), p.scales->info.offset)
                        : backend.LoadWeights(file, p.tensor->info.offset, p.tensor->info.bytes);
    if (!buf.ok()) return buf.status().WithContext(file.Name() + ": tensor " + p.spec->name);
    Weight& w = *p.spec->slot;
    w.buffer = buf->get();
    w.dtype = p.scales ? p.quant : p.tensor->info.dtype;
    w.count = s.size() == 3 ? s[0] : 1;
    w.rows = s.size() >= 2 ? s[s.size() - 2] : 1;
    w.cols = s.back();
    by_dtype[DTypeName(w.dtype)] += p.tensor->info.bytes + (p.scales ? p.scales->info.bytes : 0);
    loaded.push_back(std::move(buf).value());
  }
  for (auto& b : loaded) buffers->push_back(std::move(b));
  for (const auto& [k, v] : by_dtype) (*bytes_by_dtype)[k] += v;
  return Status::Ok();
}

Status ReadLayerScalars(const Checkpoint& ckpt, const std::string& prefix, int layers, std::vector<float>* out) {
  out->resize(layers);
  for (int i = 0; i < layers; ++i) {
    const CheckpointTensor* t = ckpt.Find(prefix + "layers." + std::to_string(i) + ".layer_scalar");
    if (!t) return NotFound("tensor " + prefix + "layers." + std::to_string(i) + ".layer_scalar is missing");
    uint8_t raw[4] = {0, 0, 0, 0};
    G4_RETURN_IF_ERROR(ckpt.file(t->file).Read(t->info.offset, t->info.bytes, raw));
    uint16_t h;
    std::memcpy(&h, raw, 2);
    float f;
    std::memcpy(&f, raw, 4);
    const DType d = t->info.dtype;
    (*out)[i] = d == DType::kF32 ? f : d == DType::kBF16 ? Bf16ToF32(h) : F16ToF32(h);
  }
  return Status::Ok();
}

namespace {

// The checkpoint's tensors a plan reads: the weights and the scales of quantized ones.
std::set<std::string> UsedNames(const WeightPlan& plan) {
  std::set<std::string> used;
  for (const WeightPlan::Item& item : plan.items) {
    used.insert(item.tensor->info.name);
    if (item.scales) used.insert(item.scales->info.name);
  }
  return used;
}

}  // namespace

Status CheckUnused(const Checkpoint& ckpt, const WeightPlan& plan,
                   const std::function<bool(const std::string&)>& disagrees) {
  const std::set<std::string> used = UsedNames(plan);
  const CheckpointTensor* first = nullptr;
  std::string first_name;
  int more = 0;
  for (const auto& [name, t] : ckpt.tensors()) {
    if (used.count(name) || IsOtherTower(name) || !disagrees(name)) continue;
    if (first) {
      ++more;
    } else {
      first = &t;
      first_name = name;
    }
  }
  if (!first) return Status::Ok();
  return InvalidArgument(ckpt.file(first->file).Name() + ": tensor " + first_name +
                         (more ? " (and " + std::to_string(more) + " more)" : std::string()) +
                         " is not part of the model its config.json describes; the checkpoint and its config disagree");
}

Result<std::unique_ptr<ModelPlan>> PlanModel(const ModelConfig& config, const Checkpoint& ckpt) {
  auto mp = std::make_unique<ModelPlan>();
  G4_ASSIGN_OR_RETURN(mp->prefix, DetectPrefix(ckpt));
  mp->specs = ListWeights(config, &mp->slots);
  for (WeightSpec& s : mp->specs) s.name = mp->prefix + s.name;
  G4_ASSIGN_OR_RETURN(mp->plan, PlanWeights(ckpt, mp->specs));
  // A layer past num_hidden_layers, or experts and a router the config leaves off. (Other text
  // tensors may go unread: E2B's released checkpoints keep keys and values for the layers that
  // share another's cache.)
  const std::string layers = mp->prefix + "layers.";
  G4_RETURN_IF_ERROR(CheckUnused(ckpt, mp->plan, [&](const std::string& name) {
    if (name.find(".experts.") != std::string::npos || name.find(".router.") != std::string::npos) return true;
    if (name.rfind(layers, 0) != 0) return false;
    return std::atoll(name.c_str() + layers.size()) >= config.num_layers;
  }));
  return mp;
}

Status LoadWeights(const ModelConfig& config, const Checkpoint& ckpt, Backend& backend, ModelWeights* weights,
                   std::vector<std::unique_ptr<Buffer>>* buffers, LoadReport* report) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<ModelPlan> mp, PlanModel(config, ckpt));
  const WeightPlan& plan = mp->plan;
  ModelWeights& staged = mp->slots;
  report->prefix = mp->prefix;
  std::vector<std::unique_ptr<Buffer>> loaded;
  std::map<std::string, uint64_t> by_dtype;
  G4_RETURN_IF_ERROR(LoadPlan(ckpt, plan, backend, &loaded, &by_dtype));
  G4_RETURN_IF_ERROR(ReadLayerScalars(ckpt, mp->prefix, config.num_layers, &staged.layer_scalars));

  const std::set<std::string> used = UsedNames(plan);
  report->used_tensors = static_cast<int>(used.size());
  report->skipped_tensors = 0;
  report->unused_tensors.clear();
  for (const auto& [name, t] : ckpt.tensors()) {
    if (used.count(name)) continue;
    if (IsOtherTower(name)) {
      report->skipped_tensors++;
    } else {
      report->unused_tensors.push_back(name);
    }
  }
  report->bytes_by_dtype = by_dtype;
  *weights = std::move(staged);
  for (auto& b : loaded) buffers->push_back(std::move(b));
  return Status::Ok();
}

}  // namespace g4
