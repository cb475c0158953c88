#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/reader.h"

namespace g4 {
namespace {

using nlohmann::json;

// Why `text` is not a JSON object: where its syntax breaks (JSON has no NaN or Infinity), or
// that it is valid JSON of another kind.
class SyntaxErrorSax : public nlohmann::json_sax<json> {
 public:
  std::string problem;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception&) override {
    std::string near = last_token.substr(0, 40);
    for (char& c : near) c = static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    problem = "not valid JSON: it breaks at byte " + std::to_string(position) + " (near '" + near + "')";
    return false;
  }
};

std::string NotAnObject(const std::string& text) {
  SyntaxErrorSax sax;
  json::sax_parse(text, &sax);
  return sax.problem.empty() ? "not a JSON object" : sax.problem;
}

// Reads fields of one JSON object, with errors that name the file and field.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  const json* Find(const char* key) const {
    auto it = obj_.find(key);
    return (it == obj_.end() || it->is_null()) ? nullptr : &*it;
  }
  Status Int(const char* key, int* out, bool required, int min_value = 0) const {
    const json* v = Find(key);
    if (!v) return required ? InvalidArgument(where_ + key + ": required field is missing") : Status::Ok();
    if (!v->is_number_integer()) return InvalidArgument(where_ + key + ": expected an integer");
    // An unsigned value past int64 would read as negative: its text says what was given.
    const bool big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(1 << 30);
    const int64_t x = big ? int64_t{1} << 31 : v->get<int64_t>();
    if (x < min_value || x > (1 << 30)) {
      return InvalidArgument(where_ + key + ": value " + v->dump() + " is out of range [" + std::to_string(min_value) +
                             ", " + std::to_string(1 << 30) + "]");
    }
    *out = static_cast<int>(x);
    return Status::Ok();
  }
  Status Float(const char* key, double* out) const {
    const json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_number()) return InvalidArgument(where_ + key + ": expected a number");
    *out = v->get<double>();
    if (!std::isfinite(*out)) return InvalidArgument(where_ + key + ": not finite");
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    const json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_boolean()) return InvalidArgument(where_ + key + ": expected true or false");
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string* out) const {
    const json* v = Find(key);
    if (!v) return Status::Ok();
    if (!v->is_string()) return InvalidArgument(where_ + key + ": expected a string");
    *out = v->get<std::string>();
    return Status::Ok();
  }
  const std::string& where() const { return where_; }

 private:
  const json& obj_;
  std::string where_;
};

// A token id or a list of them, each an integer in [0, 2^31); the callers check the vocabulary.
Status ParseTokenIds(const json& v, const std::string& where, std::vector<int>* out) {
  out->clear();
  if (!v.is_number_integer() && !v.is_array()) return InvalidArgument(where + ": expected a token id or a list of them");
  for (const json& e : v.is_array() ? v : json::array({v})) {
    const bool fits = e.is_number_unsigned() ? e.get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)
                                             : e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() <= INT32_MAX;
    if (!fits) return InvalidArgument(where + ": " + e.dump() + " is not a token id (an integer from 0)");
    out->push_back(static_cast<int>(e.get<int64_t>()));
  }
  return Status::Ok();
}

struct RopeParams {
  std::string type = "default";
  double theta = 10000.0, partial = 1.0, factor = 1.0;
};

Status ParseRope(const Fields& text, const std::string& layer_type, RopeParams* rope) {
  if (layer_type == "full_attention") {
    rope->type = "proportional";
    rope->theta = 1e6;
    rope->partial = 0.25;
  }
  const json* all = text.Find("rope_parameters");
  if (!all) return Status::Ok();
  if (!all->is_object()) return InvalidArgument(text.where() + "rope_parameters: expected an object");
  auto it = all->find(layer_type);
  if (it == all->end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidArgument(text.where() + "rope_parameters." + layer_type + ": expected an object");
  Fields f(*it, text.where() + "rope_parameters." + layer_type + ".");
  rope->type = "default";
  rope->partial = 1.0;
  G4_RETURN_IF_ERROR(f.String("rope_type", &rope->type));
  G4_RETURN_IF_ERROR(f.Float("rope_theta", &rope->theta));
  G4_RETURN_IF_ERROR(f.Float("partial_rotary_factor", &rope->partial));
  G4_RETURN_IF_ERROR(f.Float("factor", &rope->factor));
  if (rope->type != "default" && rope->type != "proportional") {
    return Unimplemented(f.where() + "rope_type: '" + rope->type + "' is not supported (default, proportional)");
  }
  // Bounds that keep every inverse frequency a finite float: theta^(-2i/d) / factor.
  auto in = [&](const char* key, double v, const char* range, double lo, double hi) -> Status {
    if (v >= lo && v <= hi) return Status::Ok();
    return InvalidArgument(f.where() + key + ": " + it->value(key, json(v)).dump() + " is outside " + range);
  };
  G4_RETURN_IF_ERROR(in("rope_theta", rope->theta, "[1, 1e30]", 1.0, 1e30));
  G4_RETURN_IF_ERROR(in("factor", rope->factor, "[1e-30, 1e30]", 1e-30, 1e30));
  return in("partial_rotary_factor", rope->partial, "[0, 1]", 0.0, 1.0);
}

}  // namespace

Result<std::vector<float>> RopeInverseFrequencies(const std::string& rope_type, double theta, double partial,
                                                  double factor, int head_dim) {
  if (head_dim <= 0 || head_dim % 2) return InvalidArgument("RoPE head_dim must be even and positive");
  const int half = head_dim / 2;
  int rotated = half;
  if (rope_type == "proportional") {
    rotated = static_cast<int>(std::floor(partial * head_dim / 2.0));
    if (rotated > half) rotated = half;
  } else if (rope_type != "default") {
    return Unimplemented("rope_type '" + rope_type + "' is not supported");
  }
  std::vector<float> inv(half, 0.0f);
  for (int i = 0; i < rotated; ++i) {
    // As the reference: exponent (2i as float) / D in float32, base ** exponent, reciprocal.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float powv = static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
    inv[i] = (1.0f / powv) / static_cast<float>(factor);
  }
  return inv;
}

size_t ModelConfig::KvBytesPerPosition() const {
  size_t bytes = 0;
  for (const auto& l : layers) {
    if (!l.kv_shared) bytes += 2ull * l.kv_heads * l.head_dim * sizeof(float);
  }
  return bytes;
}

std::string ModelConfig::Describe() const {
  std::ostringstream s;
  s << "model_type " << model_type << "\n"
    << "vocab " << vocab << ", hidden " << hidden << ", layers " << num_layers << ", intermediate " << intermediate
    << "\n"
    << "final_logit_softcapping " << (final_softcap ? std::to_string(*final_softcap) : std::string("none"))
    << ", rms_norm_eps " << rms_eps << "\n"
    << "per-layer embeddings " << (ple_dim ? std::to_string(ple_dim) : std::string("none"))
    << ", kv-shared layers " << num_kv_shared_layers << "\n";
  if (moe) {
    s << "moe: " << num_experts << " experts, top " << top_k_experts << ", expert width " << moe_intermediate << "\n";
  }
  s << "eos ids";
  for (int id : eos_ids) s << " " << id;
  s << "\n";
  for (int i = 0; i < num_layers; ++i) {
    const LayerConfig& l = layers[i];
    int rotated = 0;
    for (float f : l.inv_freq) rotated += f != 0.0f;
    s << "layer " << i << ": " << (l.type == AttentionType::kSliding ? "sliding" : "full") << " heads " << l.heads
      << "/" << l.kv_heads << " head_dim " << l.head_dim;
    if (l.window) s << " window " << l.window;
    s << " rope " << rotated << "/" << l.head_dim / 2 << " mlp " << l.intermediate;
    if (l.k_eq_v) s << " k=v";
    if (l.kv_shared) s << " kv from layer " << l.kv_source;
    s << "\n";
  }
  return s.str();
}

namespace {

// The text decoder of `root` (a gemma4_text config or a container with text_config). With
// `query_only` (an MTP assistant's decoder) every layer reads K/V handed in from outside.
Result<ModelConfig> ParseText(const json& root, const std::string& source, bool query_only) {
  ModelConfig c;
  Fields top(root, source + ": ");
  G4_RETURN_IF_ERROR(top.String("model_type", &c.model_type));
  const json* text_obj = &root;
  std::string where = source + ": ";
  if (c.model_type == "gemma4") {
    text_obj = top.Find("text_config");
    if (!text_obj || !text_obj->is_object()) return InvalidArgument(source + ": text_config: required object is missing");
    where = source + ": text_config.";
  } else if (c.model_type != "gemma4_text") {
    return InvalidArgument(source + ": model_type: '" + c.model_type + "' is not a Gemma 4 text model "
                           "(gemma4_text or gemma4)");
  }
  Fields t(*text_obj, where);
  std::string inner_type = "gemma4_text";
  G4_RETURN_IF_ERROR(t.String("model_type", &inner_type));
  if (inner_type != "gemma4_text") return InvalidArgument(where + "model_type: expected gemma4_text");

  int q_heads = 0, kv_heads = 0, head_dim = 0, window = 512;
  G4_RETURN_IF_ERROR(t.Int("vocab_size", &c.vocab, true, 1));
  G4_RETURN_IF_ERROR(t.Int("hidden_size", &c.hidden, true, 1));
  G4_RETURN_IF_ERROR(t.Int("num_hidden_layers", &c.num_layers, true, 1));
  G4_RETURN_IF_ERROR(t.Int("intermediate_size", &c.intermediate, true, 1));
  G4_RETURN_IF_ERROR(t.Int("num_attention_heads", &q_heads, true, 1));
  G4_RETURN_IF_ERROR(t.Int("num_key_value_heads", &kv_heads, true, 1));
  G4_RETURN_IF_ERROR(t.Int("head_dim", &head_dim, true, 2));
  G4_RETURN_IF_ERROR(t.Int("sliding_window", &window, false, 1));
  double eps = 1e-6;
  G4_RETURN_IF_ERROR(t.Float("rms_norm_eps", &eps));
  c.rms_eps = static_cast<float>(eps);
  // Zero would divide by zero on a zero row and a negative value by the root of a negative one;
  // above 1 the norm would flatten every row toward zero.
  if (!(c.rms_eps > 0 && c.rms_eps <= 1)) {
    return InvalidArgument(where + "rms_norm_eps: must be in (0, 1] as a float (it is " + t.Find("rms_norm_eps")->dump() + ")");
  }
  if (const json* sc = t.Find("final_logit_softcapping")) {
    if (!sc->is_number()) return InvalidArgument(where + "final_logit_softcapping: expected a number or null");
    c.final_softcap = static_cast<float>(sc->get<double>());
    if (!(*c.final_softcap > 0 && std::isfinite(*c.final_softcap))) {
      return InvalidArgument(where + "final_logit_softcapping: must be positive and finite as a float (it is " + sc->dump() + ")");
    }
  }
  G4_RETURN_IF_ERROR(top.Bool("tie_word_embeddings", &c.tie_word_embeddings));
  G4_RETURN_IF_ERROR(t.Bool("tie_word_embeddings", &c.tie_word_embeddings));
  G4_RETURN_IF_ERROR(t.Int("hidden_size_per_layer_input", &c.ple_dim, false, 0));
  c.ple_vocab = c.vocab;
  G4_RETURN_IF_ERROR(t.Int("vocab_size_per_layer_input", &c.ple_vocab, false, 0));
  if (c.ple_dim && c.ple_vocab < 1) return InvalidArgument(where + "vocab_size_per_layer_input: must be positive");
  G4_RETURN_IF_ERROR(t.Int("num_kv_shared_layers", &c.num_kv_shared_layers, false, 0));
  bool k_eq_v = false, double_wide = false, attention_bias = false;
  G4_RETURN_IF_ERROR(t.Bool("attention_k_eq_v", &k_eq_v));
  G4_RETURN_IF_ERROR(t.Bool("use_double_wide_mlp", &double_wide));
  G4_RETURN_IF_ERROR(t.Bool("enable_moe_block", &c.moe));
  G4_RETURN_IF_ERROR(t.Bool("attention_bias", &attention_bias));
  if (attention_bias) return Unimplemented(where + "attention_bias: true is not supported");
  std::string activation = "gelu_pytorch_tanh";
  G4_RETURN_IF_ERROR(t.String("hidden_activation", &activation));
  if (activation != "gelu_pytorch_tanh") {
    return Unimplemented(where + "hidden_activation: '" + activation + "' is not supported (gelu_pytorch_tanh)");
  }
  if (const json* bidi = t.Find("use_bidirectional_attention")) {
    return Unimplemented(where + "use_bidirectional_attention: " + bidi->dump() + " is not supported (text decoding is causal)");
  }
  if (c.moe) {
    G4_RETURN_IF_ERROR(t.Int("num_experts", &c.num_experts, true, 1));
    G4_RETURN_IF_ERROR(t.Int("top_k_experts", &c.top_k_experts, true, 1));
    G4_RETURN_IF_ERROR(t.Int("moe_intermediate_size", &c.moe_intermediate, true, 1));
    if (c.top_k_experts > c.num_experts) return InvalidArgument(where + "top_k_experts: more than num_experts");
  }
  if (query_only && (c.ple_dim || c.moe)) {
    return InvalidArgument(where + "an assistant's decoder has no per-layer embeddings and no experts");
  }
  if (!query_only && c.num_kv_shared_layers >= c.num_layers) {
    return InvalidArgument(where + "num_kv_shared_layers: must be less than num_hidden_layers");
  }
  // An assistant's layers have no K/V of their own: they read the donor's KV heads, so their
  // own num_key_value_heads (and its per-layer or global forms) is not checked here.
  if (!query_only && (kv_heads > q_heads || q_heads % kv_heads)) {
    return InvalidArgument(where + "num_key_value_heads: must divide num_attention_heads");
  }

  // Layer types: given, or the default (5 sliding, 1 full); the last layer is always full.
  std::vector<std::string> types;
  if (const json* lt = t.Find("layer_types")) {
    if (!lt->is_array() || static_cast<int>(lt->size()) != c.num_layers) {
      return InvalidArgument(where + "layer_types: expected a list of num_hidden_layers entries");
    }
    for (const json& e : *lt) {
      if (!e.is_string() || (e != "sliding_attention" && e != "full_attention")) {
        return InvalidArgument(where + "layer_types: entries must be sliding_attention or full_attention");
      }
      types.push_back(e.get<std::string>());
    }
  } else {
    for (int i = 0; i < c.num_layers; ++i) types.push_back((i + 1) % 6 ? "sliding_attention" : "full_attention");
  }
  types.back() = "full_attention";

  // Full-layer overrides: per_layer_config {index: {head_dim, num_key_value_heads, ...}}, or
  // global_head_dim (default 512) and num_global_key_value_heads (only with attention_k_eq_v).
  std::vector<int> layer_head_dim(c.num_layers, head_dim), layer_kv(c.num_layers, kv_heads),
      layer_heads(c.num_layers, q_heads);
  if (const json* plc = t.Find("per_layer_config")) {
    if (!plc->is_object()) return InvalidArgument(where + "per_layer_config: expected an object");
    for (auto it = plc->begin(); it != plc->end(); ++it) {
      const std::string& key = it.key();
      int idx = -1;
      if (!key.empty() && key.size() < 7 && key.find_first_not_of("0123456789") == std::string::npos) {
        idx = std::stoi(key);
      }
      if (idx < 0 || idx >= c.num_layers) {
        return InvalidArgument(where + "per_layer_config: key '" + key + "' is not a layer index");
      }
      if (!it.value().is_object()) return InvalidArgument(where + "per_layer_config." + key + ": expected an object");
      Fields f(it.value(), where + "per_layer_config." + key + ".");
      G4_RETURN_IF_ERROR(f.Int("head_dim", &layer_head_dim[idx], false, 2));
      G4_RETURN_IF_ERROR(f.Int("num_key_value_heads", &layer_kv[idx], false, 1));
      G4_RETURN_IF_ERROR(f.Int("num_attention_heads", &layer_heads[idx], false, 1));
    }
  } else {
    int global_head_dim = 512, global_kv = 0;
    G4_RETURN_IF_ERROR(t.Int("global_head_dim", &global_head_dim, false, 2));
    G4_RETURN_IF_ERROR(t.Int("num_global_key_value_heads", &global_kv, false, 1));
    for (int i = 0; i < c.num_layers; ++i) {
      if (types[i] != "full_attention") continue;
      layer_head_dim[i] = global_head_dim;
      if (k_eq_v && global_kv) layer_kv[i] = global_kv;
    }
  }

  RopeParams rope_sliding, rope_full;
  G4_RETURN_IF_ERROR(ParseRope(t, "sliding_attention", &rope_sliding));
  G4_RETURN_IF_ERROR(ParseRope(t, "full_attention", &rope_full));

  const int first_shared = c.num_layers - c.num_kv_shared_layers;
  c.layers.resize(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    LayerConfig& l = c.layers[i];
    const bool full = types[i] == "full_attention";
    l.type = full ? AttentionType::kFull : AttentionType::kSliding;
    l.head_dim = layer_head_dim[i];
    l.heads = layer_heads[i];
    l.kv_heads = layer_kv[i];
    l.window = full ? 0 : window;
    l.k_eq_v = k_eq_v && full;
    l.kv_shared = query_only || (c.num_kv_shared_layers > 0 && i >= first_shared);
    l.kv_source = query_only ? -1 : i;
    l.intermediate = c.intermediate * ((double_wide && l.kv_shared && !query_only) ? 2 : 1);
    const std::string layer_where = where + "layer " + std::to_string(i) + ": ";
    if (l.head_dim % 2) return InvalidArgument(layer_where + "head_dim must be even");
    if (!query_only && (l.kv_heads > l.heads || l.heads % l.kv_heads)) {
      return InvalidArgument(layer_where + "key/value heads must divide query heads");
    }
    if (l.kv_shared && !query_only) {
      int src = -1;
      for (int j = first_shared - 1; j >= 0; --j) {
        if (types[j] == types[i]) { src = j; break; }
      }
      if (src < 0) return InvalidArgument(layer_where + "KV-shared layer has no earlier layer of its type to read");
      l.kv_source = src;
    }
    const RopeParams& rp = full ? rope_full : rope_sliding;
    auto inv = RopeInverseFrequencies(rp.type, rp.theta, rp.partial, rp.factor, l.head_dim);
    if (!inv.ok()) return inv.status().WithContext(layer_where.substr(0, layer_where.size() - 2));
    l.inv_freq = std::move(inv).value();
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerConfig& l = c.layers[i];
    if (l.kv_shared && !query_only) {
      const LayerConfig& s = c.layers[l.kv_source];
      if (s.head_dim != l.head_dim || s.kv_heads != l.kv_heads || l.heads % s.kv_heads) {
        return InvalidArgument(where + "layer " + std::to_string(i) + ": head shape differs from its K/V source layer " +
                               std::to_string(l.kv_source));
      }
    }
  }

  // Token ids: the text config's, the container's where it sets them.
  for (const Fields* f : {&t, &top}) {
    G4_RETURN_IF_ERROR(f->Int("bos_token_id", &c.bos_id, false, 0));
    G4_RETURN_IF_ERROR(f->Int("pad_token_id", &c.pad_id, false, 0));
    if (const json* eos = f->Find("eos_token_id")) {
      G4_RETURN_IF_ERROR(ParseTokenIds(*eos, f->where() + "eos_token_id", &c.eos_ids));
    }
  }
  for (int id : c.eos_ids) {
    if (id >= c.vocab) return InvalidArgument(source + ": eos_token_id " + std::to_string(id) + " is outside the vocabulary");
  }
  return c;
}

}  // namespace

Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(source + ": " + NotAnObject(json_text));
  return ParseText(root, source, /*query_only=*/false);
}

Result<AssistantConfig> ParseAssistantConfig(const std::string& json_text, const std::string& source) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(source + ": " + NotAnObject(json_text));
  Fields top(root, source + ": ");
  std::string type;
  G4_RETURN_IF_ERROR(top.String("model_type", &type));
  if (type != "gemma4_assistant") {
    return InvalidArgument(source + ": model_type: '" + type + "' is not a Gemma 4 assistant (gemma4_assistant)");
  }
  const json* text = top.Find("text_config");
  if (!text || !text->is_object()) return InvalidArgument(source + ": text_config: required object is missing");
  AssistantConfig a;
  G4_ASSIGN_OR_RETURN(a.text, ParseText(json{{"model_type", "gemma4"}, {"text_config", *text}}, source, true));
  a.text.model_type = "gemma4_assistant";
  G4_RETURN_IF_ERROR(top.Int("backbone_hidden_size", &a.backbone_hidden, true, 1));
  G4_RETURN_IF_ERROR(top.Bool("use_ordered_embeddings", &a.ordered_embeddings));
  if (a.ordered_embeddings) {
    G4_RETURN_IF_ERROR(top.Int("num_centroids", &a.num_centroids, true, 1));
    G4_RETURN_IF_ERROR(top.Int("centroid_intermediate_top_k", &a.centroid_top_k, true, 1));
    if (a.text.vocab % a.num_centroids) {
      return InvalidArgument(source + ": num_centroids: must divide the vocabulary (" + std::to_string(a.text.vocab) + ")");
    }
    if (a.centroid_top_k > a.num_centroids) {
      return InvalidArgument(source + ": centroid_intermediate_top_k: more than num_centroids");
    }
  }
  return a;
}

Status ApplyGenerationConfig(const std::string& json_text, const std::string& source, ModelConfig* config) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(source + ": " + NotAnObject(json_text));
  auto it = root.find("eos_token_id");
  if (it != root.end() && !it->is_null()) {
    std::vector<int> ids;
    G4_RETURN_IF_ERROR(ParseTokenIds(*it, source + ": eos_token_id", &ids));
    for (int id : ids) {
      if (id >= config->vocab) return InvalidArgument(source + ": eos_token_id " + std::to_string(id) + " is outside the vocabulary");
    }
    config->eos_ids = ids;
  }
  // Sampling defaults.
  bool do_sample = false;
  if (auto d = root.find("do_sample"); d != root.end() && !d->is_null()) {
    if (!d->is_boolean()) return InvalidArgument(source + ": do_sample: expected true or false");
    do_sample = d->get<bool>();
  }
  auto number = [&](const char* key, double lo, double hi, double* out) -> Status {
    auto v = root.find(key);
    if (v == root.end() || v->is_null()) return Status::Ok();
    if (!v->is_number() || !(v->get<double>() >= lo && v->get<double>() <= hi)) {
      return InvalidArgument(source + ": " + key + ": expected a number in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
    }
    *out = v->get<double>();
    return Status::Ok();
  };
  double temperature = 1.0, top_k = 0.0, top_p = 1.0;
  G4_RETURN_IF_ERROR(number("temperature", 0.0, 100.0, &temperature));
  G4_RETURN_IF_ERROR(number("top_k", 0.0, 1 << 30, &top_k));
  G4_RETURN_IF_ERROR(number("top_p", 1e-6, 1.0, &top_p));
  if (top_k != static_cast<int>(top_k)) return InvalidArgument(source + ": top_k: expected an integer");
  config->default_temperature = do_sample ? static_cast<float>(temperature) : 0.0f;
  config->default_top_k = static_cast<int>(top_k);
  config->default_top_p = static_cast<float>(top_p);
  return Status::Ok();
}

Result<ModelConfig> LoadModelConfig(const std::string& dir) {
  const std::string path = JoinPath(dir, "config.json");
  G4_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, kMaxConfigBytes));
  G4_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(text, path));
  const std::string gen_path = JoinPath(dir, "generation_config.json");
  if (FileExists(gen_path)) {
    G4_ASSIGN_OR_RETURN(std::string gen_text, ReadTextFile(gen_path, kMaxConfigBytes));
    G4_RETURN_IF_ERROR(ApplyGenerationConfig(gen_text, gen_path, &config));
  }
  return config;
}

}  // namespace g4
