// The `meshfit check` manifest (docs/spec/cli.md, "Check manifest"): entries, each a model (a
// file, a preset or a glob), a cluster, a run and optionally a pinned strategy and expectations,
// with `defaults` merged under every entry. An entry that cannot be read is kept with its error,
// so that one bad entry never hides the others; only an unreadable manifest is fatal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/input_error.hpp"
#include "engine/search_file.hpp"
#include "engine/run_config.hpp"

namespace meshfit {

struct CheckEntry {
  std::string name;
  std::string model;      // preset name or resolved file path, as load_model takes it
  std::string file;       // the file to point annotations at: the model file, else the manifest
  std::int64_t line = 0;  // 1-based line of the entry in `file` (0: none)
  std::string device;
  std::int64_t devices = 0;
  RunFlags run;
  std::string headroom = "0";  // "10%" or GiB, as --headroom
  std::optional<std::string> strategy;
  std::optional<double> max_peak_gib;
  std::optional<double> min_tokens_per_sec_per_device;
  std::optional<std::string> error;  // why the entry could not be read (status error)
  // Pins and policies of a free entry's search (meshfit sweep's `search` file); null: none.
  std::shared_ptr<const SearchFile> search;
  // A free entry's search keeps its whole Pareto front (meshfit sweep's `keep: [front]`) rather
  // than only what finding the fastest strategy needs.
  bool keep_front = false;
  InputOrigin origin;  // where its fields were written, for the errors found later
};

// Reads MANIFEST.yaml. Throws InputError when the file itself is unreadable or not a manifest
// (no `entries` list); a bad entry becomes a CheckEntry with `error` set. Globs expand in sorted
// order to one entry per file ("<name>/<file name>"); a glob matching nothing is an error entry.
std::vector<CheckEntry> read_check_manifest(const std::string& path);

// Entries for `meshfit check FILES... [cluster] [run]`: the same fields from the command line.
std::vector<CheckEntry> entries_from_files(const std::vector<std::string>& files, const CheckEntry& shared);

// Whether a file is a check manifest (a YAML map with an `entries` key) rather than a model.
bool looks_like_manifest(const std::string& path);

// Sorted files matching a shell pattern (*, ?, [..]); `pattern` relative to `base_dir` unless absolute.
std::vector<std::string> expand_glob(const std::string& pattern, const std::string& base_dir);
bool has_glob_chars(const std::string& text);

}  // namespace meshfit
