// libFuzzer target: tokenizer.json loading on arbitrary bytes; an accepted tokenizer must encode
// and decode without failing.
#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto tok = g4::Tokenizer::FromJson(text, "fuzz/tokenizer.json");
  if (!tok.ok()) return 0;
  const auto ids = (*tok)->Encode("hello world <bos> \xC3\xA9 \xF0\x9F\x98\x80 ab");
  (void)(*tok)->Decode(ids);
  return 0;
}
