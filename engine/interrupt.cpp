#include "engine/interrupt.hpp"

#include <unistd.h>

#include <csignal>

namespace meshfit {

namespace {

std::atomic<bool> g_requested{false};
struct sigaction g_previous_int {
}, g_previous_term{};

extern "C" void on_signal(int) {
  // Only async-signal-safe calls here (POSIX.1-2017 §2.4.3): an atomic store, write, _exit.
  if (g_requested.exchange(true)) {
    constexpr char msg[] = "\nmeshfit: interrupted again; stopping now\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(kExitInterrupted);
  }
}

}  // namespace

InterruptScope::InterruptScope() {
  g_requested = false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_previous_int);
  ::sigaction(SIGTERM, &sa, &g_previous_term);
}

InterruptScope::~InterruptScope() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
}

const std::atomic<bool>& InterruptScope::requested() { return g_requested; }

}  // namespace meshfit
