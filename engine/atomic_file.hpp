// Writing a report file so that readers only ever see the old file or the whole new one: the
// content goes to a temporary file in the same directory, flushed, then renamed over the target
// (rename(2) is atomic within a file system). A killed run leaves at most a stray temporary.
#pragma once

#include <string>

namespace meshfit {

// Throws InputError naming `path` when the directory is not writable or the write fails.
void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag);

}  // namespace meshfit
