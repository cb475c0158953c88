// gemma4 tokenize: text to ids with a tokenizer.json, and its speed with --bench.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "io/reader.h"
#include "session/generator.h"
#include "tokenizer/tokenizer.h"

namespace g4::cli {
namespace {

// A mixed text for --bench when no --text-file is given: prose, code, numbers and several scripts.
std::string BenchText() {
  const char* parts[] = {
      "The quick brown fox jumps over the lazy dog while the compiler optimises the inner loop. ",
      "def forward(self, x):\n    return self.norm(x + self.attn(x))  # residual\n",
      "Der schnelle braune Fuchs springt über den faulen Hund. 1,234.56 + 7e-3 = ? ",
      "敏捷的棕色狐狸跳过了懒狗。日本語の文章も少し。", "Быстрая коричневая лиса прыгает через ленивую собаку. ",
      "{\"id\": 42, \"tags\": [\"a\", \"b\"], \"ok\": true}\n", "    indented    text\twith\ttabs\r\n"};
  std::string out;
  while (out.size() < (4u << 20)) {
    for (const char* p : parts) out += p;
  }
  return out;
}

}  // namespace

int RunTokenize(const std::vector<std::string>& argv) {
  auto parsed = Args::Parse(argv, {"tokenizer", "text", "text-file"}, {"json", "bench"});
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& a = *parsed;
  if (!a.Has("tokenizer")) return Fail(InvalidArgument("tokenize: --tokenizer FILE is required"));
  if (a.Has("text") && a.Has("text-file")) return Fail(InvalidArgument("tokenize: give --text or --text-file, not both"));
  std::string text;
  if (a.Has("text")) {
    text = a.Get("text");
  } else if (a.Has("text-file")) {
    auto t = ReadTextFile(a.Get("text-file"), kMaxTextBytes, /*allow_stream=*/true);
    if (!t.ok()) return Fail(t.status());
    text = std::move(t).value();
  } else if (!a.Has("bench")) {
    return Fail(InvalidArgument("tokenize: give --text or --text-file"));
  }
  const int64_t t0 = MonotonicMicros();
  auto tok = Tokenizer::Load(a.Get("tokenizer"));
  if (!tok.ok()) return Fail(tok.status());
  const int64_t load_us = MonotonicMicros() - t0;
  if (a.Has("bench")) {
    if (text.empty()) text = BenchText();
    size_t ids = 0;
    int64_t best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const int64_t s = MonotonicMicros();
      ids = (*tok)->Encode(text).size();
      const int64_t us = MonotonicMicros() - s;
      if (rep == 0 || us < best) best = us;
    }
    std::printf("load: %.1f ms (%d pieces)\n", load_us / 1000.0, (*tok)->vocab_size());
    std::printf("encode: %.2f MB in %.1f ms = %.2f MB/s (%zu ids, one thread)\n", text.size() / 1e6, best / 1000.0,
                text.size() / (best / 1e6) / 1e6, ids);
    return 0;
  }
  const std::vector<int32_t> ids = (*tok)->Encode(text);
  if (a.Has("json")) {
    std::printf("%s\n", nlohmann::json{{"ids", ids}}.dump().c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? "," : "", ids[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace g4::cli
