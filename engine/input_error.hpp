// Bad input: a message that names the file, the field and what was expected. Every command
// turns it into exit code 2 (docs/spec/cli.md, "Exit codes").
#pragma once

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

// Wrong use of the command line (unknown subcommand or flag): also exit 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace meshfit
