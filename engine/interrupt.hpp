// Ctrl-C and SIGTERM during a long command: the first signal asks the work to stop (it finishes
// early, its output marked interrupted, exit 130); a second one ends the process at once.
#pragma once

#include <atomic>

namespace meshfit {

// Installs the handlers for its lifetime (restoring the previous ones after) and clears the flag.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Set by the first SIGINT or SIGTERM.
  static const std::atomic<bool>& requested();
};

// The exit code of an interrupted command (128 + SIGINT, as a shell reports Ctrl-C).
inline constexpr int kExitInterrupted = 130;

}  // namespace meshfit
