#include "session/interrupt.h"

#include <signal.h>

#include <atomic>
#include <cstdio>

namespace iomimic::session {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void OnSignal(int signal) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, signal)) {
    // First signal: from now on the default action (the next one ends us).
    for (int s : kSignals) {
      struct sigaction action {};
      action.sa_handler = SIG_DFL;
      sigemptyset(&action.sa_mask);
      ::sigaction(s, &action, nullptr);
    }
  }
}

void Arm() {
  for (int s : kSignals) {
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // reads and writes in flight go on
    ::sigaction(s, &action, nullptr);
  }
}

}  // namespace

void InstallInterruptHandlers() {
  static const bool installed = [] {
    Arm();
    return true;
  }();
  (void)installed;
}

int InterruptSignal() { return g_signal.load(std::memory_order_relaxed); }

void NoteAgreedInterrupt(int signal) {
  if (signal <= 0) return;
  int none = 0;
  g_signal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
}

const char* SignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default: {
      static thread_local char text[32];
      std::snprintf(text, sizeof(text), "signal %d", signal);
      return text;
    }
  }
}

void ResetInterruptForTesting() {
  g_signal.store(0);
  Arm();
}

}  // namespace iomimic::session
