// Bad input: a message that names the file, the field and what was expected. Every command
// turns it into exit code 2 (docs/spec/cli.md, "Exit codes").
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "engine/utf8_text.hpp"

namespace meshfit {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // "<source>: field '<field>': <expected>"
  InputError(const std::string& source, const std::string& field, const std::string& expected)
      : std::runtime_error(source + ": field " + quoted_text(field) + ": " + expected) {}
};

// Where input values came from, so that an error names what the user wrote: a flag on the
// command line ("command line: field '--seq'") or a `meshfit check` manifest entry's field
// ("ci.yaml: field 'entries[3].seq'", or 'defaults.seq' where the entry took it from there).
struct InputOrigin {
  std::string source = "command line";
  std::string prefix;                         // "entries[3]"; empty for the command line
  std::map<std::string, std::string> fields;  // manifest key -> the path it was read from

  // "--global-batch" -> itself on the command line, else the entry's "global_batch" path.
  std::string field(const std::string& flag) const {
    if (prefix.empty()) return flag;
    std::string key = flag.starts_with("--") ? flag.substr(2) : flag;
    for (char& c : key) c = c == '-' ? '_' : c;
    const auto it = fields.find(key);
    return it != fields.end() ? it->second : prefix + "." + key;
  }
};

// Wrong use of the command line (unknown subcommand or flag): also exit 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace meshfit
