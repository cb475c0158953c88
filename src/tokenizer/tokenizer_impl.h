// Internals of Tokenizer shared by its loader (tokenizer_load.cc) and its encoder/decoder
// (tokenizer.cc).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace g4 {

// A byte trie of added tokens; Match finds the longest token starting at a position.
class TokenTrie {
 public:
  void Insert(std::string_view s, int32_t id);
  // Length of the longest token at text[pos..] (0 if none); its id in *id.
  size_t Match(std::string_view text, size_t pos, int32_t* id) const;
  bool empty() const { return terminal_.size() <= 1; }

 private:
  std::vector<int32_t> terminal_ = {-1};           // per node: token id ending here, or -1
  std::unordered_map<uint64_t, int32_t> edges_;    // (node << 8) | byte -> child node
  std::array<bool, 256> first_{};                  // bytes that start some token
};

// (left id, right id) -> (rank, merged id), open addressing.
class MergeTable {
 public:
  void Reserve(size_t n);
  void Put(int32_t a, int32_t b, int32_t rank, int32_t merged);  // a later Put of a pair wins
  bool Get(int32_t a, int32_t b, int32_t* rank, int32_t* merged) const {
    if (keys_.empty()) return false;
    const uint64_t key = Key(a, b);
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        *rank = values_[i].first;
        *merged = values_[i].second;
        return true;
      }
      if (keys_[i] == kEmpty) return false;
    }
  }
  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t Key(int32_t a, int32_t b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }
  static size_t Hash(uint64_t k) { return static_cast<size_t>((k * 0x9e3779b97f4a7c15ull) >> 17); }
  void Grow();
  std::vector<uint64_t> keys_;
  std::vector<std::pair<int32_t, int32_t>> values_;
  size_t mask_ = 0, count_ = 0;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Tokenizer::Impl {
  struct NormStep {
    enum Kind { kReplace, kPrepend } kind;
    std::string pattern, content;
  };
  struct SplitStep {
    std::string pattern;
    SplitBehavior behavior;
  };
  struct DecodeStep {
    enum Kind { kReplace, kByteFallback, kFuse, kStrip } kind;
    std::string pattern, content;
    int start = 0, stop = 0;
  };

  std::vector<NormStep> normalizer;
  std::vector<SplitStep> pre_tokenizer;
  std::vector<DecodeStep> decoder;

  std::unordered_map<std::string, int32_t> vocab;      // model vocabulary and added tokens
  std::array<int32_t, 128> ascii_ids{};                // one-byte pieces, -1 when absent
  std::unordered_map<uint32_t, int32_t> char_ids;      // other single-character pieces, by packed bytes
  std::array<int32_t, 256> byte_ids{};                 // <0xXX> pieces, -1 when absent
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;
  int32_t unk_id = -1;
  MergeTable merges;
  TokenTrie raw_added;         // added tokens matched on the original text
  TokenTrie normalized_added;  // added tokens matched after normalization
  std::vector<bool> special;   // by id

  std::string Normalize(std::string_view s) const;
  void PreTokenize(const std::string& s, std::vector<std::string_view>* pieces) const;
  void Bpe(std::string_view word, std::vector<int32_t>* out) const;
  void EncodeSegment(std::string_view segment, std::vector<int32_t>* out) const;
  // The decoder chain over token pieces; `first` marks the start of the whole text.
  std::string DecodePieces(std::vector<std::string> pieces) const;
  bool IsByteToken(const std::string& piece) const;
};

}  // namespace g4
