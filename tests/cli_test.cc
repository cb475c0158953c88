// The CLI contract, run as a user runs it.
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace g4 {
namespace {

using test::Cli;
using test::CliRun;

// "2,105,236": a golden's prompt ids as --prompt-ids takes them.
std::string IdList(const nlohmann::json& ids) {
  std::string out;
  for (int id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

std::string LastLine(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(Cli, GenerateJsonMatchesTheGolden) {
  const std::string dir = test::TestData("models/e2b_mini");
  const auto golden = test::ReadJson(dir + "/golden.json");
  const auto& p = golden["prompts"][2];
  const std::string ids = IdList(p["prompt_ids"]);
  CliRun r = Cli("generate --model " + dir + " --prompt-ids " + ids + " --max-new-tokens 24 --top-logits 2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(LastLine(r.out));
  EXPECT_EQ(j["tokens"], p["greedy_tokens"]);
  EXPECT_EQ(j["stop_reason"], "length");
  ASSERT_EQ(j["top_logits"].size(), 24u);
  EXPECT_EQ(j["top_logits"][0][0][0], p["greedy_tokens"][0]);
  EXPECT_EQ(j["stats"]["prompt_tokens"], p["prompt_ids"].size());
  EXPECT_EQ(j["stats"]["generated_tokens"], 24);
  EXPECT_TRUE(j["stats"]["prefill_ms"].is_number());
  EXPECT_TRUE(j["stats"]["decode_ms"].is_number());
}

TEST(Cli, SamplingFlagsAreSeeded) {
  const std::string base = "generate --model " + test::TestData("models/e2b_mini") +
                           " --prompt-ids 2,105,7 --max-new-tokens 8 --temperature 0.8 --top-k 40 --top-p 0.9 --json";
  CliRun a = Cli(base + " --seed 5"), b = Cli(base + " --seed 5");
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(nlohmann::json::parse(LastLine(a.out))["tokens"], nlohmann::json::parse(LastLine(b.out))["tokens"]);
}

TEST(Cli, UnseededSamplingDiffersRunToRun) {
  // Temperature 100 is nearly uniform over the vocabulary: two unseeded runs of 12 tokens agree
  // with a chance of about vocab^-12.
  const std::string base = "generate --model " + test::TestData("models/e2b_mini") +
                           " --prompt-ids 2,105,7 --max-new-tokens 12 --temperature 100 --json";
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    CliRun r = Cli(base);
    ASSERT_EQ(r.code, 0) << r.out;
    seen.insert(nlohmann::json::parse(LastLine(r.out))["tokens"].dump());
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST(Cli, FlagErrorsSayWhatIsWrong) {
  const std::string m = " --model " + test::TestData("models/dense");
  CliRun r = Cli("generate" + m + " --prompt-ids 2 --seed 18446744073709551615");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--seed must be an integer in [0, 9007199254740991], not 18446744073709551615"), std::string::npos)
      << r.out;
  r = Cli("generate --model --prompt-ids 2,105");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--model needs a value"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("2,105"), std::string::npos) << r.out;
  r = Cli("bench" + m + " --draft-tokens 3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--draft-tokens goes with --assistant"), std::string::npos) << r.out;
  // --leave-out: kernel names only, sets that are not empty, and an assistant for its timings.
  const std::string a = " --assistant " + test::TestData("models/dense/assistant_plain");
  r = Cli("bench" + m + " --leave-out attention");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--leave-out: the step and the round it times without the kernels need --assistant"),
            std::string::npos) << r.out;
  for (const char* bad : {"''", "'attention/'", "'a,,b'", "'matvec vec'", "'x;y'"}) {
    r = Cli("bench" + m + a + " --leave-out " + bad);
    EXPECT_EQ(r.code, 1) << bad;
    EXPECT_NE(r.out.find("is not a kernel name"), std::string::npos) << bad << ": " << r.out;
  }
  r = Cli("bench" + m + a + " --leave-out a/b/c/d/e/f/g/h/i");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--leave-out: more than 8 sets"), std::string::npos) << r.out;
  r = Cli("bench" + m + a + " --draft-tokens-sweep 1-2 --leave-out matvec");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--leave-out does not go with --draft-tokens-sweep"), std::string::npos) << r.out;
  // A backend without GPU timestamps says so and finishes the bench.
  r = Cli("bench" + m + a + " --prompt-tokens 4 --decode-tokens 2 --bandwidth-mib 64 --leave-out matvec/attention");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GPU time without kernels: the backend has no GPU timestamps"), std::string::npos) << r.out;
  // Ranges from the limits table, integers printed as integers.
  r = Cli("generate" + m + " --prompt-ids 2 --top-p 0");
  EXPECT_NE(r.out.find("--top-p must be a number in (0, 1], not 0"), std::string::npos) << r.out;
  r = Cli("inspect" + m + " --context 0");
  EXPECT_NE(r.out.find("--context must be an integer in [1, 16777216], not 0"), std::string::npos) << r.out;
  // --decode-ahead: one range for generate and bench; above 0 only where reads overlap the GPU.
  for (const char* command : {"generate --prompt-ids 2", "bench"}) {
    r = Cli(std::string(command) + m + " --decode-ahead -1");
    EXPECT_EQ(r.code, 1) << command;
    EXPECT_NE(r.out.find("--decode-ahead must be an integer in [0, 16], not -1"), std::string::npos) << r.out;
  }
  r = Cli("generate" + m + " --prompt-ids 2 --decode-ahead 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--decode-ahead above 0 goes with --backend webgpu"), std::string::npos) << r.out;
  r = Cli("generate" + m + " --prompt-ids 2 --max-new-tokens 2 --decode-ahead 0");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, BadInvocationsFailClearly) {
  const std::string m = " --model " + test::TestData("models/dense");
  CliRun r = Cli("generate" + m + " --prompt hello");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--prompt needs a tokenizer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dense/tokenizer.json"), std::string::npos) << r.out;
  r = Cli("generate" + m + " --prompt-ids 2,x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("'x' is not a token id"), std::string::npos) << r.out;
  r = Cli("generate" + m + " --prompt-ids 2 --bogus 1");
  EXPECT_NE(r.out.find("unknown flag --bogus"), std::string::npos) << r.out;
  r = Cli("generate" + m + " --prompt-ids 2 --backend webgpu");
  EXPECT_NE(r.out.find("--backend"), std::string::npos) << r.out;
  r = Cli("generate --model /nonexistent --prompt-ids 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent/config.json"), std::string::npos) << r.out;
  r = Cli("generate" + m + " --prompt-ids 2,9999");
  EXPECT_NE(r.out.find("outside the model's vocabulary"), std::string::npos) << r.out;
  // A tokenizer with more ids than the model embeds: the error says so.
  r = Cli("generate" + m + " --tokenizer " + test::Models("demo/tokenizer.json") + " --prompt 'Hello there, how are you?'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("outside the model's vocabulary (0..255; the tokenizer has 6144 ids)"), std::string::npos) << r.out;
  r = Cli("frobnicate");
  EXPECT_EQ(r.code, 2);
}

// Each assistant layer: the target layer it reads and with how many KV heads (the donor's, not its
// config's); an assistant folder alone says which kind of target layer.
TEST(Cli, InspectNamesEachAssistantLayersDonor) {
  const std::string m = test::TestData("models/moe_keqv");
  CliRun r = Cli("inspect --model " + m + " --assistant " + m + "/assistant_kv2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("assistant layer 0: sliding heads 4 head_dim 16 reads target layer 4 with 2 KV heads"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assistant layer 1: full heads 4 head_dim 32 reads target layer 5 with 1 KV head (4 query "
                       "heads each); its config's 2 is not used"),
            std::string::npos) << r.out;
  r = Cli("inspect --model " + m + "/assistant_kv2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("assistant layer 1: full heads 4 head_dim 32 reads the target's last full layer with its own "
                       "K/V"), std::string::npos) << r.out;
}

TEST(Cli, InspectPrintsConfigTensorsAndCache) {
  CliRun r = Cli("inspect --model " + test::TestData("models/ple_shared"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("model_type gemma4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layer 4: sliding heads 4/1 head_dim 16 window 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kv from layer 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 of other towers skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights BF16:"), std::string::npos) << r.out;
  // 4 cache-owning layers: 3 sliding (1 x 16) and 1 full (1 x 32), K and V, f32.
  EXPECT_NE(r.out.find("kv cache per token: " + std::to_string((3 * 16 + 32) * 2 * 4) + " bytes"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("memory at a 4096-token context: "), std::string::npos) << r.out;
}

TEST(Cli, ExportThenGenerateAndInspect) {
  const std::string dir = test::TestData("models/e2b_mini"), out = test::MakeTempDir() + "/q8";
  CliRun e = Cli("export --model " + dir + " --assistant " + dir + "/assistant_centroid --quant q8 -o " + out);
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find(out + ": "), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("matrices quantized"), std::string::npos) << e.out;
  CliRun i = Cli("inspect --model " + out + " --context 100");
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_NE(i.out.find("weights Q8: "), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("memory at a 100-token context: "), std::string::npos) << i.out;
  CliRun g = Cli("generate --model " + out + " --assistant " + out + "/assistant --prompt-ids 2,105,236 --max-new-tokens 5 --json");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_EQ(nlohmann::json::parse(LastLine(g.out))["tokens"].size(), 5u);
  // Bad requests: each a clear error and a non-zero exit.
  for (auto [args, want] : {std::pair<std::string, std::string>{"export --model " + dir + " --quant q3 -o " + out + "x",
                                                                 "not one of q8, q4, bf16"},
                            {"export --model " + dir + " --quant q4", "-o OUT are required"},
                            {"export --model " + dir + " --quant q4 -o " + out, "already exists"}}) {
    CliRun r = Cli(args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  }
}

TEST(Cli, AccuracyReportsEachScheme) {
  CliRun r = Cli("accuracy --model " + test::TestData("models/dense") + " --prompts 2 --steps 4 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(LastLine(r.out));
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["quant"], "q8");
  EXPECT_EQ(j[1]["quant"], "q4");
  for (const auto& s : j) {
    EXPECT_EQ(s["positions"], 8);
    EXPECT_GE(s["mean_kl"].get<double>(), 0.0);
    EXPECT_GT(s["artifact_bytes"].get<double>(), 0.0);
  }
  EXPECT_LT(j[1]["artifact_bytes"].get<double>(), j[0]["artifact_bytes"].get<double>());
}

}  // namespace
}  // namespace g4

namespace g4 {
namespace {

TEST(Cli, TokenizePrintsIds) {
  const std::string tok = G4_GEMMA_TOKENIZER;
  CliRun r = Cli("tokenize --tokenizer " + tok + " --text 'Hello world' --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(LastLine(r.out))["ids"], nlohmann::json::parse("[9259, 1902]"));
  const std::string dir = test::MakeTempDir();
  test::WriteFile(dir + "/t.txt", "<bos>Hi");
  r = Cli("tokenize --tokenizer " + tok + " --text-file " + dir + "/t.txt");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(LastLine(r.out).substr(0, 2), "2,");
  r = Cli("tokenize --tokenizer /nonexistent.json --text x");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent.json"), std::string::npos);
}

TEST(Cli, GenerateFromTextWithTheTokenizerBesideTheModel) {
  // A small tokenizer within the bundled model's 512-token vocabulary, placed beside a copy of it.
  const std::string dir = test::MakeTempDir();
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) {
    test::WriteFile(dir + "/" + f, test::ReadFile(test::TestData(std::string("models/e2b_mini/") + f)));
  }
  nlohmann::json vocab = {{"<pad>", 0}, {"<eos>", 1}, {"<bos>", 2}, {"<unk>", 3}, {"<start_of_turn>", 105},
                          {"<end_of_turn>", 106}, {"\n", 107}};
  const std::string letters = "abcdefghijklmnopqrstuvwxyz";
  for (size_t i = 0; i < letters.size(); ++i) vocab[std::string(1, letters[i])] = 200 + static_cast<int>(i);
  vocab["\xE2\x96\x81"] = 300;
  vocab["he"] = 301;
  // Every other id of the model's 512 a placeholder: a tokenizer must cover the vocabulary.
  for (int id = 4; id < 512; ++id) {
    if (id < 105 || (id > 107 && id < 200) || id > 301) vocab["<t" + std::to_string(id) + ">"] = id;
  }
  nlohmann::json added = nlohmann::json::array();
  for (auto [id, content] : {std::pair<int, const char*>{0, "<pad>"}, {1, "<eos>"}, {2, "<bos>"}, {3, "<unk>"},
                             {105, "<start_of_turn>"}, {106, "<end_of_turn>"}}) {
    added.push_back({{"id", id}, {"content", content}, {"special", true}, {"normalized", false}, {"lstrip", false},
                     {"rstrip", false}, {"single_word", false}});
  }
  nlohmann::json tok = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array({nlohmann::json::array({"h", "e"})})},
                 {"unk_token", "<unk>"}}},
      {"added_tokens", added},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}},
      {"decoder", {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}}},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", nlohmann::json::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                                            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}}};
  test::WriteFile(dir + "/tokenizer.json", tok.dump());
  CliRun chat = Cli("generate --model " + dir + " --prompt 'hello there' --chat --max-new-tokens 6 --json");
  ASSERT_EQ(chat.code, 0) << chat.out;
  // <bos><start_of_turn>user\nhello there<end_of_turn>\n<start_of_turn>model\n as ids.
  CliRun ids = Cli("generate --model " + dir +
                   " --prompt-ids 2,105,220,218,204,217,107,301,211,211,214,300,219,301,217,204,106,107,105,212,214,203,204,211,107"
                   " --max-new-tokens 6 --json");
  ASSERT_EQ(ids.code, 0) << ids.out;
  const auto a = nlohmann::json::parse(LastLine(chat.out)), b = nlohmann::json::parse(LastLine(ids.out));
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["stats"]["prompt_tokens"], 25);
  EXPECT_TRUE(a["text"].is_string());
  EXPECT_EQ(a["text"], b["text"]);  // the tokenizer beside the model decodes both
  CliRun plain = Cli("generate --model " + dir + " --prompt 'he' --max-new-tokens 2 --json");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(nlohmann::json::parse(LastLine(plain.out))["stats"]["prompt_tokens"], 2);  // <bos> he
}

}  // namespace
}  // namespace g4

namespace g4 {
namespace {

TEST(Cli, SpeculativeGenerateReportsCountersAndKeepsTokens) {
  const std::string dir = test::TestData("models/dense");
  const auto golden = test::ReadJson(dir + "/assistant_plain/golden.json");
  const auto& trace = golden["traces"][0];
  const std::string ids = IdList(trace["prompt_ids"]);
  const std::string base = "generate --model " + dir + " --prompt-ids " + ids + " --max-new-tokens 20 --json";
  CliRun plain = Cli(base);
  CliRun spec = Cli(base + " --assistant " + dir + "/assistant_plain --draft-tokens 2 --draft-policy fixed");
  ASSERT_EQ(plain.code, 0) << plain.out;
  ASSERT_EQ(spec.code, 0) << spec.out;
  const auto p = nlohmann::json::parse(LastLine(plain.out)), s = nlohmann::json::parse(LastLine(spec.out));
  EXPECT_EQ(s["tokens"], p["tokens"]);
  EXPECT_EQ(s["tokens"], trace["k2"]["tokens"]);
  EXPECT_EQ(s["stats"]["rounds"].get<size_t>(), trace["k2"]["rounds"].size());
  std::vector<int> per_round;
  int accepted = 0, drafted = 0;
  for (const auto& r : trace["k2"]["rounds"]) {
    per_round.push_back(r["accepted"]);
    accepted += r["accepted"].get<int>();
    drafted += static_cast<int>(r["drafts"].size());
  }
  EXPECT_EQ(s["stats"]["accepted_per_round"].get<std::vector<int>>(), per_round);
  EXPECT_EQ(s["stats"]["accepted"], accepted);
  EXPECT_EQ(s["stats"]["drafted"], drafted);
  EXPECT_NEAR(s["stats"]["acceptance_rate"].get<double>(), static_cast<double>(accepted) / drafted, 1e-9);
  EXPECT_EQ(p["stats"]["rounds"], 0);
  EXPECT_EQ(p["stats"]["drafted"], 0);
  CliRun bad = Cli(base + " --assistant " + dir + "/assistant_plain --draft-tokens 9");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("--draft-tokens"), std::string::npos) << bad.out;
  // The adaptive policy (the default): the same tokens, its rounds counted by the drafts they made.
  CliRun adaptive = Cli(base + " --assistant " + dir + "/assistant_plain");
  ASSERT_EQ(adaptive.code, 0) << adaptive.out;
  const auto a = nlohmann::json::parse(LastLine(adaptive.out));
  EXPECT_EQ(a["tokens"], p["tokens"]);
  const auto per_k = a["stats"]["rounds_per_k"].get<std::vector<int>>();
  ASSERT_EQ(per_k.size(), 3u);
  EXPECT_EQ(per_k[0] + per_k[1] + per_k[2], a["stats"]["rounds"].get<int>());
  EXPECT_EQ(a["stats"]["drafted_per_round"].size(), a["stats"]["rounds"].get<size_t>());
  CliRun policy = Cli(base + " --assistant " + dir + "/assistant_plain --draft-policy sometimes");
  EXPECT_EQ(policy.code, 1);
  EXPECT_NE(policy.out.find("--draft-policy must be one of 'adaptive', 'fixed', not 'sometimes'"), std::string::npos)
      << policy.out;
  CliRun alone = Cli(base + " --draft-policy fixed");
  EXPECT_EQ(alone.code, 1);
  EXPECT_NE(alone.out.find("generate: --draft-policy goes with --assistant DIR"), std::string::npos) << alone.out;
  CliRun mismatch = Cli("generate --model " + test::TestData("models/e2b_mini") + " --prompt-ids 2 --assistant " + dir +
                        "/assistant_plain");
  EXPECT_EQ(mismatch.code, 1);
  EXPECT_NE(mismatch.out.find("backbone_hidden_size"), std::string::npos) << mismatch.out;
}

}  // namespace
}  // namespace g4
