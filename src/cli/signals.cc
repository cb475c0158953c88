#include "cli/signals.h"

#ifndef __wasi__
#include <csignal>
#include <cstdio>
#include <iterator>

namespace g4::cli {
namespace {

std::atomic<bool> stop{false};
volatile std::sig_atomic_t stop_signal = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previous[std::size(kSignals)];

extern "C" void OnStopSignal(int sig) {
  stop_signal = sig;
  stop.store(true);
}

}  // namespace

StopOnSignals::StopOnSignals() {
  stop.store(false);
  stop_signal = 0;
  struct sigaction on_signal = {};
  on_signal.sa_handler = OnStopSignal;
  sigemptyset(&on_signal.sa_mask);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    sigaction(kSignals[i], nullptr, &previous[i]);
    if (previous[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &on_signal, nullptr);
  }
}

StopOnSignals::~StopOnSignals() {
  for (size_t i = 0; i < std::size(kSignals); ++i) sigaction(kSignals[i], &previous[i], nullptr);
}

const std::atomic<bool>* StopOnSignals::flag() const { return &stop; }

int StopOnSignals::Received() { return stop_signal; }

int StopOnSignals::EndBySignal() {
  const int sig = stop_signal;
  std::fflush(stdout);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  return 128 + sig;
}

}  // namespace g4::cli
#endif
