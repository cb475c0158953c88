// Chat prompts in the format the vocabulary implies: Gemma 4 (<|turn>role ... <turn|>) when it
// has those tokens, else Gemma 3 (<start_of_turn>role ... <end_of_turn>).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace g4 {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (or "model")
  std::string content;
};

enum class ChatFormat { kGemma4, kGemma3 };

Result<ChatFormat> DetectChatFormat(const Tokenizer& tok);

// The prompt text, BOS included, ending with the model's turn when `add_generation_prompt`.
// Contents are trimmed of surrounding whitespace, as the reference templates do. Gemma 3 has no
// system turn: a leading system message is prepended to the first user turn. Turns after the
// optional system message must alternate user / assistant, starting with user.
Result<std::string> RenderChat(const Tokenizer& tok, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt);

// Messages given as JSON, [{"role": ..., "content": ..., "name": ...}, ...] (name optional and
// unused): a non-empty list of objects with string role and content and no other fields. Errors
// name `where` and the message's index ("<where>[2].content must be a string").
Result<std::vector<ChatMessage>> ParseChatMessages(const nlohmann::json& messages, const std::string& where);

}  // namespace g4
