// Encoding (added tokens, normalizer, pre-tokenizer, BPE with byte fallback) and decoding.
#include <algorithm>
#include <cstring>
#include <queue>

#include "tokenizer/tokenizer_impl.h"

namespace g4 {
namespace {

// Length of the UTF-8 sequence at s[i] if it is valid, else 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (b < 0x80) return 1;
  if ((b & 0xe0) == 0xc0) { n = 2; cp = b & 0x1f; }
  else if ((b & 0xf0) == 0xe0) { n = 3; cp = b & 0x0f; }
  else if ((b & 0xf8) == 0xf0) { n = 4; cp = b & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

// `text` with every invalid UTF-8 byte replaced by U+FFFD (a copy only when needed).
std::string_view Sanitize(std::string_view text, std::string* storage) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) break;
    i += n;
  }
  if (i == text.size()) return text;
  storage->assign(text.substr(0, i));
  while (i < text.size()) {
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      storage->append("\xEF\xBF\xBD");
      ++i;
    } else {
      storage->append(text.substr(i, n));
      i += n;
    }
  }
  return *storage;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = s->find(from, pos)) != std::string::npos; pos = at + from.size()) {
    out.append(*s, pos, at - pos);
    out += to;
  }
  if (pos == 0) return;
  out.append(*s, pos, std::string::npos);
  *s = std::move(out);
}

}  // namespace

// ---------------------------------------------------------------- added-token trie

void TokenTrie::Insert(std::string_view s, int32_t id) {
  if (s.empty()) return;
  int32_t node = 0;
  for (unsigned char c : s) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | c;
    auto it = edges_.find(key);
    if (it == edges_.end()) {
      terminal_.push_back(-1);
      it = edges_.emplace(key, static_cast<int32_t>(terminal_.size() - 1)).first;
    }
    node = it->second;
  }
  terminal_[node] = id;
  first_[static_cast<unsigned char>(s[0])] = true;
}

size_t TokenTrie::Match(std::string_view text, size_t pos, int32_t* id) const {
  if (!first_[static_cast<unsigned char>(text[pos])]) return 0;
  int32_t node = 0;
  size_t best = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    if (terminal_[node] >= 0) {
      best = i + 1 - pos;
      *id = terminal_[node];
    }
  }
  return best;
}

// ---------------------------------------------------------------- merge table

void MergeTable::Reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  keys_.assign(cap, kEmpty);
  values_.assign(cap, {0, 0});
  mask_ = cap - 1;
  count_ = 0;
}

void MergeTable::Grow() {
  std::vector<uint64_t> keys = std::move(keys_);
  std::vector<std::pair<int32_t, int32_t>> values = std::move(values_);
  Reserve(std::max<size_t>(16, keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != kEmpty) Put(static_cast<int32_t>(keys[i] >> 32), static_cast<int32_t>(keys[i] & 0xffffffffu), values[i].first, values[i].second);
  }
}

void MergeTable::Put(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  if (keys_.empty() || (count_ + 1) * 2 > keys_.size()) Grow();
  const uint64_t key = Key(a, b);
  for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
    if (keys_[i] == kEmpty) {
      keys_[i] = key;
      values_[i] = {rank, merged};
      ++count_;
      return;
    }
    if (keys_[i] == key) {
      values_[i] = {rank, merged};
      return;
    }
  }
}

// ---------------------------------------------------------------- encoding

std::string Tokenizer::Impl::Normalize(std::string_view s) const {
  std::string out(s);
  for (const NormStep& step : normalizer) {
    if (step.kind == NormStep::kReplace) {
      ReplaceAll(&out, step.pattern, step.content);
    } else if (!out.empty()) {
      out.insert(0, step.content);
    }
  }
  return out;
}

void Tokenizer::Impl::PreTokenize(const std::string& s, std::vector<std::string_view>* pieces) const {
  pieces->clear();
  pieces->push_back(s);
  std::vector<std::string_view> next;
  for (const SplitStep& step : pre_tokenizer) {
    next.clear();
    for (std::string_view piece : *pieces) {
      // Pieces between and of the delimiters, then arranged as the behavior says.
      std::vector<std::pair<std::string_view, bool>> parts;  // (text, is delimiter)
      size_t pos = 0;
      for (size_t at; !step.pattern.empty() && (at = piece.find(step.pattern, pos)) != std::string_view::npos;
           pos = at + step.pattern.size()) {
        if (at > pos) parts.emplace_back(piece.substr(pos, at - pos), false);
        parts.emplace_back(piece.substr(at, step.pattern.size()), true);
      }
      if (pos < piece.size()) parts.emplace_back(piece.substr(pos), false);
      std::vector<std::string_view> out;
      auto extend_last = [&](std::string_view p) {  // p directly follows out.back() in memory
        out.back() = std::string_view(out.back().data(), out.back().size() + p.size());
      };
      bool glue = false;  // MergedWithNext: this part joins the delimiter before it
      for (size_t i = 0; i < parts.size(); ++i) {
        const auto& [text, delim] = parts[i];
        const bool prev_delim = i > 0 && parts[i - 1].second;
        switch (step.behavior) {
          case SplitBehavior::kRemoved:
            if (!delim) out.push_back(text);
            break;
          case SplitBehavior::kIsolated:
            out.push_back(text);
            break;
          case SplitBehavior::kContiguous:
            if (delim && prev_delim) {
              extend_last(text);
            } else {
              out.push_back(text);
            }
            break;
          case SplitBehavior::kMergedWithPrevious:  // a delimiter joins a non-delimiter before it
            if (delim && i > 0 && !prev_delim) {
              extend_last(text);
            } else {
              out.push_back(text);
            }
            break;
          case SplitBehavior::kMergedWithNext:  // a delimiter joins a non-delimiter after it
            if (glue) {
              extend_last(text);
            } else {
              out.push_back(text);
            }
            glue = delim && i + 1 < parts.size() && !parts[i + 1].second;
            break;
        }
      }
      for (auto p : out) {
        if (!p.empty()) next.push_back(p);
      }
    }
    pieces->swap(next);
  }
}

void Tokenizer::Impl::Bpe(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    auto it = vocab.find(std::string(word));
    if (it != vocab.end()) {
      out->push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  bool last_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t n = Utf8Length(word, i);
    if (n == 0) n = 1;  // unreachable: Encode sanitizes first
    int32_t id = -1;
    const auto b0 = static_cast<unsigned char>(word[i]);
    if (n == 1 && b0 < 128) {
      id = ascii_ids[b0];
    } else {
      uint32_t key = 0;
      std::memcpy(&key, word.data() + i, n);
      auto it = char_ids.find(key);
      if (it != char_ids.end()) id = it->second;
    }
    if (id >= 0) {
      sym.push_back({id, 0, 0, true});
      last_unk = false;
    } else {
      bool bytes_ok = byte_fallback;
      for (size_t k = 0; bytes_ok && k < n; ++k) bytes_ok = byte_ids[static_cast<unsigned char>(word[i + k])] >= 0;
      if (bytes_ok) {
        for (size_t k = 0; k < n; ++k) sym.push_back({byte_ids[static_cast<unsigned char>(word[i + k])], 0, 0, true});
        last_unk = false;
      } else if (unk_id >= 0) {
        if (!(fuse_unk && last_unk)) sym.push_back({unk_id, 0, 0, true});
        last_unk = true;
      }
    }
    i += n;
  }
  const int32_t count = static_cast<int32_t>(sym.size());
  for (int32_t i = 0; i < count; ++i) {
    sym[i].prev = i - 1;
    sym[i].next = i + 1 < count ? i + 1 : -1;
  }
  // Lowest rank first, then leftmost.
  struct Merge {
    int32_t rank, pos, merged;
    bool operator<(const Merge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Merge, std::vector<Merge>> heap;
  int32_t rank, merged;
  for (int32_t i = 0; i + 1 < count; ++i) {
    if (merges.Get(sym[i].id, sym[i + 1].id, &rank, &merged)) heap.push({rank, i, merged});
  }
  while (!heap.empty()) {
    const Merge top = heap.top();
    heap.pop();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    if (!merges.Get(left.id, right.id, &rank, &merged) || merged != top.merged) continue;  // stale
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = top.pos;
    if (left.prev >= 0 && merges.Get(sym[left.prev].id, left.id, &rank, &merged)) heap.push({rank, left.prev, merged});
    if (left.next >= 0 && merges.Get(left.id, sym[left.next].id, &rank, &merged)) heap.push({rank, top.pos, merged});
  }
  for (int32_t i = 0; i >= 0 && i < count; i = sym[i].next) out->push_back(sym[i].id);
}

void Tokenizer::Impl::EncodeSegment(std::string_view segment, std::vector<int32_t>* out) const {
  if (segment.empty()) return;
  const std::string normalized = Normalize(segment);
  std::vector<std::string_view> pieces;
  auto encode_text = [&](std::string_view text) {
    const std::string owned(text);
    PreTokenize(owned, &pieces);
    for (std::string_view p : pieces) Bpe(p, out);
  };
  if (normalized_added.empty()) {
    encode_text(normalized);
    return;
  }
  size_t start = 0;
  for (size_t i = 0; i < normalized.size();) {
    int32_t id;
    const size_t len = normalized_added.Match(normalized, i, &id);
    if (len == 0) {
      ++i;
      continue;
    }
    encode_text(std::string_view(normalized).substr(start, i - start));
    out->push_back(id);
    i += len;
    start = i;
  }
  encode_text(std::string_view(normalized).substr(start));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text) const {
  std::string storage;
  text = Sanitize(text, &storage);
  std::vector<int32_t> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t id;
    const size_t len = impl_->raw_added.Match(text, i, &id);
    if (len == 0) {
      ++i;
      continue;
    }
    impl_->EncodeSegment(text.substr(start, i - start), &out);
    out.push_back(id);
    i += len;
    start = i;
  }
  impl_->EncodeSegment(text.substr(start), &out);
  return out;
}

// ---------------------------------------------------------------- decoding

bool Tokenizer::Impl::IsByteToken(const std::string& p) const {
  return p.size() == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>' && std::isxdigit(static_cast<unsigned char>(p[3])) &&
         std::isxdigit(static_cast<unsigned char>(p[4]));
}

std::string Tokenizer::Impl::DecodePieces(std::vector<std::string> pieces) const {
  for (const DecodeStep& step : decoder) {
    switch (step.kind) {
      case DecodeStep::kReplace:
        for (std::string& p : pieces) ReplaceAll(&p, step.pattern, step.content);
        break;
      case DecodeStep::kStrip:
        for (std::string& p : pieces) {
          for (int k = 0; k < step.start && p.rfind(step.content, 0) == 0 && !step.content.empty(); ++k) p.erase(0, step.content.size());
          for (int k = 0; k < step.stop && !step.content.empty() && p.size() >= step.content.size() &&
                          p.compare(p.size() - step.content.size(), step.content.size(), step.content) == 0;
               ++k) {
            p.erase(p.size() - step.content.size());
          }
        }
        break;
      case DecodeStep::kFuse: {
        std::string all;
        for (const std::string& p : pieces) all += p;
        pieces.assign(1, std::move(all));
        break;
      }
      case DecodeStep::kByteFallback: {
        // Runs of <0xXX> pieces become their bytes when those form valid UTF-8, else one
        // U+FFFD per byte.
        std::vector<std::string> out;
        std::string run;
        size_t run_count = 0;
        auto flush = [&]() {
          if (!run_count) return;
          std::string storage;
          if (Sanitize(run, &storage).data() == run.data()) {
            out.push_back(run);
          } else {
            for (size_t k = 0; k < run_count; ++k) out.push_back("\xEF\xBF\xBD");
          }
          run.clear();
          run_count = 0;
        };
        for (std::string& p : pieces) {
          if (IsByteToken(p)) {
            run.push_back(static_cast<char>(std::stoi(p.substr(3, 2), nullptr, 16)));
            ++run_count;
          } else {
            flush();
            out.push_back(std::move(p));
          }
        }
        flush();
        pieces = std::move(out);
        break;
      }
    }
  }
  std::string text;
  for (const std::string& p : pieces) text += p;
  return text;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids) const {
  std::vector<std::string> pieces;
  pieces.reserve(ids.size());
  for (int32_t id : ids) pieces.push_back(Piece(id));
  return impl_->DecodePieces(std::move(pieces));
}

std::string StreamDecoder::Push(int32_t id) {
  pending_.push_back(id);
  if (tok_.impl_->IsByteToken(tok_.Piece(id))) return std::string();  // the run may go on
  std::string text = tok_.Decode(pending_);
  pending_.clear();
  return text;
}

std::string StreamDecoder::Flush() {
  std::string text = pending_.empty() ? std::string() : tok_.Decode(pending_);
  pending_.clear();
  return text;
}

// ---------------------------------------------------------------- lookups

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

int Tokenizer::TokenId(std::string_view piece) const {
  auto it = impl_->vocab.find(std::string(piece));
  return it == impl_->vocab.end() ? -1 : it->second;
}

const std::string& Tokenizer::Piece(int id) const {
  static const std::string kEmpty;
  return id >= 0 && id < static_cast<int>(pieces_.size()) ? pieces_[id] : kEmpty;
}

bool Tokenizer::IsSpecial(int id) const {
  return id >= 0 && id < static_cast<int>(impl_->special.size()) && impl_->special[id];
}

}  // namespace g4
