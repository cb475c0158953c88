// libFuzzer target: encoding arbitrary text with the real Gemma vocabulary (loaded once from
// $G4_FUZZ_TOKENIZER). For valid UTF-8 without U+2581, decode(encode(x)) must give x back, and
// streaming decode must equal whole decode.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/gemma_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {
std::unique_ptr<g4::Tokenizer> tok;

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tok = LoadFuzzTokenizer("fuzz_tokenizer_encode");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto ids = tok->Encode(text);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok->vocab_size()) std::abort();
  }
  const std::string whole = tok->Decode(ids);
  g4::StreamDecoder sd(*tok);
  std::string streamed;
  for (int32_t id : ids) streamed += sd.Push(id);
  streamed += sd.Flush();
  if (streamed != whole) std::abort();
  if (ValidUtf8(text) && text.find("\xE2\x96\x81") == std::string::npos && whole != text) std::abort();
  return 0;
}
