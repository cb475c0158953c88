// libFuzzer target: chat messages as a request gives them (JSON, as the HTTP server and the
// JavaScript API pass them on), rendered in the chat format of the real Gemma vocabulary (loaded
// once from $G4_FUZZ_TOKENIZER) and encoded. Accepted messages must render to a prompt that
// begins with BOS, ends with the model's turn and encodes to ids of the vocabulary.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/gemma_tokenizer.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace {
std::unique_ptr<g4::Tokenizer> tok;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tok = LoadFuzzTokenizer("fuzz_chat_messages");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto list = g4::ParseChatMessages(j, "messages");
  if (!list.ok()) return 0;
  if (list->empty() || list->size() != j.size()) std::abort();
  for (bool add_generation_prompt : {true, false}) {
    auto text = g4::RenderChat(*tok, *list, add_generation_prompt);
    if (!text.ok()) continue;
    const std::string bos = tok->Piece(tok->bos_id());
    if (text->compare(0, bos.size(), bos) != 0) std::abort();
    const std::string model_turn = "model\n";
    const bool ends_with_model_turn = text->size() >= model_turn.size() &&
                                      text->compare(text->size() - model_turn.size(), model_turn.size(), model_turn) == 0;
    if (add_generation_prompt && !ends_with_model_turn) std::abort();
    for (int32_t id : tok->Encode(*text)) {
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    }
  }
  return 0;
}
