#include "engine/text_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/utf8_text.hpp"

namespace meshfit {

std::string with_commas(std::int64_t v) {
  const bool neg = v < 0;
  std::string digits = std::to_string(neg ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return neg ? "-" + out : out;
}

std::string fixed(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  const double r = std::round(v * scale) / scale;  // std::round: half away from zero
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, r == 0 ? 0.0 : r);
  return buf;
}

std::string billions(std::int64_t params) { return fixed(static_cast<double>(params) / 1e9, 2) + " B"; }

void TextTable::print(std::ostream& out, const std::string& indent) const {
  std::vector<std::size_t> width;
  for (const auto& r : rows_) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows_) {
    std::string line = indent;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string pad(width[i] - r[i].size(), ' ');
      if (i > 0) line += "  ";
      line += i < left_ ? r[i] + pad : pad + r[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

std::string xml_escape(const std::string& raw) {
  // XML's characters are Unicode's (XML 1.0 §2.2): invalid UTF-8 from an input name becomes U+FFFD.
  const std::string text = valid_utf8(raw);
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      default:
        // XML 1.0 forbids most control characters even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace meshfit
