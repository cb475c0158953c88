// libFuzzer target: config.json and generation_config.json parsing. Accepted configs must be
// internally consistent, since the loader and forward pass trust them.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The same bytes as an MTP assistant's config: its decoder must be query-only throughout.
  if (auto a = g4::ParseAssistantConfig(text, "fuzz/assistant/config.json"); a.ok()) {
    for (const auto& l : a->text.layers) {
      if (!l.kv_shared || l.kv_source != -1) std::abort();
    }
    if (a->ordered_embeddings && (a->num_centroids <= 0 || a->text.vocab % a->num_centroids)) std::abort();
  }
  auto r = g4::ParseModelConfig(text, "fuzz/config.json");
  if (!r.ok()) return 0;
  const g4::ModelConfig& c = *r;
  if (static_cast<int>(c.layers.size()) != c.num_layers || c.num_layers < 1) std::abort();
  for (int i = 0; i < c.num_layers; ++i) {
    const g4::LayerConfig& l = c.layers[i];
    if (l.head_dim <= 0 || l.head_dim % 2 || static_cast<int>(l.inv_freq.size()) != l.head_dim / 2) std::abort();
    if (l.kv_heads <= 0 || l.heads % l.kv_heads) std::abort();
    if (l.kv_source < 0 || l.kv_source > i || (l.kv_shared && l.kv_source == i)) std::abort();
    if (c.layers[l.kv_source].kv_shared) std::abort();
  }
  if (c.layers.back().type != g4::AttentionType::kFull) std::abort();
  for (int id : c.eos_ids) {
    if (id < 0 || id >= c.vocab) std::abort();
  }
  g4::ModelConfig copy = c;
  (void)g4::ApplyGenerationConfig(text, "fuzz/generation_config.json", &copy);
  for (int id : copy.eos_ids) {
    if (id < 0 || id >= copy.vocab) std::abort();
  }
  return 0;
}
