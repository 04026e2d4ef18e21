#include "engine/presets.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/embedded_presets.hpp"

namespace meshfit {

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

namespace {

// Splits "models/llama-3.1-8b.json" into folder "models" and stem "llama-3.1-8b".
bool split_path(std::string_view path, std::string_view& folder, std::string_view& stem) {
  const auto slash = path.find('/');
  if (slash == std::string_view::npos) return false;
  folder = path.substr(0, slash);
  std::string_view file = path.substr(slash + 1);
  const auto dot = file.rfind('.');
  stem = dot == std::string_view::npos ? file : file.substr(0, dot);
  return true;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> preset_names(std::string_view folder) {
  std::vector<std::string> names;
  for (const auto& f : embedded_files()) {
    std::string_view dir, stem;
    if (split_path(f.path, dir, stem) && dir == folder) names.emplace_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<Preset> find_preset(std::string_view folder, std::string_view name) {
  const std::string want = to_lower(name);
  for (const auto& f : embedded_files()) {
    std::string_view dir, stem;
    if (split_path(f.path, dir, stem) && dir == folder && to_lower(stem) == want) {
      return Preset{std::string(stem), "preset:" + std::string(f.path), f.content};
    }
  }
  return std::nullopt;
}

std::string_view data_file(std::string_view path) {
  for (const auto& f : embedded_files()) {
    if (f.path == path) return f.content;
  }
  throw std::logic_error("bundled data file missing: " + std::string(path));
}

std::vector<std::string> close_names(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string want = to_lower(name);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const std::string lc = to_lower(c);
    std::size_t d = edit_distance(want, lc);
    if (!want.empty() && (lc.find(want) != std::string::npos || want.find(lc) != std::string::npos)) {
      d = std::min<std::size_t>(d, 1);
    }
    // The same stem with another ending ("entry" for "entries"): a shared prefix of 4 or more
    // characters and more than half the shorter name.
    std::size_t prefix = 0;
    while (prefix < want.size() && prefix < lc.size() && want[prefix] == lc[prefix]) ++prefix;
    if (prefix >= 4 && 2 * prefix > std::min(want.size(), lc.size())) d = std::min<std::size_t>(d, 2);
    if (d <= std::max<std::size_t>(2, want.size() / 3)) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  out.reserve(scored.size());
  for (auto& s : scored) out.push_back(std::move(s.second));
  return out;
}

std::string suggestion_text(std::string_view name, const std::vector<std::string>& candidates) {
  std::string text;
  const auto close = close_names(name, candidates);
  if (!close.empty()) {
    text += " (did you mean ";
    for (std::size_t i = 0; i < close.size() && i < 3; ++i) text += (i ? ", " : "") + close[i];
    text += "?)";
  }
  text += "; known: ";
  for (std::size_t i = 0; i < candidates.size(); ++i) text += (i ? ", " : "") + candidates[i];
  return text;
}

}  // namespace meshfit
