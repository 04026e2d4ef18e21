// What every loader fuzzer shares: the input bytes as a file (the loaders read paths, as a user's
// run does), and the contract checked — a loader returns or throws InputError (exit 2); any
// other exception escapes, and libFuzzer reports the uncaught exception as a crash.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace meshfit::fuzz {

// A file holding the input, rewritten per run; the name ends in `suffix` (loaders go by it).
inline const std::string& input_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/tmp/meshfit-fuzz-" + std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

}  // namespace meshfit::fuzz
