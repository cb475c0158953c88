// Loading: stored dtypes kept and equal in result, other towers skipped, and every bad input one
// clear error that names the file and tensor, with nothing left allocated.
#include <atomic>
#include <filesystem>

#include <gtest/gtest.h>

#include "model/model.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// A CPU backend that counts the buffers alive, to prove failed loads release everything.
class CountingBackend final : public Backend {
 public:
  CountingBackend() : inner_(MakeCpuBackend()) {}
  std::string Name() const override { return "counting"; }
  int live() const { return live_; }

  class Counted final : public Buffer {
   public:
    Counted(std::unique_ptr<Buffer> inner, std::atomic<int>* live) : Buffer(inner->bytes()), inner_(std::move(inner)), live_(live) {
      ++*live_;
    }
    ~Counted() override { --*live_; }
    std::unique_ptr<Buffer> inner_;
    std::atomic<int>* live_;
  };
  static Buffer* In(const Buffer* b) { return static_cast<const Counted*>(b)->inner_.get(); }
  static F32 In(F32 t) { return F32{In(t.buffer), t.offset}; }
  static Weight In(Weight w) {
    if (w.buffer) w.buffer = In(w.buffer);
    return w;
  }
  Result<std::unique_ptr<Buffer>> Wrap(Result<std::unique_ptr<Buffer>> r) {
    if (!r.ok()) return r.status();
    return std::unique_ptr<Buffer>(new Counted(std::move(r).value(), &live_));
  }

  Result<std::unique_ptr<Buffer>> Allocate(size_t bytes) override { return Wrap(inner_->Allocate(bytes)); }
  Result<std::unique_ptr<Buffer>> LoadWeights(const Reader& s, uint64_t o, uint64_t n) override {
    if (fail_after_ >= 0 && loads_++ >= fail_after_) return ResourceExhausted("simulated out of memory");
    return Wrap(inner_->LoadWeights(s, o, n));
  }
  Result<std::unique_ptr<Buffer>> LoadQuantizedWeights(DType t, uint64_t n, const Reader& v, uint64_t vo, const Reader& s,
                                                       uint64_t so) override {
    if (fail_after_ >= 0 && loads_++ >= fail_after_) return ResourceExhausted("simulated out of memory");
    return Wrap(inner_->LoadQuantizedWeights(t, n, v, vo, s, so));
  }
  Status Upload(Buffer& d, size_t o, const void* s, size_t n) override { return inner_->Upload(*In(&d), o, s, n); }
  Status Download(const Buffer& s, size_t o, void* d, size_t n) override { return inner_->Download(*In(&s), o, d, n); }
  void Embed(F32 out, const Weight& t, std::span<const int32_t> ids, float s) override { inner_->Embed(In(out), In(t), ids, s); }
  void EmbedIds(F32 o, const Weight& t, F32 ids, int r, float s) override { inner_->EmbedIds(In(o), In(t), In(ids), r, s); }
  void GatherMatVecIds(F32 o, F32 i, const Weight& w, F32 rows, int n) override {
    inner_->GatherMatVecIds(In(o), In(i), In(w), In(rows), n);
  }
  void TopK(F32 o, F32 x, int r, int c, int k) override { inner_->TopK(In(o), In(x), r, c, k); }
  void TopKValues(F32 o, F32 x, int c, int k) override { inner_->TopKValues(In(o), In(x), c, k); }
  void ArgmaxKeyed(F32 o, F32 x, F32 k, int c) override { inner_->ArgmaxKeyed(In(o), In(x), In(k), c); }
  void AcceptDrafts(F32 o, F32 d, F32 t, int k) override { inner_->AcceptDrafts(In(o), In(d), In(t), k); }
  void RmsNorm(F32 o, F32 i, const Weight& w, int r, int d, float e) override { inner_->RmsNorm(In(o), In(i), In(w), r, d, e); }
  void MatMul(F32 o, F32 i, const Weight& w, int r) override { inner_->MatMul(In(o), In(i), In(w), r); }
  void Rope(F32 x, int r, int h, std::span<const float> f, std::span<const int64_t> p) override { inner_->Rope(In(x), r, h, f, p); }
  void Attention(F32 o, F32 q, F32 k, F32 v, F32 kc, F32 vc, const AttentionShape& s) override {
    inner_->Attention(In(o), In(q), In(k), In(v), In(kc), In(vc), s);
  }
  void CacheAppend(F32 kc, F32 vc, F32 k, F32 v, int r, int rs, int64_t st, int64_t c) override {
    inner_->CacheAppend(In(kc), In(vc), In(k), In(v), r, rs, st, c);
  }
  void GeluMul(F32 o, F32 g, F32 u, int r, int c, int s) override { inner_->GeluMul(In(o), In(g), In(u), r, c, s); }
  void RoundOcts(F32 x, int r, int d) override { inner_->RoundOcts(In(x), r, d); }
  void Add(F32 o, F32 a, F32 b, size_t n) override { inner_->Add(In(o), In(a), In(b), n); }
  void Scale(F32 x, size_t n, float s) override { inner_->Scale(In(x), n, s); }
  void Copy(F32 d, F32 s, size_t n) override { inner_->Copy(In(d), In(s), n); }
  void CopyRow(F32 d, F32 s, size_t n, F32 i) override { inner_->CopyRow(In(d), In(s), n, In(i)); }
  void SetPositionShift(F32 w, int most) override {
    Backend::SetPositionShift(w, most);
    inner_->SetPositionShift(w.buffer ? In(w) : w, most);
  }
  void Argmax(F32 i, F32 x, int r, int c) override { inner_->Argmax(In(i), In(x), r, c); }
  void GatherMatVec(F32 o, F32 i, const Weight& w, std::span<const int32_t> r) override { inner_->GatherMatVec(In(o), In(i), In(w), r); }
  void Softcap(F32 x, size_t n, float c) override { inner_->Softcap(In(x), n, c); }
  void MoeRoute(F32 i, F32 w, F32 l, F32 n, F32 x, const Weight& s, const Weight& p, const Weight& e, const MoeShape& m,
                float eps) override {
    inner_->MoeRoute(In(i), In(w), In(l), In(n), In(x), In(s), In(p), In(e), m, eps);
  }
  void MoeExperts(F32 o, F32 h, F32 x, const Weight& gu, const Weight& d, F32 i, F32 w, const MoeShape& m) override {
    inner_->MoeExperts(In(o), In(h), In(x), In(gu), In(d), In(i), In(w), m);
  }

  int fail_after_ = -1;
  int loads_ = 0;

 private:
  std::unique_ptr<Backend> inner_;
  std::atomic<int> live_{0};
};

std::vector<float> LastLogits(Model& m, const std::vector<int32_t>& ids) {
  auto cache = m.NewCache(static_cast<int64_t>(ids.size()));
  EXPECT_TRUE(cache.ok());
  std::vector<float> logits;
  EXPECT_TRUE(m.Forward(ids, **cache, 1, &logits).ok());
  return logits;
}

std::string Error(const std::string& dir) {
  CountingBackend be;
  auto m = Model::Load(dir, be);
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(be.live(), 0) << "a failed load left buffers allocated";
  return m.ok() ? std::string() : m.status().message();
}

const std::vector<int32_t> kProbe = {2, 17, 99, 5, 240, 31, 7, 64, 128, 3, 11};

TEST(Loader, F32AndF16CopiesGiveTheSameLogits) {
  const std::string src = test::TestData("models/ple_shared");
  auto be = MakeCpuBackend();
  auto ref = Model::Load(src, *be);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  const auto want = LastLogits(**ref, kProbe);
  for (DType to : {DType::kF32, DType::kF16}) {
    const std::string dir = test::MakeTempDir();
    test::CopyCheckpoint(src, dir, [&](test::TensorData& t) {
      if (t.dtype == DType::kBF16) {
        t.bytes = test::ConvertFloat(t.bytes, DType::kBF16, to);
        t.dtype = to;
      }
      return true;
    });
    auto m = Model::Load(dir, *be);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ((*m)->load_report().bytes_by_dtype.count(DTypeName(to)), 1u);
    const auto got = LastLogits(**m, kProbe);
    for (size_t i = 0; i < want.size(); ++i) {
      // bf16 -> f32 is exact; bf16 -> f16 rounds the smallest values.
      ASSERT_NEAR(got[i], want[i], to == DType::kF32 ? 1e-5 : 2e-2) << DTypeName(to) << " logit " << i;
    }
    fs::remove_all(dir);
  }
}

TEST(Loader, ContainerSkipsOtherTowersAndKeepsStoredDtypes) {
  CountingBackend be;
  auto m = Model::Load(test::TestData("models/ple_shared"), be);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const LoadReport& r = (*m)->load_report();
  EXPECT_EQ(r.prefix, "model.language_model.");
  EXPECT_EQ(r.skipped_tensors, 3);
  EXPECT_TRUE(r.unused_tensors.empty());
  EXPECT_EQ(r.bytes_by_dtype.size(), 1u);
  EXPECT_EQ(r.bytes_by_dtype.begin()->first, "BF16");
  EXPECT_GT(be.live(), 0);
  m = Status(InvalidArgument("released"));
  EXPECT_EQ(be.live(), 0);
}

TEST(Loader, MissingTensorIsNamed) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense"), dir,
                       [](test::TensorData& t) { return t.name != "model.layers.3.mlp.up_proj.weight"; });
  const std::string e = Error(dir);
  EXPECT_NE(e.find("tensor model.layers.3.mlp.up_proj.weight is missing"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, TensorsTheConfigDoesNotUseAreAnError) {
  // The config cut to 3 of the checkpoint's 6 layers: the last three layers' tensors are left.
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense"), dir);
  nlohmann::json c = nlohmann::json::parse(test::ReadFile(dir + "/config.json"));
  nlohmann::json& text = c.contains("text_config") ? c["text_config"] : c;
  text["num_hidden_layers"] = 3;
  if (text.contains("layer_types")) text["layer_types"] = std::vector<nlohmann::json>(text["layer_types"].begin(), text["layer_types"].begin() + 3);
  test::WriteFile(dir + "/config.json", c.dump());
  const std::string e = Error(dir);
  EXPECT_NE(e.find(dir + "/model.safetensors: tensor model.layers.3."), std::string::npos) << e;
  EXPECT_NE(e.find("more) is not part of the model its config.json describes"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, KeysAndValuesKeptForSharedLayersAreLeftUnread) {
  // Released E2B checkpoints keep k_proj, v_proj and k_norm on the layers that read another
  // layer's cache (6 to 9 here); they go unread, and the model loads.
  const std::string src = test::TestData("models/e2b_mini"), dir = test::MakeTempDir();
  auto ckpt = Checkpoint::Open(src);
  ASSERT_TRUE(ckpt.ok());
  std::vector<test::TensorData> extra;
  for (int layer = 6; layer <= 9; ++layer) {
    const int donor = layer == 9 ? 4 : 5;  // a layer of the same kind, full or sliding
    for (const char* part : {"k_proj.weight", "v_proj.weight", "k_norm.weight"}) {
      const std::string name = "model.language_model.layers." + std::to_string(donor) + ".self_attn." + part;
      const CheckpointTensor* t = (*ckpt)->Find(name);
      ASSERT_NE(t, nullptr) << name;
      test::TensorData d{"model.language_model.layers." + std::to_string(layer) + ".self_attn." + part, t->info.dtype,
                         t->info.shape, std::vector<uint8_t>(t->info.bytes)};
      ASSERT_TRUE((*ckpt)->file(t->file).Read(t->info.offset, t->info.bytes, d.bytes.data()).ok());
      extra.push_back(std::move(d));
    }
  }
  test::CopyCheckpoint(src, dir, {}, std::move(extra));
  auto be = MakeCpuBackend();
  auto m = Model::Load(dir, *be);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->load_report().unused_tensors.size(), 12u);
  fs::remove_all(dir);
}

TEST(Loader, WrongShapeIsNamedWithBothShapes) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense"), dir, [](test::TensorData& t) {
    if (t.name == "model.layers.2.self_attn.q_norm.weight") {
      t.shape = {t.shape[0] / 2};
      t.bytes.resize(t.bytes.size() / 2);
    }
    return true;
  });
  const std::string e = Error(dir);
  EXPECT_NE(e.find("model.safetensors: tensor model.layers.2.self_attn.q_norm.weight has shape [16]; the config implies [32]"),
            std::string::npos)
      << e;
  fs::remove_all(dir);
}

TEST(Loader, WrongDtypeIsNamed) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense"), dir, [](test::TensorData& t) {
    if (t.name == "model.norm.weight") {
      t.dtype = DType::kI32;  // same bytes, read as 32-bit integers
      t.shape = {t.shape[0] / 2};
    }
    return true;
  });
  const std::string e = Error(dir);
  EXPECT_NE(e.find("tensor model.norm.weight has dtype"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, TruncatedFileIsRejectedBeforeAllocating) {
  const std::string dir = test::MakeTempDir();
  test::CopyCheckpoint(test::TestData("models/dense"), dir);
  const std::string file = dir + "/model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 100);
  const std::string e = Error(dir);
  EXPECT_NE(e.find("model.safetensors: tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("outside the file"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, FailureMidLoadReleasesEverything) {
  CountingBackend be;
  be.fail_after_ = 10;
  auto m = Model::Load(test::TestData("models/moe_keqv"), be);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("simulated out of memory"), std::string::npos);
  EXPECT_NE(m.status().message().find("tensor model."), std::string::npos) << m.status().message();
  EXPECT_EQ(be.live(), 0);
  be.fail_after_ = -1;  // and a later load works
  auto again = Model::Load(test::TestData("models/moe_keqv"), be);
  EXPECT_TRUE(again.ok());
}

TEST(Loader, ShardIndexMustAgreeWithFiles) {
  const std::string src = test::TestData("models/moe_keqv");
  const std::string dir = test::MakeTempDir();
  for (const auto& e : fs::directory_iterator(src)) {
    if (e.is_regular_file()) fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  }
  auto index = test::ReadJson(dir + "/model.safetensors.index.json");
  auto& map = index["weight_map"];
  const std::string name = "model.norm.weight";
  const std::string file = map[name];
  map[name] = file == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  test::WriteFile(dir + "/model.safetensors.index.json", index.dump());
  std::string e = Error(dir);
  EXPECT_NE(e.find(name), std::string::npos) << e;
  map[name] = "../escape.safetensors";
  test::WriteFile(dir + "/model.safetensors.index.json", index.dump());
  e = Error(dir);
  EXPECT_NE(e.find("names a bad file"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, MissingFilesAndBadConfigAreNamed) {
  const std::string dir = test::MakeTempDir();
  std::string e = Error(dir);
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  test::WriteFile(dir + "/config.json", test::ReadFile(test::TestData("models/dense/config.json")));
  e = Error(dir);
  EXPECT_NE(e.find("no model.safetensors"), std::string::npos) << e;
  auto config = test::ReadJson(test::TestData("models/dense/config.json"));
  config["hidden_size"] = "big";
  test::WriteFile(dir + "/config.json", config.dump());
  e = Error(dir);
  EXPECT_NE(e.find("config.json: hidden_size: expected an integer"), std::string::npos) << e;
  fs::remove_all(dir);
}

TEST(Loader, ForwardRejectsBadTokensAndOverflow) {
  auto be = MakeCpuBackend();
  auto m = Model::Load(test::TestData("models/dense"), *be);
  ASSERT_TRUE(m.ok());
  auto cache = (*m)->NewCache(4);
  ASSERT_TRUE(cache.ok());
  std::vector<float> logits;
  const std::vector<int32_t> bad = {2, 256};
  Status s = (*m)->Forward(bad, **cache, 1, &logits);
  EXPECT_NE(s.message().find("token id 256 is outside the vocabulary"), std::string::npos) << s.message();
  EXPECT_EQ((*cache)->length(), 0);
  const std::vector<int32_t> five = {2, 3, 4, 5, 6};
  s = (*m)->Forward(five, **cache, 1, &logits);
  EXPECT_NE(s.message().find("past the cache"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace g4
