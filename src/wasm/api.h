// What the C APIs the WebAssembly module exports to JavaScript share.
#pragma once

#include <string>

#define G4_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace g4::wasm {

// The message g4_last_error returns: set by any export that fails.
void SetLastError(std::string message);

}  // namespace g4::wasm
