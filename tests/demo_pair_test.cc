// The trained demo pair (testdata/models/demo, made by tools/train): its tokenizer against the
// reference's ids, its shape and size, and the quality bar: greedy continuations of neutral
// English prompts are mostly dictionary words (Debian's wamerican list) and the assistant's K = 2
// drafts are accepted at least half of the time. Its greedy tokens, logits and speculative
// rounds against transformers are checked by the golden tests with the other reference models.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unordered_set>

#include <gtest/gtest.h>

#include "model/assistant.h"
#include "model/config.h"
#include "session/generator.h"
#include "session/speculative.h"
#include "tests/test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// tools/train/goldens.py records the reference's view of the same prompts.
const char* const kNeutralPrompts[] = {"The people of this country", "In the coming year, we will",
                                       "Our schools and our children", "The weather this morning",
                                       "The history of the world", "We must work together to"};
const char* const kChatPrompts[] = {"Tell me about the economy.", "What should we do about our schools?"};
constexpr int kNewTokens = 48;
constexpr double kMinDictionaryShare = 0.70;
constexpr double kMinAcceptance = 0.50;
constexpr uint64_t kMaxPairBytes = 25'000'000;
const char* const kWordList = "/usr/share/dict/american-english";

std::string Dir() { return test::TestData("models/demo"); }

std::unique_ptr<Tokenizer> LoadTokenizer() {
  auto t = Tokenizer::Load(Dir() + "/tokenizer.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(DemoPair, TokenizerEncodesAsTheReference) {
  auto tok = LoadTokenizer();
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->vocab_size(), 6144);
  EXPECT_EQ(tok->bos_id(), 2);
  EXPECT_EQ(tok->TokenId("<eos>"), 1);
  EXPECT_EQ(tok->TokenId("<|turn>"), 105);
  EXPECT_EQ(tok->TokenId("<turn|>"), 106);
  EXPECT_EQ(tok->TokenId("<0x00>"), 107);
  const nlohmann::json golden = test::ReadJson(Dir() + "/tokenizer_golden.json");
  ASSERT_GT(golden["cases"].size(), 200u);
  int n = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->Encode(text), ids) << "case " << n << ": " << text.substr(0, 80);
    EXPECT_EQ(tok->Decode(ids), c["decoded"].get<std::string>()) << "case " << n;
    ++n;
  }
}

// E2B's features at a small size, and the pair within its size budget.
TEST(DemoPair, HasTheE2bArchitectureAndFitsTheBudget) {
  auto c = LoadModelConfig(Dir());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_GT(c->ple_dim, 0);
  EXPECT_GT(c->num_kv_shared_layers, 0);
  ASSERT_TRUE(c->final_softcap.has_value());
  EXPECT_EQ(*c->final_softcap, 30.0f);
  int sliding = 0, full = 0;
  for (const auto& l : c->layers) (l.type == AttentionType::kFull ? full : sliding)++;
  EXPECT_GT(sliding, 0);
  EXPECT_GT(full, 0);
  EXPECT_EQ(c->layers.back().type, AttentionType::kFull);
  // Proportional RoPE on full layers: only part of the dimensions rotate.
  const auto& f = c->layers.back().inv_freq;
  ASSERT_FALSE(f.empty());
  EXPECT_GT(f.front(), 0.0f);
  EXPECT_EQ(f.back(), 0.0f);
  uint64_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(Dir())) {
    if (e.is_regular_file()) bytes += e.file_size();
  }
  EXPECT_LE(bytes, kMaxPairBytes);
}

class DemoQuality : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream words(kWordList);
    ASSERT_TRUE(words) << kWordList << " is missing: install Debian's wamerican (scripts/install-deps.sh)";
    for (std::string w; std::getline(words, w);) dictionary_.insert(w);
    ASSERT_GT(dictionary_.size(), 50000u);
    tok_ = LoadTokenizer();
    ASSERT_TRUE(tok_);
    be_ = MakeCpuBackend();
    auto m = Model::Load(Dir(), *be_);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
    auto a = Assistant::Load(Dir() + "/assistant", *be_, *model_);
    ASSERT_TRUE(a.ok()) << a.status().message();
    assistant_ = std::move(a).value();
  }

  // Alphabetic words of `text` (letters, with an apostrophe inside: "nation's") and how many of
  // them the word list has, as written or in lower case.
  std::pair<int, int> DictionaryWords(const std::string& text) const {
    static const std::regex word("[A-Za-z]+('[A-Za-z]+)?");
    int all = 0, known = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it) {
      std::string w = it->str(), lower = w;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      ++all;
      known += dictionary_.count(w) || dictionary_.count(lower);
    }
    return {known, all};
  }

  struct Continuation {
    std::string text;
    GenerationResult plain, speculative;
  };

  // Greedy continuation, plainly and with K = 2 drafts (which must give the same tokens).
  Continuation Continue(const std::vector<int32_t>& prompt) {
    GenerateOptions o;
    o.max_new_tokens = kNewTokens;
    Continuation c;
    auto plain = Generate(*model_, prompt, o);
    EXPECT_TRUE(plain.ok()) << plain.status().message();
    auto spec = GenerateSpeculative(*model_, *assistant_, prompt, o, 2);
    EXPECT_TRUE(spec.ok()) << spec.status().message();
    if (!plain.ok() || !spec.ok()) return c;
    c.plain = std::move(plain).value();
    c.speculative = std::move(spec).value();
    EXPECT_EQ(c.speculative.tokens, c.plain.tokens);
    // The text the tokens spell: control and unused ids (below the byte tokens) are not text.
    std::vector<int32_t> shown;
    for (int t : c.plain.tokens) {
      if (t >= tok_->TokenId("<0x00>")) shown.push_back(t);
    }
    c.text = tok_->Decode(shown);
    return c;
  }

  std::unordered_set<std::string> dictionary_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Backend> be_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Assistant> assistant_;
};

TEST_F(DemoQuality, NeutralPromptsGiveDictionaryWordsAndDraftsAreAccepted) {
  int known = 0, words = 0, drafted = 0, accepted = 0;
  for (const char* p : kNeutralPrompts) {
    std::vector<int32_t> prompt = {tok_->bos_id()};
    for (int32_t id : tok_->Encode(p)) prompt.push_back(id);
    const Continuation c = Continue(prompt);
    const auto [k, n] = DictionaryWords(c.text);
    known += k;
    words += n;
    drafted += c.speculative.stats.drafted;
    accepted += c.speculative.stats.accepted;
    std::printf("%s ->%s [%d/%d dictionary words, %d/%d drafts accepted]\n", p, c.text.c_str(), k, n,
                c.speculative.stats.accepted, c.speculative.stats.drafted);
    EXPECT_GE(n, kNewTokens / 3) << p << ": too few words to judge";
  }
  const double share = static_cast<double>(known) / words, acceptance = static_cast<double>(accepted) / drafted;
  std::printf("dictionary words %d/%d = %.3f, K=2 acceptance %d/%d = %.3f\n", known, words, share, accepted, drafted,
              acceptance);
  EXPECT_GE(share, kMinDictionaryShare);
  EXPECT_GE(acceptance, kMinAcceptance);
}

// A chat turn is answered with English and ends the model's turn (<turn|>) by itself.
TEST_F(DemoQuality, ChatTurnsGetAnEnglishReplyThatEnds) {
  for (const char* p : kChatPrompts) {
    auto text = RenderChat(*tok_, {{"user", p}}, true);
    ASSERT_TRUE(text.ok()) << text.status().message();
    const Continuation c = Continue(tok_->Encode(*text));
    const auto [k, n] = DictionaryWords(c.text);
    std::printf("%s ->%s [%d/%d dictionary words, %d/%d drafts accepted]\n", p, c.text.c_str(), k, n,
                c.speculative.stats.accepted, c.speculative.stats.drafted);
    EXPECT_EQ(c.plain.stop_reason, "eos") << p;
    ASSERT_FALSE(c.plain.tokens.empty());
    EXPECT_EQ(c.plain.tokens.back(), tok_->TokenId("<turn|>")) << p;
    ASSERT_GT(n, 0) << p;
    EXPECT_GE(static_cast<double>(k) / n, kMinDictionaryShare) << p;
  }
}

// Where the stop token comes as an accepted draft, the counters count the drafts up to it (the
// ones verification kept after it are not emitted) and that round emits no bonus: every token
// but the prefill's is then an emitted draft or a bonus. The chat turn below ends in the third
// K = 4 round, on its first draft.
TEST_F(DemoQuality, AStopTokenAmongTheDraftsEndsTheRoundsCount) {
  auto text = RenderChat(*tok_, {{"user", "Hello there, how are you?"}}, true);
  ASSERT_TRUE(text.ok()) << text.status().message();
  GenerateOptions o;
  o.max_new_tokens = 16;
  const std::vector<int32_t> prompt = tok_->Encode(*text);
  auto plain = Generate(*model_, prompt, o);
  auto spec = GenerateSpeculative(*model_, *assistant_, prompt, o, 4);
  ASSERT_TRUE(plain.ok() && spec.ok());
  ASSERT_EQ(spec->tokens, plain->tokens);
  ASSERT_EQ(spec->stop_reason, "eos");
  const GenerationStats& st = spec->stats;
  ASSERT_GT(st.rounds, 0);
  // The case: the stop token is an accepted draft that verification kept more drafts after.
  const RoundTrace& last = spec->rounds.back();
  int stop_at = -1;
  for (int j = 0; j < last.accepted && stop_at < 0; ++j) stop_at = last.drafts[j] == spec->tokens.back() ? j : -1;
  ASSERT_GE(stop_at, 0) << "the turn does not end on an accepted draft: the case is not exercised";
  ASSERT_LT(stop_at, last.accepted - 1) << "no draft was kept after the stop token: the case is not exercised";
  EXPECT_EQ(st.accepted_per_round.back(), stop_at + 1) << "the count ends with the stop token";
  int accepted = 0;
  for (int a : st.accepted_per_round) accepted += a;
  EXPECT_EQ(st.accepted, accepted);
  EXPECT_EQ(st.accepted + st.rounds - 1, st.generated_tokens - 1) << "the last round emits no bonus";
  int per_position = 0;
  for (int a : st.accepted_per_position) per_position += a;
  EXPECT_EQ(per_position, st.accepted);
}

}  // namespace
}  // namespace g4
