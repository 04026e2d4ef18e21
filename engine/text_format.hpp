// Number formatting and aligned plain-text tables for the human-readable reports.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace meshfit {

std::string with_commas(std::int64_t v);    // 8030261248 -> "8,030,261,248"
std::string fixed(double v, int decimals);  // rounds half away from zero
std::string billions(std::int64_t params);  // 8030261248 -> "8.03 B"

// Columns padded to their widest cell; the first `left` columns left-aligned (1 by default),
// the rest right-aligned (numbers).
class TextTable {
 public:
  explicit TextTable(std::size_t left = 1) : left_(left) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::size_t left_;
  std::vector<std::vector<std::string>> rows_;
};

// Text made safe inside XML (and HTML) elements and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace meshfit
