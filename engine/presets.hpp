// Bundled presets (data/models, data/devices, data/frameworks, data/precisions.yaml): lookup by
// case-insensitive name, listing, and "did you mean" suggestions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshfit {

struct Preset {
  std::string name;    // canonical (file stem)
  std::string source;  // "preset:<folder>/<file>", for error messages
  std::string_view content;
};

// Names of the presets in a folder of data/ ("models", "devices", "frameworks"), sorted.
std::vector<std::string> preset_names(std::string_view folder);
std::optional<Preset> find_preset(std::string_view folder, std::string_view name);
// A single data file, e.g. "precisions.yaml".
std::string_view data_file(std::string_view path);

// Candidates close to `name` (edit distance, prefix or substring), best first.
std::vector<std::string> close_names(std::string_view name, const std::vector<std::string>& candidates);
// " (did you mean a, b?) Known: x, y, z" for an unknown-name message.
std::string suggestion_text(std::string_view name, const std::vector<std::string>& candidates);

std::string to_lower(std::string_view s);

}  // namespace meshfit
