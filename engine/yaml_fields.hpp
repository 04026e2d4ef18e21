// Typed, checked reads of YAML/JSON fields. Each failure throws InputError naming the source
// file, the field (with its path inside the document) and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace meshfit {

// Parses text as YAML (JSON included); a syntax error names the line and column.
YAML::Node parse_yaml_text(const std::string& text, const std::string& source);
// Reads and parses a file; a missing or unreadable file is an InputError naming it.
YAML::Node load_yaml_file(const std::string& path);

class Fields {
 public:
  // `node` must be a map; `source` is the file name, `prefix` the path of the map inside it.
  Fields(const YAML::Node& node, std::string source, std::string prefix = "");

  const std::string& source() const { return source_; }
  std::string path(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  bool has(const std::string& key) const;  // present and not null
  YAML::Node raw(const std::string& key) const { return node_[key]; }
  std::vector<std::string> keys() const;

  // Integers: written as integer literals; below `min` is an error.
  std::int64_t required_int(const std::string& key, std::int64_t min = 1) const;
  std::optional<std::int64_t> optional_int(const std::string& key, std::int64_t min = 1) const;
  std::vector<std::int64_t> int_list(const std::string& key, std::int64_t min = 0) const;
  std::vector<std::string> string_list(const std::string& key) const;
  // Finite numbers within [min, max].
  std::optional<double> optional_number(const std::string& key, double min, double max) const;
  std::optional<bool> optional_bool(const std::string& key) const;
  std::optional<std::string> optional_string(const std::string& key) const;
  // A nested map: nullopt when absent or null, an error when present but not a map.
  std::optional<Fields> optional_map(const std::string& key) const;

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;
  // Rejects keys outside `allowed` (for meshfit's own formats, where a typo must not pass).
  void reject_unknown(const std::vector<std::string>& allowed) const;

 private:
  YAML::Node node_;
  std::string source_;
  std::string prefix_;
};

// Parses an integer literal (optional sign, digits); nullopt otherwise.
std::optional<std::int64_t> parse_integer(const std::string& text);
// Parses a finite floating-point literal; nullopt otherwise.
std::optional<double> parse_number(const std::string& text);

}  // namespace meshfit
