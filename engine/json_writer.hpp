// A small streaming JSON writer: compact, deterministic (shortest round-trip doubles), escaped.
#pragma once

#include <cstdint>
#include <ostream>
#include <optional>
#include <string_view>
#include <vector>

namespace meshfit {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(int v) { return value(static_cast<std::int64_t>(v)); }
  JsonWriter& value(double v);  // non-finite values are written as null
  JsonWriter& value(bool v);
  JsonWriter& null();
  // An optional: its value, or null where it has none.
  template <class T>
  JsonWriter& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }

  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

 private:
  void separate();
  std::ostream& out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

std::string json_escape(std::string_view s);

}  // namespace meshfit
