#include "tokenizer/chat.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace g4 {
namespace {

// Whitespace as Python's str.strip() sees it (the reference templates trim with it).
bool IsSpaceAt(std::string_view s, size_t i, size_t* len) {
  static const char* kMulti[] = {"\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
                                 "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
                                 "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
                                 "\xE3\x80\x80"};
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) {
    *len = 1;
    return true;
  }
  for (const char* m : kMulti) {
    const size_t n = std::char_traits<char>::length(m);
    if (s.compare(i, n, m) == 0) {
      *len = n;
      return true;
    }
  }
  return false;
}

std::string Trim(std::string_view s) {
  size_t begin = 0, len;
  while (begin < s.size() && IsSpaceAt(s, begin, &len)) begin += len;
  size_t end = s.size();
  while (end > begin) {
    // Step back to the start of the last character and test it.
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
    if (!IsSpaceAt(s, start, &len) || start + len != end) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

}  // namespace

Result<ChatFormat> DetectChatFormat(const Tokenizer& tok) {
  if (tok.TokenId("<|turn>") >= 0 && tok.TokenId("<turn|>") >= 0) return ChatFormat::kGemma4;
  if (tok.TokenId("<start_of_turn>") >= 0 && tok.TokenId("<end_of_turn>") >= 0) return ChatFormat::kGemma3;
  return FailedPrecondition("chat: the vocabulary has neither <|turn>/<turn|> (Gemma 4) nor "
                            "<start_of_turn>/<end_of_turn> (Gemma 3)");
}

Result<std::string> RenderChat(const Tokenizer& tok, const std::vector<ChatMessage>& messages,
                               bool add_generation_prompt) {
  G4_ASSIGN_OR_RETURN(ChatFormat format, DetectChatFormat(tok));
  const bool g4 = format == ChatFormat::kGemma4;
  const std::string open = g4 ? "<|turn>" : "<start_of_turn>";
  const std::string close = g4 ? "<turn|>" : "<end_of_turn>";
  std::string out = tok.bos_id() >= 0 ? tok.Piece(tok.bos_id()) : std::string();
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") {
    // Gemma 3 prepends the system text as it is; Gemma 4 gives it a trimmed turn of its own.
    system = g4 ? Trim(messages[0].content) : messages[0].content;
    first = 1;
    if (g4) out += open + "system\n" + system + close + "\n";
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant" && r != "model") {
      return InvalidArgument("chat: message " + std::to_string(i) + " has an unknown role '" + r +
                             "' (known: system, user, assistant, model)");
    }
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool user_turn = (i - first) % 2 == 0;
    std::string role = m.role == "assistant" ? "model" : m.role;
    if ((user_turn && role != "user") || (!user_turn && role != "model")) {
      return InvalidArgument("chat: message " + std::to_string(i) + " has role '" + m.role +
                             "'; turns must alternate user/assistant, starting with user");
    }
    std::string content = Trim(m.content);
    if (!g4 && i == first && first == 1) content = system + "\n\n" + content;
    out += open + role + "\n" + content + close + "\n";
  }
  if (add_generation_prompt) out += open + "model\n";
  return out;
}

Result<std::vector<ChatMessage>> ParseChatMessages(const nlohmann::json& messages, const std::string& where) {
  if (!messages.is_array() || messages.empty()) return InvalidArgument(where + " must be a non-empty list");
  std::vector<ChatMessage> list;
  for (size_t i = 0; i < messages.size(); ++i) {
    const nlohmann::json& m = messages[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!m.is_object()) return InvalidArgument(at + " must be an object");
    for (const auto& [key, value] : m.items()) {
      if (key != "role" && key != "content" && key != "name") return InvalidArgument(at + ": unknown field '" + key + "'");
    }
    if (!m.contains("role") || !m["role"].is_string()) return InvalidArgument(at + ".role must be a string");
    if (!m.contains("content") || !m["content"].is_string()) return InvalidArgument(at + ".content must be a string");
    list.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return list;
}

}  // namespace g4
