#include "engine/megatron_pipeline_layout.hpp"

#include <cctype>

namespace meshfit {

namespace {

// Appends `unit` n times; false when n is missing or `out` would pass `limit` characters.
bool repeat(std::string& out, const std::string& unit, const std::string& digits, std::size_t limit) {
  if (digits.empty() || digits.size() > 6) return false;
  const std::size_t n = std::stoul(digits);
  if (out.size() + unit.size() * n > limit) return false;
  for (std::size_t i = 0; i < n; ++i) out += unit;
  return true;
}

// The digits at text[at...], advancing `at` past them.
std::string digits_at(const std::string& text, std::size_t& at) {
  std::string d;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) d += text[at++];
  return d;
}

}  // namespace

PipelineLayoutText parse_megatron_pipeline_layout(const std::string& text) {
  PipelineLayoutText out;
  // Far beyond any model's layers and stages: a bound on what one string may unroll to.
  constexpr std::size_t kLimit = 1 << 20;
  std::string s;
  for (const char c : text) {
    if (c != ',' && !std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  // "(…)*n", left to right, as Python's re.sub of \(([^)]+)\)\*(\d+).
  std::string pass;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close != std::string::npos && close > i + 1 && close + 1 < s.size() && s[close + 1] == '*') {
        std::size_t at = close + 2;
        const std::string n = digits_at(s, at);
        if (!n.empty()) {
          if (!repeat(pass, s.substr(i + 1, close - i - 1), n, kLimit)) {
            out.error = "a repeat count in " + text + " unrolls beyond " + std::to_string(kLimit) + " entries";
            return out;
          }
          i = at;
          continue;
        }
      }
    }
    pass += s[i++];
  }
  // "x*n", as re.sub of (.)\*(\d+).
  std::string flat;
  for (std::size_t i = 0; i < pass.size();) {
    if (i + 1 < pass.size() && pass[i + 1] == '*') {
      std::size_t at = i + 2;
      const std::string n = digits_at(pass, at);
      if (!n.empty()) {
        if (!repeat(flat, std::string(1, pass[i]), n, kLimit)) {
          out.error = "a repeat count in " + text + " unrolls beyond " + std::to_string(kLimit) + " entries";
          return out;
        }
        i = at;
        continue;
      }
    }
    flat += pass[i++];
  }
  // One virtual stage per segment.
  std::vector<std::string> stages(1);
  for (const char c : flat) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      out.error =
          std::string("unexpected character '") + c + "' in " + text + "; expected E, t, m, L, '|', '(…)*n' or 'x*n'";
      return out;
    }
  }
  const std::size_t last = stages.size() - 1;
  for (std::size_t u = 0; u < stages.size(); ++u) {
    std::int64_t layers = 0;
    for (std::size_t j = 0; j < stages[u].size(); ++j) {
      const char c = stages[u][j];
      if (c == 't') ++layers;
      if (c == 'E' && !(u == 0 && j == 0)) {
        out.error = "the embedding 'E' must open the first virtual stage, and only it, in " + text;
        return out;
      }
      if (c == 'L' && !(u == last && j + 1 == stages[u].size())) {
        out.error = "the loss 'L' must close the last virtual stage, and only it, in " + text;
        return out;
      }
      if (c == 'm') {
        if (u != last) {
          out.error = "an MTP depth 'm' outside the last virtual stage (Megatron's standalone MTP) in " + text +
                      "; meshfit places the MTP depths with the loss";
          return out;
        }
        ++out.mtp_depths;
      }
    }
    out.layers_per_vstage.push_back(layers);
  }
  if (stages.front().empty() || stages.front().front() != 'E' || stages.back().empty() || stages.back().back() != 'L') {
    out.error = "expected the embedding 'E' first and the loss 'L' last in " + text;
    out.layers_per_vstage.clear();
  }
  return out;
}

}  // namespace meshfit
