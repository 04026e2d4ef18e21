#include "engine/yaml_fields.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include <yaml-cpp/depthguard.h>

#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"

namespace meshfit {

namespace {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Undefined: return "nothing";
    case YAML::NodeType::Scalar: return quoted_text(n.Scalar());
  }
  return "?";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Far above any real input (a config.json is a few KiB, the largest bundled case file 130 KiB):
// a bigger file is refused before it is parsed, so that a wrong path (a log, a checkpoint, a
// device node) cannot take minutes and gigabytes.
constexpr std::int64_t kMaxInputBytes = std::int64_t{8} << 20;
// No meshfit input nests more than a few levels; yaml-cpp itself stops at 2,000 (DepthGuard).
constexpr int kMaxDepth = 64;
// Values walked, aliases counted at every use: bounds a document whose anchors expand
// exponentially ("billion laughs") or refer to themselves.
constexpr std::int64_t kMaxValues = std::int64_t{1} << 22;

std::string at_line(const std::string& source, const YAML::Mark& mark) {
  return mark.is_null() ? source : source + ":" + std::to_string(mark.line + 1);
}

// The document's shape that every loader relies on, checked once here: map keys are plain
// values, none given twice in one map (yaml-cpp keeps the first, Hugging Face's json.load the
// last: the same file would be two models), bounded depth and size.
void check_structure(const YAML::Node& node, const std::string& source, int depth, std::int64_t& values) {
  if (++values > kMaxValues) {
    throw InputError(source + ": more than " + std::to_string(kMaxValues) +
                     " values (anchors and aliases counted at each use); expected a model, device, run or case file");
  }
  if (depth > kMaxDepth) {
    throw InputError(at_line(source, node.Mark()) + ": nested too deeply (more than " + std::to_string(kMaxDepth) +
                     " levels of lists and maps)");
  }
  if (node.IsSequence()) {
    for (const auto& item : node) check_structure(item, source, depth + 1, values);
  } else if (node.IsMap()) {
    std::unordered_map<std::string, YAML::Mark> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        throw InputError(at_line(source, kv.first.Mark()) + ": a key must be a plain value, got " + describe(kv.first) +
                         " (complex keys, '? [a, b]', are not supported)");
      }
      const auto [it, inserted] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
      if (!inserted) {
        const auto where = [](const YAML::Mark& m) {
          return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
        };
        throw InputError(at_line(source, kv.first.Mark()) + ": field " + quoted_text(kv.first.Scalar()) +
                         " given twice (at " + where(it->second) + " and " + where(kv.first.Mark()) +
                         "); expected each field once");
      }
      check_structure(kv.second, source, depth + 1, values);
    }
  }
}

}  // namespace

YAML::Node parse_yaml_text(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(at_line(source, e.mark) + ": nested too deeply (more than " + std::to_string(kMaxDepth) +
                     " levels of lists and maps)");
  } catch (const YAML::Exception& e) {
    std::ostringstream msg;
    msg << source << ":" << (e.mark.line + 1) << ":" << (e.mark.column + 1) << ": malformed JSON/YAML: " << e.msg;
    throw InputError(msg.str());
  }
  std::int64_t values = 0;
  check_structure(root, source, 0, values);
  return root;
}

YAML::Node load_yaml_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot read file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)                          ? "a directory"
                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a regular file";
    throw InputError(path + ": cannot read file: it is " + std::string(what) +
                     "; expected a regular YAML or JSON file");
  }
  const auto too_large = [&] {
    ::close(fd);
    return InputError(path + ": cannot read file: larger than " + std::to_string(kMaxInputBytes >> 20) +
                      " MiB, the limit for an input file (a config.json is a few KiB)");
  };
  if (st.st_size > kMaxInputBytes) throw too_large();
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError(path + ": cannot read file: " + why);
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(text.size()) > kMaxInputBytes) throw too_large();  // it grew while read
  }
  ::close(fd);
  return parse_yaml_text(text, path);
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

Fields::Fields(const YAML::Node& node, std::string source, std::string prefix)
    : node_(node), source_(std::move(source)), prefix_(std::move(prefix)) {
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

std::vector<std::string> Fields::string_list(const std::string& key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const YAML::Node n = node_[key];
  if (!n.IsSequence()) fail(key, "expected a list of strings, got " + describe(n));
  for (const auto& item : n) {
    if (!item.IsScalar()) fail(key, "expected a list of strings, got an element " + describe(item));
    out.push_back(item.Scalar());
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

std::optional<Fields> Fields::optional_map(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return Fields(node_[key], source_, path(key));
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
