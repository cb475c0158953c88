// gemma4: the native command line.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

const char kUsage[] =
    "usage: gemma4 COMMAND [flags]\n"
    "  generate --model DIR (--prompt-ids 2,105,... | --prompt TEXT) [--max-new-tokens N]\n"
    "           [--temperature T] [--top-k K] [--top-p P] [--seed S] [--backend cpu] [--threads N]\n"
    "           [--top-logits K] [--json] [--chat] [--tokenizer FILE] [--decode-ahead N]\n"
    "           [--assistant DIR [--draft-tokens K] [--draft-policy adaptive|fixed]]\n"
    "  tokenize --tokenizer FILE (--text T | --text-file F) [--json] | --bench [--text-file F]\n"
    "  inspect  --model DIR [--assistant DIR] [--context N]   (tensors, bytes, memory at a context: 4096 by\n"
    "           default; each assistant layer's target layer and KV heads; --model an assistant alone works too)\n"
    "  bench    --model DIR [--assistant DIR [--draft-tokens K] [--leave-out SETS]] [--prompt-tokens N]\n"
    "           [--decode-tokens N] [--threads N] [--bandwidth-mib N] [--decode-ahead N]\n"
    "  bench    --model DIR --assistant DIR --draft-tokens-sweep A-B [--prompts FILE] [--decode-tokens N]\n"
    "           [--tokenizer FILE] [--threads N] [--json]   (MTP against plain decoding, end to end, K = A..B)\n"
    "  synth    --shape SHAPE --out NEW_DIR [--layers N] [--seed S]   (random weights of a real shape: e2b, e4b,\n"
    "           31b, 26b-a4b and each with -assistant; --layers cuts a target to N layers, a multiple of its\n"
    "           pattern, or gives an assistant N layers; absent: the real depth)\n"
    "  export   --model DIR [--assistant DIR] --quant q8|q4|bf16 -o OUT   (artifacts; native build only)\n"
    "  accuracy --model DIR [--quant q8,q4] [--prompts N] [--steps N] [--seed S] [--threads N] [--json]\n"
    "           (quantized vs source; native build only)\n"
    "  serve    --model DIR [--assistant DIR] ...   (an OpenAI-compatible HTTP server; Node only:\n"
    "           node bin/gemma4.mjs serve --help)\n"
    "  In Node (bin/gemma4.mjs), generate and bench also take --gpu-validation on|off (off: Dawn skips\n"
    "  validating the runtime's GPU calls, bounds-checking the kernels' array indices and zeroing their\n"
    "  workgroup memory, for less time per dispatch; on by default) and, with\n"
    "  --backend webgpu, --gpu-fill N (the workgroups that fill the device; measured when not given).\n";

}  // namespace

#ifdef __wasi__
#include <unistd.h>
#endif

namespace {

int RunCli(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "generate") return g4::cli::RunGenerate(args);
  if (cmd == "inspect") return g4::cli::RunInspect(args);
  if (cmd == "bench") return g4::cli::RunBench(args);
  if (cmd == "synth") return g4::cli::RunSynth(args);
  if (cmd == "export") return g4::cli::RunExport(args);
  if (cmd == "accuracy") return g4::cli::RunAccuracy(args);
  if (cmd == "tokenize") return g4::cli::RunTokenize(args);
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "gemma4: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}

}  // namespace

#ifdef __wasi__
// The WebAssembly build is a reactor: the host calls g4_main (asyncified, so GPU reads can
// suspend it) and g4_flush.
extern "C" __attribute__((export_name("g4_main"))) int g4_main(int argc, char** argv) {
  // Under WASI the working directory starts at /; the host passes its own in PWD.
  if (const char* pwd = std::getenv("PWD")) chdir(pwd);
  return RunCli(argc, argv);
}
extern "C" __attribute__((export_name("g4_flush"))) void g4_flush() {
  std::fflush(stdout);
  std::fflush(stderr);
}
#else
// Native: input is checked before anything is allocated for it, but memory can still run out (a
// large model on a small machine). That is one clear line and exit code 1, never an abort. The
// library is built without exceptions; this file alone is built with them, so a std::bad_alloc
// thrown inside the library unwinds to here. One that cannot (inside a parallel region) ends in
// the terminate handler, with the same message.
#include <exception>
#include <new>

namespace {

[[noreturn]] void OutOfMemory() {
  std::fputs("gemma4: out of memory (an allocation failed); a smaller model, context or input may fit\n", stderr);
  std::fflush(stdout);
  std::_Exit(1);
}

[[noreturn]] void Terminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      OutOfMemory();
    } catch (const std::exception& x) {
      std::fprintf(stderr, "gemma4: internal error: %s\n", x.what());
    } catch (...) {
      std::fputs("gemma4: internal error\n", stderr);
    }
  } else {
    std::fputs("gemma4: internal error\n", stderr);
  }
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(Terminate);
  try {
    return RunCli(argc, argv);
  } catch (const std::bad_alloc&) {
    OutOfMemory();
  }
}
#endif
