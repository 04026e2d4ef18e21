// Text that came from an input file or the command line, made safe for where it is written.
// Names and values reach JSON, XML (JUnit, SVG, HTML) and the terminal: invalid UTF-8 would make
// the reports unparsable, control bytes would move the cursor or change colours on a terminal.
#pragma once

#include <string>
#include <string_view>

namespace meshfit {

// `text` with every byte that does not start a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points past U+10FFFF included, RFC 3629 §3) replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

// valid_utf8(text) with control characters (C0 but tab and newline, DEL, C1) written as \xNN:
// what may be printed to a terminal.
std::string printable(std::string_view text);

// printable(text) between single quotes, cut to about 80 characters (at a character boundary,
// ending "...") so that a message quoting a whole file or a long value stays one readable line.
std::string quoted_text(std::string_view text);

}  // namespace meshfit
