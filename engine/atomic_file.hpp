// Writing a report file so that readers only ever see the old file or the whole new one: the
// content goes to a temporary file in the same directory, flushed, then renamed over the target
// (rename(2) is atomic within a file system). A killed run leaves at most a stray temporary.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace meshfit {

// Throws InputError naming `path` when the directory is not writable or the write fails. A path
// through symbolic links writes the file they lead to; an existing file keeps its mode; a FIFO or
// device (not replaceable) is written in place.
void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag);

// Refuses two reports into one file (--json x --junit x): each pair is (flag, path); empty paths
// are unset flags. Throws InputError naming the second flag.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace meshfit
