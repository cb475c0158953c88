// gemma4 export refuses what loading refuses, before writing anything (the same checks: a missing
// tensor, a wrong shape, a bad config, a wrong layer count, another model's assistant) and weights
// that are not finite; two exports to one folder give one artifact, whole; an interrupted export
// leaves nothing behind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "convert/export.h"
#include "io/checkpoint.h"
#include "model/assistant.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// Entries of `dir` whose names start with `prefix` (an export's destination and its temporary
// folders).
std::vector<std::string> Entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

// Export must fail with the error loading gives, and leave nothing in the destination's folder.
void ExpectRefusedAsLoadingRefuses(const std::string& model, const std::string& assistant, const std::string& needle) {
  auto be = MakeCpuBackend();
  std::string load_error;
  auto target = Model::Load(model, *be);
  if (!target.ok()) {
    load_error = target.status().message();
  } else {
    auto as = Assistant::Load(assistant, *be, **target);
    ASSERT_FALSE(as.ok()) << "the broken source loads";
    load_error = as.status().message();
  }
  EXPECT_NE(load_error.find(needle), std::string::npos) << load_error;
  const std::string parent = test::MakeTempDir();
  for (QuantScheme scheme : {QuantScheme::kQ8, QuantScheme::kBf16}) {
    auto r = ExportArtifacts(model, assistant, scheme, parent + "/out");
    ASSERT_FALSE(r.ok()) << "export wrote an artifact that loading refuses: " << load_error;
    EXPECT_EQ(r.status().message(), load_error);
    EXPECT_TRUE(Entries(parent, "out").empty());
  }
  fs::remove_all(parent);
}

TEST(ExportChecks, BrokenSourcesAreRefusedAsLoadingRefusesThem) {
  const std::string dense = test::Models("dense");
  const std::string missing = test::MakeTempDir();
  test::CopyCheckpoint(dense, missing, [](test::TensorData& t) { return t.name != "model.layers.3.mlp.up_proj.weight"; });
  ExpectRefusedAsLoadingRefuses(missing, "", "tensor model.layers.3.mlp.up_proj.weight is missing");

  const std::string shape = test::MakeTempDir();
  test::CopyCheckpoint(dense, shape, [](test::TensorData& t) {
    if (t.name == "model.layers.2.self_attn.q_norm.weight") {
      t.shape = {t.shape[0] / 2};
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  ExpectRefusedAsLoadingRefuses(shape, "", "q_norm.weight has shape [16]; the config implies [32]");

  const std::string not_json = test::MakeTempDir();
  test::CopyCheckpoint(dense, not_json);
  test::WriteFile(not_json + "/config.json", "{\"model_type\": \"gemma4_text\",");
  ExpectRefusedAsLoadingRefuses(not_json, "", "config.json: not valid JSON: it breaks at byte 30");

  const std::string layers = test::MakeTempDir();
  test::CopyCheckpoint(dense, layers);
  auto config = test::ReadJson(dense + "/config.json");
  config["num_hidden_layers"] = config["num_hidden_layers"].get<int>() + 1;
  config["layer_types"].push_back("full_attention");
  test::WriteFile(layers + "/config.json", config.dump());
  ExpectRefusedAsLoadingRefuses(layers, "", "tensor model.layers.6.");

  // Another model's assistant: dense's for the e2b_mini target.
  ExpectRefusedAsLoadingRefuses(test::Models("e2b_mini"), dense + "/assistant_plain", "backbone_hidden_size");
  // An assistant missing a tensor, for its own target.
  const std::string as_missing = test::MakeTempDir();
  test::CopyCheckpoint(dense + "/assistant_plain", as_missing,
                       [](test::TensorData& t) { return t.name != "post_projection.weight"; });
  ExpectRefusedAsLoadingRefuses(dense, as_missing, "tensor post_projection.weight is missing");
  for (const std::string& d : {missing, shape, not_json, layers, as_missing}) fs::remove_all(d);
}

TEST(ExportChecks, ABrokenTokenizerBesideTheModelIsRefused) {
  const std::string src = test::MakeTempDir(), parent = test::MakeTempDir();
  test::CopyCheckpoint(test::Models("dense"), src);
  test::WriteFile(src + "/tokenizer.json", R"({"model":{"type":"BPE","vocab":{"a":0,"b":0},"merges":[]}})");
  auto r = ExportArtifacts(src, "", QuantScheme::kQ8, parent + "/out");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(src + "/tokenizer.json: model: vocab: 'a' and 'b' have the same id 0"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(Entries(parent, "out").empty());
  fs::remove_all(src);
  fs::remove_all(parent);
}

// Element `i` of a float tensor set to `v`, in the tensor's own dtype (NaN bit patterns exactly).
void SetElement(test::TensorData& t, size_t i, float v) {
  ASSERT_LT(i * DTypeSize(t.dtype), t.bytes.size()) << t.name;
  if (t.dtype == DType::kF32) {
    std::memcpy(&t.bytes[4 * i], &v, 4);
    return;
  }
  uint16_t h = t.dtype == DType::kBF16 ? F32ToBf16(v) : F32ToF16(v);
  if (std::isnan(v)) h = t.dtype == DType::kBF16 ? 0x7fc0 : 0x7e00;
  std::memcpy(&t.bytes[2 * i], &h, 2);
}

TEST(ExportChecks, NonFiniteWeightsAreRefusedNamingTheTensor) {
  struct Case {
    std::string tensor;
    float value;
    std::string needle;
  };
  const Case cases[] = {
      {"model.layers.1.mlp.down_proj.weight", NAN, "holds NaN at element 77 of"},                 // quantized
      {"model.embed_tokens.weight", INFINITY, "holds an infinity at element 77 of"},              // quantized
      {"model.layers.0.input_layernorm.weight", -INFINITY, "holds an infinity at element 57 of 64"},  // kept
  };
  for (const Case& c : cases) {
    const std::string src = test::MakeTempDir(), parent = test::MakeTempDir();
    test::CopyCheckpoint(test::Models("dense"), src, [&](test::TensorData& t) {
      if (t.name == c.tensor) SetElement(t, t.name.find("layernorm") == std::string::npos ? 77 : 57, c.value);
      return true;
    });
    for (QuantScheme scheme : {QuantScheme::kQ8, QuantScheme::kQ4, QuantScheme::kBf16}) {
      auto r = ExportArtifacts(src, "", scheme, parent + "/out");
      ASSERT_FALSE(r.ok()) << c.tensor << " " << QuantSchemeName(scheme);
      EXPECT_EQ(r.status().message().rfind(src + "/model.safetensors: tensor " + c.tensor + " " + c.needle, 0), 0u)
          << r.status().message();
      EXPECT_TRUE(Entries(parent, "out").empty());
    }
    fs::remove_all(src);
    fs::remove_all(parent);
  }
  // A NaN in the assistant too.
  const std::string as = test::MakeTempDir(), parent = test::MakeTempDir();
  test::CopyCheckpoint(test::Models("dense/assistant_plain"), as, [](test::TensorData& t) {
    if (t.name == "pre_projection.weight") SetElement(t, 3, NAN);
    return true;
  });
  auto r = ExportArtifacts(test::Models("dense"), as, QuantScheme::kQ4, parent + "/out");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tensor pre_projection.weight holds NaN at element 3"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(Entries(parent, "out").empty());
  fs::remove_all(as);
  fs::remove_all(parent);
}

TEST(ExportChecks, ValuesTooLargeForAFloat16ScaleAreRefused) {
  const std::string src = test::MakeTempDir(), parent = test::MakeTempDir();
  test::CopyCheckpoint(test::Models("dense"), src, [](test::TensorData& t) {
    if (t.name == "model.layers.1.mlp.up_proj.weight") SetElement(t, 40, 1e30f);
    return true;
  });
  auto r = ExportArtifacts(src, "", QuantScheme::kQ8, parent + "/out");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tensor model.layers.1.mlp.up_proj.weight has values near element 32 too large"),
            std::string::npos)
      << r.status().message();
  // bfloat16 holds them.
  EXPECT_TRUE(ExportArtifacts(src, "", QuantScheme::kBf16, parent + "/bf16").ok());
  fs::remove_all(src);
  fs::remove_all(parent);
}

// Two exports of one model to one folder at once, several times: each time exactly one succeeds,
// the other fails saying the folder exists, and the artifact is whole (it loads, and its bytes
// are those of an export that ran alone).
TEST(ExportChecks, TwoExportsToOneFolderGiveOneWholeArtifact) {
  const std::string model = test::Models("dense"), assistant = model + "/assistant_plain";
  const std::string alone = test::MakeTempDir() + "/alone";
  ASSERT_TRUE(ExportArtifacts(model, assistant, QuantScheme::kQ4, alone).ok());
  const std::string parent = test::MakeTempDir();
  for (int run = 0; run < 5; ++run) {
    const std::string out = parent + "/out" + std::to_string(run);
    const std::string one = "OMP_NUM_THREADS=1 " + std::string(G4_CLI) + " export --model " + model +
                            " --assistant " + assistant + " --quant q4 -o " + out;
    const test::CliRun r = test::Shell("(" + one + " >" + out + ".a.log 2>&1; echo a=$?) & (" + one + " >" + out +
                                       ".b.log 2>&1; echo b=$?) & wait");
    const bool a_ok = r.out.find("a=0") != std::string::npos, b_ok = r.out.find("b=0") != std::string::npos;
    EXPECT_NE(a_ok, b_ok) << "run " << run << ": " << r.out;
    const std::string loser = test::ReadFile(out + (a_ok ? ".b.log" : ".a.log"));
    EXPECT_NE(loser.find(out + ": already exists"), std::string::npos) << loser;
    for (const char* file : {"/model.safetensors", "/assistant/model.safetensors"}) {
      EXPECT_TRUE(test::ReadFile(out + file) == test::ReadFile(alone + file))
          << "run " << run << ": " << file << " differs from an export run alone";
    }
    auto be = MakeCpuBackend();
    auto target = Model::Load(out, *be);
    ASSERT_TRUE(target.ok()) << target.status().message();
    EXPECT_TRUE(Assistant::Load(out + "/assistant", *be, **target).ok());
    // The artifact's folder has the permissions of any new folder (mkdtemp's are private).
    const mode_t mask = umask(0);
    umask(mask);
    EXPECT_EQ(static_cast<mode_t>(fs::status(out).permissions()) & 0777, 0777 & ~mask);
    // No temporary folder left by either.
    EXPECT_EQ(Entries(parent, "out" + std::to_string(run) + ".partial"), std::vector<std::string>{});
  }
  fs::remove_all(parent);
  fs::remove_all(fs::path(alone).parent_path());
}

// A checkpoint that takes a while to export: the dense model plus a 512 MiB float32 matrix of
// zeros that no layer reads (named as another tower's: export leaves it out, but hashes the whole
// file). The matrix is a hole in a sparse file: no disk space, and read back as zeros.
std::string SlowSource() {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::Models("dense"), dir);
  auto ckpt = Checkpoint::Open(dir);
  EXPECT_TRUE(ckpt.ok());
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint8_t> data;
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [name, t] : (*ckpt)->tensors()) order.emplace_back(t.info.offset, name);
  std::sort(order.begin(), order.end());
  for (const auto& [offset, name] : order) {
    const CheckpointTensor& t = *(*ckpt)->Find(name);
    const uint64_t at = data.size();
    data.resize(at + t.info.bytes);
    EXPECT_TRUE((*ckpt)->file(t.file).Read(t.info.offset, t.info.bytes, data.data() + at).ok());
    header[name] = {{"dtype", DTypeName(t.info.dtype)}, {"shape", t.info.shape}, {"data_offsets", {at, data.size()}}};
  }
  const uint64_t rows = 131072, cols = 1024, big = rows * cols * 4;
  header["model.vision_tower.slow_buffer.weight"] = {
      {"dtype", "F32"}, {"shape", {rows, cols}}, {"data_offsets", {data.size(), data.size() + big}}};
  std::string text = header.dump();
  while (text.size() % 8) text.push_back(' ');
  ckpt->reset();
  const std::string path = dir + "/model.safetensors";
  FILE* f = std::fopen(path.c_str(), "wb");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  std::fwrite(len, 1, 8, f);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
  fs::resize_file(path, 8 + text.size() + data.size() + big);
  return dir;
}

TEST(ExportChecks, AnInterruptedExportLeavesNothingBehind) {
  const std::string src = SlowSource();
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string parent = test::MakeTempDir(), out = parent + "/out", log = parent + "/log";
    const pid_t pid = fork();
    if (pid == 0) {
      std::freopen(log.c_str(), "w", stdout);
      dup2(fileno(stdout), 2);
      execl(G4_CLI, G4_CLI, "export", "--model", src.c_str(), "--quant", "q8", "-o", out.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Signal it once its temporary folder exists: while it writes.
    bool signalled = false;
    int status = 0;
    for (int i = 0; i < 60000; ++i) {
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      if (!Entries(parent, "out.partial").empty()) {
        kill(pid, sig);
        signalled = true;
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(signalled) << "the export ended before it could be interrupted: " << test::ReadFile(log);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status << ": " << test::ReadFile(log);
    EXPECT_NE(test::ReadFile(log).find("export: interrupted by signal " + std::to_string(sig) +
                                       "; nothing was written to " + out),
              std::string::npos)
        << test::ReadFile(log);
    EXPECT_EQ(Entries(parent, "out"), std::vector<std::string>{});
    fs::remove_all(parent);
  }
  fs::remove_all(src);
}

}  // namespace
}  // namespace g4
