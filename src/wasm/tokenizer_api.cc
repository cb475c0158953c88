// The tokenizer as a C API for JavaScript (web/tokenizer.mjs), exported by the WebAssembly module.
// Results are malloc'd; the caller frees them with free(). Errors leave a message for
// g4_last_error and return 0/null.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/chat.h"
#include "wasm/api.h"
#include "tokenizer/tokenizer.h"

using g4::wasm::Copy;
using g4::wasm::CopyText;

namespace {

std::string last_error;

}  // namespace

void g4::wasm::SetLastError(std::string message) { last_error = std::move(message); }

G4_EXPORT(g4_last_error) const char* g4_last_error() { return last_error.c_str(); }

// A tokenizer from tokenizer.json bytes; 0 on error.
G4_EXPORT(g4_tokenizer_load) g4::Tokenizer* g4_tokenizer_load(const char* json, uint32_t length) {
  auto t = g4::Tokenizer::FromJson(std::string_view(json, length), "tokenizer.json");
  if (!t.ok()) {
    last_error = t.status().message();
    return nullptr;
  }
  return std::move(t).value().release();
}

G4_EXPORT(g4_tokenizer_free) void g4_tokenizer_free(g4::Tokenizer* t) { delete t; }

G4_EXPORT(g4_tokenizer_bos) int32_t g4_tokenizer_bos(const g4::Tokenizer* t) { return t->bos_id(); }

// Ids of UTF-8 text (no BOS); their count in *count.
G4_EXPORT(g4_tokenizer_encode) int32_t* g4_tokenizer_encode(const g4::Tokenizer* t, const char* text, uint32_t length,
                                                           uint32_t* count) {
  const std::vector<int32_t> ids = t->Encode(std::string_view(text, length));
  *count = static_cast<uint32_t>(ids.size());
  return Copy(ids.data(), ids.size());
}

// UTF-8 text of ids; its byte length in *length.
G4_EXPORT(g4_tokenizer_decode) char* g4_tokenizer_decode(const g4::Tokenizer* t, const int32_t* ids, uint32_t count,
                                                        uint32_t* length) {
  return CopyText(t->Decode(std::span<const int32_t>(ids, count)), length);
}

// The chat prompt for messages given as JSON [{"role": ..., "content": ...}, ...].
G4_EXPORT(g4_tokenizer_chat) char* g4_tokenizer_chat(const g4::Tokenizer* t, const char* messages, uint32_t size,
                                                    int32_t add_generation_prompt, uint32_t* length) {
  nlohmann::json j = nlohmann::json::parse(messages, messages + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    last_error = "chat: messages are not JSON";
    return nullptr;
  }
  auto list = g4::ParseChatMessages(j, "chat: messages");
  if (!list.ok()) {
    last_error = list.status().message();
    return nullptr;
  }
  auto r = g4::RenderChat(*t, *list, add_generation_prompt != 0);
  if (!r.ok()) {
    last_error = r.status().message();
    return nullptr;
  }
  return CopyText(*r, length);
}
