// A Hugging Face `tokenizer.json` tokenizer: BPE with byte fallback, the normalizer,
// pre-tokenizer and decoder the file declares, and added/special tokens matched inside text as
// the reference does (leftmost-longest, before normalization). Everything comes from the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace g4 {

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  // `source` names the file in errors.
  static Result<std::unique_ptr<Tokenizer>> FromJson(std::string_view json_text, const std::string& source);
  ~Tokenizer();

  // Token ids of `text`, with no BOS added. Invalid UTF-8 is read as U+FFFD.
  std::vector<int32_t> Encode(std::string_view text) const;
  // The text of `ids` (special tokens included), as the file's decoder makes it.
  std::string Decode(std::span<const int32_t> ids) const;

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  int TokenId(std::string_view piece) const;  // -1 when absent
  const std::string& Piece(int id) const;     // empty for ids outside the vocabulary
  bool IsSpecial(int id) const;
  // The BOS the file's post-processor adds to single sequences (-1 when none).
  int bos_id() const { return bos_id_; }

  struct Impl;

 private:
  friend class StreamDecoder;
  Tokenizer();
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> pieces_;  // by id
  int bos_id_ = -1;
};

// Turns ids into text as they arrive; Push returns only complete UTF-8, and the concatenation of
// everything returned (Flush included) equals Tokenizer::Decode of all the ids. Byte-fallback
// tokens are held until the run they belong to ends.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer) : tok_(tokenizer) {}
  std::string Push(int32_t id);
  std::string Flush();

 private:
  const Tokenizer& tok_;
  std::vector<int32_t> pending_;
};

}  // namespace g4
