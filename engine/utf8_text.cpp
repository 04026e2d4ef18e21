#include "engine/utf8_text.hpp"

#include <cstdint>
#include <cstdio>

namespace meshfit {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::size_t kQuoteLimit = 80;

// Length of the well-formed UTF-8 sequence at text[i] (1-4), or 0 when the byte there does not
// start one. Ranges of RFC 3629 §4 (the "UTF8-octets" grammar), which exclude overlong forms and
// surrogates.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t c = at(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC)
    n = 3;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF)
    n = 3;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > text.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  // U+FFFE and U+FFFF are not characters (XML 1.0 §2.2 refuses them even as references).
  if (n == 3 && c == 0xEF && at(i + 1) == 0xBF && at(i + 2) >= 0xBE) return 0;
  return n;
}

bool is_control(std::string_view ch) {
  const auto c = static_cast<std::uint8_t>(ch[0]);
  if (ch.size() == 1) return (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F;
  return ch.size() == 2 && c == 0xC2 && static_cast<std::uint8_t>(ch[1]) < 0xA0;  // C1: U+0080-U+009F
}

// Calls `f` with each character of `text` (a replacement for each invalid byte).
template <class F>
void for_each_character(std::string_view text, F&& f) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) {
      f(kReplacement);
      ++i;
    } else {
      f(text.substr(i, n));
      i += n;
    }
  }
}

void append_printable(std::string& out, std::string_view ch) {
  if (!is_control(ch)) {
    out += ch;
    return;
  }
  const unsigned code = ch.size() == 1 ? static_cast<std::uint8_t>(ch[0]) : static_cast<std::uint8_t>(ch[1]);
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", code);
  out += buf;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_character(text, [&](std::string_view ch) { out += ch; });
  return out;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_character(text, [&](std::string_view ch) { append_printable(out, ch); });
  return out;
}

std::string quoted_text(std::string_view text) {
  std::string out = "'";
  std::size_t characters = 0;
  bool cut = false;
  for_each_character(text, [&](std::string_view ch) {
    if (cut) return;
    if (characters == kQuoteLimit) {
      cut = true;
      return;
    }
    append_printable(out, ch);
    ++characters;
  });
  if (cut) out += "...";
  return out + "'";
}

}  // namespace meshfit
