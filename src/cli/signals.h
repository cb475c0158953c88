// Ctrl-C (SIGINT), SIGTERM or SIGHUP while a command writes a new folder (export, synth): the
// writing stops at its next chunk and removes its temporary folder, and the process then ends by
// that signal, as the shell expects. Native only (WebAssembly has no signals).
#pragma once

#include <atomic>

namespace g4::cli {

class StopOnSignals {
 public:
  // Clears what an earlier instance received and installs the handlers; a signal ignored from the
  // start (nohup, a background job of a script) stays ignored. One instance at a time.
  StopOnSignals();
  // Puts the previous handlers back.
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  // Set once a signal came: what the writing checks between chunks.
  const std::atomic<bool>* flag() const;
  // The signal that came while handlers were installed, or 0.
  static int Received();
  // Flushes stdout and ends the process by the signal received (its default action); returns the
  // exit code a shell gives that, for where raising it returns.
  static int EndBySignal();
};

}  // namespace g4::cli
