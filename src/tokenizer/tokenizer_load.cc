// Reading tokenizer.json: the model (BPE vocabulary and merges), added tokens, normalizer,
// pre-tokenizer, decoder and post-processor. Unsupported components are errors that name the
// field, never silently ignored.
#include <cstring>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "io/reader.h"
#include "tokenizer/tokenizer_impl.h"

namespace g4 {
namespace {

using nlohmann::json;

Status Bad(const std::string& where, const std::string& what) { return InvalidArgument(where + ": " + what); }

// A {"String": "x"} pattern; regex patterns are not supported.
Status StringPattern(const json& step, const std::string& where, std::string* out) {
  auto p = step.find("pattern");
  if (p == step.end() || !p->is_object()) return Bad(where, "pattern: expected {\"String\": ...}");
  auto s = p->find("String");
  if (s == p->end() || !s->is_string()) return Unimplemented(where + ": pattern: only String patterns are supported");
  *out = s->get<std::string>();
  return Status::Ok();
}

Status StringField(const json& obj, const char* key, const std::string& where, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return Bad(where, std::string(key) + ": expected a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

// Flattens {"type": "Sequence", <list_key>: [...]} into its steps.
Status Flatten(const json& node, const char* list_key, const std::string& where, std::vector<std::pair<const json*, std::string>>* out) {
  if (node.is_null()) return Status::Ok();
  if (!node.is_object()) return Bad(where, "expected an object or null");
  auto type = node.find("type");
  if (type == node.end() || !type->is_string()) return Bad(where, "type: expected a string");
  if (*type == "Sequence") {
    auto list = node.find(list_key);
    if (list == node.end() || !list->is_array()) return Bad(where, std::string(list_key) + ": expected a list");
    for (size_t i = 0; i < list->size(); ++i) {
      G4_RETURN_IF_ERROR(Flatten((*list)[i], list_key, where + "." + list_key + "[" + std::to_string(i) + "]", out));
    }
    return Status::Ok();
  }
  out->emplace_back(&node, where);
  return Status::Ok();
}

// Reads tokenizer.json in one pass: model.vocab and model.merges (hundreds of thousands of
// entries) stream straight into vectors; everything else becomes a small DOM.
class TokenizerSax final : public nlohmann::json_sax<json> {
 public:
  json root;
  std::vector<std::pair<std::string, uint64_t>> vocab;             // model.vocab, in file order
  std::vector<std::pair<std::string, std::string>> merges;         // model.merges
  std::vector<size_t> bad_merges;                                  // indices of malformed entries
  bool vocab_seen = false, merges_seen = false, vocab_bad = false;
  std::string vocab_bad_key;

  bool null() override { return Value(json()); }
  bool boolean(bool v) override { return Value(json(v)); }
  bool number_integer(number_integer_t v) override { return Value(json(v)); }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == kVocab && depth_ == vocab_depth_) {
      vocab.emplace_back(std::move(key_), v);
      return true;
    }
    return Value(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return Value(json(v)); }
  bool string(string_t& v) override {
    if (mode_ == kMerges) {
      if (depth_ == merges_depth_) {  // "a b"
        const size_t sp = v.find(' ');
        if (sp == std::string::npos || v.find(' ', sp + 1) != std::string::npos) {
          bad_merges.push_back(merges.size());
          merges.emplace_back();
        } else {
          merges.emplace_back(v.substr(0, sp), v.substr(sp + 1));
        }
      } else if (depth_ == merges_depth_ + 1) {  // ["a", "b"]
        pair_.push_back(std::move(v));
      }
      return true;
    }
    return Value(json(std::move(v)));
  }
  bool binary(binary_t&) override { return false; }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (mode_ == kVocab || mode_ == kMerges) return MarkBadIfVocab();
    if (depth_ == 3 && path_model_ && key_ == "vocab") {
      mode_ = kVocab;
      vocab_depth_ = depth_;
      vocab_seen = true;
      return true;
    }
    if (depth_ == 2) path_model_ = key_ == "model";
    return Open(json::object());
  }
  bool end_object() override {
    --depth_;
    if (mode_ == kVocab) {
      if (depth_ < vocab_depth_) mode_ = kNone;
      return true;
    }
    if (mode_ == kMerges) return true;
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (mode_ == kVocab) return MarkBadIfVocab();
    if (mode_ == kMerges) {
      pair_.clear();
      return true;
    }
    if (depth_ == 2) path_model_ = false;
    if (depth_ == 3 && path_model_ && key_ == "merges") {
      mode_ = kMerges;
      merges_depth_ = depth_;
      merges_seen = true;
      return true;
    }
    return Open(json::array());
  }
  bool end_array() override {
    --depth_;
    if (mode_ == kMerges) {
      if (depth_ < merges_depth_) {
        mode_ = kNone;
      } else if (depth_ == merges_depth_) {
        if (pair_.size() != 2) bad_merges.push_back(merges.size());
        merges.emplace_back(pair_.size() == 2 ? pair_[0] : std::string(), pair_.size() == 2 ? pair_[1] : std::string());
      }
      return true;
    }
    if (mode_ == kVocab) return true;
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  enum Mode { kNone, kVocab, kMerges };
  bool MarkBadIfVocab() {
    if (mode_ == kVocab) {
      vocab_bad = true;
      vocab_bad_key = key_;
    }
    return true;
  }
  json* Place(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    return &((*parent)[key_] = std::move(v));
  }
  bool Value(json v) {
    if (mode_ == kVocab) {
      if (depth_ == vocab_depth_) {
        vocab_bad = true;
        vocab_bad_key = key_;
      }
      return true;
    }
    if (mode_ == kMerges) {
      if (depth_ == merges_depth_) {
        bad_merges.push_back(merges.size());
        merges.emplace_back();
      } else {
        pair_.push_back("");  // a non-string inside a pair
        pair_.push_back("");
        pair_.push_back("");
      }
      return true;
    }
    if (stack_.empty()) {
      root = std::move(v);
      return true;
    }
    Place(std::move(v));
    return true;
  }
  bool Open(json v) {
    stack_.push_back(Place(std::move(v)));
    return true;
  }

  Mode mode_ = kNone;
  int depth_ = 0, vocab_depth_ = -1, merges_depth_ = -1;
  bool path_model_ = false;
  std::string key_;
  std::vector<json*> stack_;
  std::vector<std::string> pair_;
};

bool AllFalse(const json& obj, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = obj.find(k);
    if (it != obj.end() && it->is_boolean() && it->get<bool>()) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  G4_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, kMaxTokenizerBytes));
  return FromJson(text, path);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json_text, const std::string& source) {
  TokenizerSax sax;
  if (!json::sax_parse(json_text.begin(), json_text.end(), &sax, nlohmann::detail::input_format_t::json, /*strict=*/true) ||
      !sax.root.is_object()) {
    return InvalidArgument(source + ": not a JSON object");
  }
  const json& root = sax.root;
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  Impl& im = *tok->impl_;

  // --- model
  auto model = root.find("model");
  if (model == root.end() || !model->is_object()) return Bad(source, "model: expected an object");
  const std::string mw = source + ": model";
  std::string type;
  G4_RETURN_IF_ERROR(StringField(*model, "type", mw, &type));
  if (type != "BPE") return Unimplemented(mw + ".type: '" + type + "' is not supported (BPE)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model->find(key);
    if (it != model->end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
      return Unimplemented(mw + "." + key + ": not supported");
    }
  }
  if (auto d = model->find("dropout"); d != model->end() && !d->is_null() && !(d->is_number() && d->get<double>() == 0.0)) {
    return Unimplemented(mw + ".dropout: BPE dropout is not supported");
  }
  auto get_bool = [&](const char* key, bool* out) -> Status {
    auto it = model->find(key);
    if (it == model->end() || it->is_null()) return Status::Ok();
    if (!it->is_boolean()) return Bad(mw, std::string(key) + ": expected true or false");
    *out = it->get<bool>();
    return Status::Ok();
  };
  G4_RETURN_IF_ERROR(get_bool("byte_fallback", &im.byte_fallback));
  G4_RETURN_IF_ERROR(get_bool("fuse_unk", &im.fuse_unk));
  G4_RETURN_IF_ERROR(get_bool("ignore_merges", &im.ignore_merges));
  if (!sax.vocab_seen) return Bad(mw, "vocab: expected an object");
  if (sax.vocab_bad) return Bad(mw, "vocab['" + sax.vocab_bad_key + "']: expected a token id below 2^24");
  int32_t max_id = -1;
  im.vocab.reserve(sax.vocab.size() + 8192);
  // One piece per id and one id per piece: an id shared by two pieces would decode as one of them
  // whichever was meant, and a piece listed twice keeps only one of its ids.
  std::vector<const std::string*> piece_of;  // by id: the vocabulary's piece (map keys stay put)
  for (auto& [piece, raw_id] : sax.vocab) {
    if (raw_id >= (1u << 24)) return Bad(mw, "vocab['" + piece + "']: expected a token id below 2^24");
    const auto id = static_cast<int32_t>(raw_id);
    if (piece_of.size() <= static_cast<size_t>(id)) piece_of.resize(static_cast<size_t>(id) + 1, nullptr);
    if (piece_of[id]) {
      return Bad(mw, "vocab: '" + *piece_of[id] + "' and '" + piece + "' have the same id " + std::to_string(id));
    }
    max_id = std::max(max_id, id);
    auto [it, added] = im.vocab.emplace(std::move(piece), id);
    if (!added) return Bad(mw, "vocab['" + it->first + "']: listed twice");
    piece_of[id] = &it->first;
  }
  // --- added tokens
  struct Added {
    int32_t id;
    std::string content;
    bool special, normalized;
  };
  std::vector<Added> added;
  std::unordered_map<int32_t, size_t> added_at;  // by id: the first added token of that id
  if (auto at = root.find("added_tokens"); at != root.end() && !at->is_null()) {
    if (!at->is_array()) return Bad(source, "added_tokens: expected a list");
    for (size_t i = 0; i < at->size(); ++i) {
      const json& a = (*at)[i];
      const std::string where = source + ": added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object()) return Bad(where, "expected an object");
      auto id = a.find("id");
      if (id == a.end() || !id->is_number_unsigned() || id->get<uint64_t>() >= (1u << 24)) return Bad(where, "id: expected a token id");
      Added e{id->get<int32_t>(), "", false, false};
      G4_RETURN_IF_ERROR(StringField(a, "content", where, &e.content));
      if (e.content.empty()) return Bad(where, "content: empty");
      if (auto s = a.find("special"); s != a.end() && s->is_boolean()) e.special = s->get<bool>();
      if (auto n = a.find("normalized"); n != a.end() && n->is_boolean()) e.normalized = n->get<bool>();
      if (!AllFalse(a, {"lstrip", "rstrip", "single_word"})) {
        return Unimplemented(where + ": lstrip, rstrip and single_word are not supported");
      }
      // An added token may repeat the vocabulary's piece of its id (as Gemma's do), never another.
      const std::string* same_id = static_cast<size_t>(e.id) < piece_of.size() ? piece_of[e.id] : nullptr;
      if (auto seen = added_at.find(e.id); seen != added_at.end()) same_id = &added[seen->second].content;
      if (same_id && *same_id != e.content) {
        return Bad(where, "id " + std::to_string(e.id) + " is already '" + *same_id + "', not '" + e.content + "'");
      }
      added_at.emplace(e.id, added.size());
      added.push_back(std::move(e));
      max_id = std::max(max_id, added.back().id);
    }
  }
  tok->pieces_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [piece, id] : im.vocab) tok->pieces_[id] = piece;
  im.special.assign(tok->pieces_.size(), false);
  for (const Added& a : added) {
    tok->pieces_[a.id] = a.content;
    im.vocab[a.content] = a.id;
    im.special[a.id] = a.special;
    (a.normalized ? im.normalized_added : im.raw_added).Insert(a.content, a.id);
  }
  // Single characters and bytes, for the BPE's first step.
  im.ascii_ids.fill(-1);
  im.byte_ids.fill(-1);
  for (const auto& [piece, id] : im.vocab) {
    const auto b0 = static_cast<unsigned char>(piece[0]);
    const size_t n = b0 < 0x80 ? 1 : (b0 & 0xe0) == 0xc0 ? 2 : (b0 & 0xf0) == 0xe0 ? 3 : (b0 & 0xf8) == 0xf0 ? 4 : 0;
    if (n == piece.size()) {
      if (n == 1) {
        im.ascii_ids[b0] = id;
      } else {
        uint32_t key = 0;
        std::memcpy(&key, piece.data(), n);
        im.char_ids[key] = id;
      }
    }
    if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' && std::isxdigit(static_cast<unsigned char>(piece[3])) &&
        std::isxdigit(static_cast<unsigned char>(piece[4]))) {
      const int b = std::stoi(piece.substr(3, 2), nullptr, 16);
      char canonical[7];
      std::snprintf(canonical, sizeof canonical, "<0x%02X>", b);
      if (piece == canonical) im.byte_ids[b] = id;
    }
  }
  if (auto unk = model->find("unk_token"); unk != model->end() && !unk->is_null()) {
    if (!unk->is_string()) return Bad(mw, "unk_token: expected a string or null");
    auto it = im.vocab.find(unk->get<std::string>());
    if (it == im.vocab.end()) return Bad(mw, "unk_token: '" + unk->get<std::string>() + "' is not in the vocabulary");
    im.unk_id = it->second;
  }
  // Merges: [a, b] pairs or "a b" strings; rank is the position in the list.
  if (!sax.merges_seen) return Bad(mw, "merges: expected a list");
  if (!sax.bad_merges.empty()) {
    return Bad(mw, "merges[" + std::to_string(sax.bad_merges[0]) + "]: expected a pair of strings or \"a b\"");
  }
  im.merges.Reserve(sax.merges.size());
  std::string joined;
  for (size_t i = 0; i < sax.merges.size(); ++i) {
    const auto& [a, b] = sax.merges[i];
    joined.assign(a).append(b);
    auto ia = im.vocab.find(a), ib = im.vocab.find(b), ij = im.vocab.find(joined);
    if (ia == im.vocab.end() || ib == im.vocab.end() || ij == im.vocab.end()) {
      return Bad(mw, "merges[" + std::to_string(i) + "]: '" + a + "' + '" + b + "' is not in the vocabulary");
    }
    im.merges.Put(ia->second, ib->second, static_cast<int32_t>(i), ij->second);
  }

  // --- normalizer
  std::vector<std::pair<const json*, std::string>> steps;
  if (auto n = root.find("normalizer"); n != root.end()) {
    G4_RETURN_IF_ERROR(Flatten(*n, "normalizers", source + ": normalizer", &steps));
  }
  for (const auto& [node, where] : steps) {
    const std::string t = (*node)["type"].get<std::string>();
    Impl::NormStep step{Impl::NormStep::kReplace, "", ""};
    if (t == "Replace") {
      G4_RETURN_IF_ERROR(StringPattern(*node, where, &step.pattern));
      G4_RETURN_IF_ERROR(StringField(*node, "content", where, &step.content));
    } else if (t == "Prepend") {
      step.kind = Impl::NormStep::kPrepend;
      G4_RETURN_IF_ERROR(StringField(*node, "prepend", where, &step.content));
    } else {
      return Unimplemented(where + ".type: '" + t + "' is not supported (Replace, Prepend, Sequence)");
    }
    im.normalizer.push_back(std::move(step));
  }
  // --- pre-tokenizer
  steps.clear();
  if (auto p = root.find("pre_tokenizer"); p != root.end()) {
    G4_RETURN_IF_ERROR(Flatten(*p, "pretokenizers", source + ": pre_tokenizer", &steps));
  }
  for (const auto& [node, where] : steps) {
    const std::string t = (*node)["type"].get<std::string>();
    if (t != "Split") return Unimplemented(where + ".type: '" + t + "' is not supported (Split, Sequence)");
    Impl::SplitStep step;
    G4_RETURN_IF_ERROR(StringPattern(*node, where, &step.pattern));
    std::string behavior;
    G4_RETURN_IF_ERROR(StringField(*node, "behavior", where, &behavior));
    static const std::pair<const char*, SplitBehavior> kBehaviors[] = {
        {"Removed", SplitBehavior::kRemoved}, {"Isolated", SplitBehavior::kIsolated},
        {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious}, {"MergedWithNext", SplitBehavior::kMergedWithNext},
        {"Contiguous", SplitBehavior::kContiguous}};
    bool found = false;
    for (const auto& [name, value] : kBehaviors) {
      if (behavior == name) {
        step.behavior = value;
        found = true;
      }
    }
    if (!found) return Bad(where, "behavior: '" + behavior + "' is unknown");
    if (!AllFalse(*node, {"invert"})) return Unimplemented(where + ".invert: not supported");
    im.pre_tokenizer.push_back(std::move(step));
  }
  // --- decoder
  steps.clear();
  if (auto d = root.find("decoder"); d != root.end()) {
    G4_RETURN_IF_ERROR(Flatten(*d, "decoders", source + ": decoder", &steps));
  }
  bool fused = false;
  for (const auto& [node, where] : steps) {
    const std::string t = (*node)["type"].get<std::string>();
    Impl::DecodeStep step{Impl::DecodeStep::kReplace, "", "", 0, 0};
    if (t == "Replace") {
      G4_RETURN_IF_ERROR(StringPattern(*node, where, &step.pattern));
      G4_RETURN_IF_ERROR(StringField(*node, "content", where, &step.content));
    } else if (t == "ByteFallback") {
      step.kind = Impl::DecodeStep::kByteFallback;
    } else if (t == "Fuse") {
      step.kind = Impl::DecodeStep::kFuse;
      fused = true;
    } else if (t == "Strip") {
      // After Fuse a Strip would act on the whole text, which streaming cannot reproduce.
      if (fused) return Unimplemented(where + ": Strip after Fuse is not supported");
      step.kind = Impl::DecodeStep::kStrip;
      G4_RETURN_IF_ERROR(StringField(*node, "content", where, &step.content));
      for (auto [key, slot] : {std::pair<const char*, int*>{"start", &step.start}, {"stop", &step.stop}}) {
        auto it = node->find(key);
        if (it == node->end() || !it->is_number_unsigned()) return Bad(where, std::string(key) + ": expected a count");
        *slot = static_cast<int>(std::min<uint64_t>(it->get<uint64_t>(), 1 << 20));
      }
    } else {
      return Unimplemented(where + ".type: '" + t + "' is not supported (Replace, ByteFallback, Fuse, Strip, Sequence)");
    }
    im.decoder.push_back(std::move(step));
  }
  // --- post-processor: the BOS a single sequence starts with (TemplateProcessing).
  if (auto pp = root.find("post_processor"); pp != root.end() && pp->is_object()) {
    auto single = pp->find("single");
    auto pp_type = pp->find("type");
    if (pp_type != pp->end() && *pp_type == "TemplateProcessing" && single != pp->end() && single->is_array() &&
        !single->empty()) {
      const json& first = (*single)[0];
      if (first.is_object() && first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
          first["SpecialToken"].contains("id") && first["SpecialToken"]["id"].is_string()) {
        tok->bos_id_ = tok->TokenId(first["SpecialToken"]["id"].get<std::string>());
      }
    }
  }
  return tok;
}

}  // namespace g4
