#include "engine/yaml_fields.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/input_error.hpp"

namespace meshfit {

namespace {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Undefined: return "nothing";
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
  }
  return "?";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::ostringstream msg;
    msg << source << ":" << (e.mark.line + 1) << ":" << (e.mark.column + 1)
        << ": malformed JSON/YAML: " << e.msg;
    throw InputError(msg.str());
  }
}

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path + ": cannot read file: " + std::strerror(errno));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read file");
  return parse_yaml_text(buf.str(), path);
}

std::optional<std::int64_t> parse_integer(const std::string& text) {
  std::int64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::optional<double> parse_number(const std::string& text) {
  double v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e || !std::isfinite(v)) return std::nullopt;
  return v;
}

Fields::Fields(YAML::Node node, std::string source, std::string prefix)
    : node_(std::move(node)), source_(std::move(source)), prefix_(std::move(prefix)) {
  if (!node_.IsMap()) {
    const std::string where = prefix_.empty() ? "the document" : "field '" + prefix_ + "'";
    throw InputError(source_ + ": " + where + ": expected a map of fields, got " + describe(node_));
  }
}

void Fields::fail(const std::string& key, const std::string& expected) const {
  throw InputError(source_, path(key), expected);
}

bool Fields::has(const std::string& key) const {
  const YAML::Node n = node_[key];
  return n.IsDefined() && !n.IsNull();
}

std::vector<std::string> Fields::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(kv.first.Scalar());
  return out;
}

std::int64_t Fields::required_int(const std::string& key, std::int64_t min) const {
  if (!has(key)) fail(key, "missing; expected an integer >= " + std::to_string(min));
  return *optional_int(key, min);
}

std::optional<std::int64_t> Fields::optional_int(const std::string& key, std::int64_t min) const {
  if (!has(key)) return std::nullopt;
  const YAML::Node n = node_[key];
  const std::string expected = min == 1 ? "a positive integer" : "an integer >= " + std::to_string(min);
  if (!n.IsScalar()) fail(key, "expected " + expected + ", got " + describe(n));
  const auto v = parse_integer(n.Scalar());
  if (!v || *v < min) fail(key, "expected " + expected + ", got " + describe(n));
  return v;
}

std::vector<std::int64_t> Fields::int_list(const std::string& key, std::int64_t min) const {
  std::vector<std::int64_t> out;
  if (!has(key)) return out;
  const YAML::Node n = node_[key];
  const std::string expected = "a list of integers >= " + std::to_string(min);
  if (!n.IsSequence()) fail(key, "expected " + expected + ", got " + describe(n));
  for (const auto& item : n) {
    const auto v = item.IsScalar() ? parse_integer(item.Scalar()) : std::nullopt;
    if (!v || *v < min) fail(key, "expected " + expected + ", got an element " + describe(item));
    out.push_back(*v);
  }
  return out;
}

std::optional<double> Fields::optional_number(const std::string& key, double min, double max) const {
  if (!has(key)) return std::nullopt;
  const YAML::Node n = node_[key];
  std::ostringstream expected;
  expected << "expected a number in [" << min << ", " << max << "], got " << describe(n);
  if (!n.IsScalar()) fail(key, expected.str());
  const auto v = parse_number(n.Scalar());
  if (!v || *v < min || *v > max) fail(key, expected.str());
  return v;
}

std::optional<bool> Fields::optional_bool(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const YAML::Node n = node_[key];
  if (n.IsScalar()) {
    const std::string s = lower(n.Scalar());
    if (s == "true") return true;
    if (s == "false") return false;
  }
  fail(key, "expected true or false, got " + describe(n));
}

std::optional<std::string> Fields::optional_string(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  const YAML::Node n = node_[key];
  if (!n.IsScalar()) fail(key, "expected a string, got " + describe(n));
  return n.Scalar();
}

void Fields::reject_unknown(const std::vector<std::string>& allowed) const {
  for (const auto& kv : node_) {
    const std::string k = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(k, "unknown field; expected one of: " + list);
    }
  }
}

}  // namespace meshfit
