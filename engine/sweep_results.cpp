#include "engine/sweep_results.hpp"

#include <algorithm>

#include "engine/json_writer.hpp"
#include "engine/utf8_text.hpp"
#include "engine/yaml_fields.hpp"

namespace meshfit {

std::vector<std::string> SweepKeep::names() const {
  std::vector<std::string> out;
  if (best) out.emplace_back("best");
  if (smallest) out.emplace_back("smallest");
  if (front) out.emplace_back("front");
  return out;
}

std::string SweepKeep::text() const {
  std::string out;
  for (const auto& n : names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

SweepKeep read_keep(const Fields& f, const std::string& key) {
  const YAML::Node n = f.raw(key);
  std::vector<std::string> listed;
  if (n.IsScalar()) {
    listed.push_back(n.Scalar());
  } else {
    listed = f.string_list(key);
  }
  if (listed.empty()) f.fail(key, "expected a non-empty list of best, smallest and front");
  SweepKeep keep{false, false, false};
  for (const auto& name : listed) {
    bool* slot = name == "best"       ? &keep.best
                 : name == "smallest" ? &keep.smallest
                 : name == "front"    ? &keep.front
                                      : nullptr;
    if (!slot) f.fail(key, "expected best, smallest or front, got " + quoted_text(name));
    if (*slot)
      f.fail(key, "expected each of best, smallest and front at most once; " + quoted_text(name) + " is listed twice");
    *slot = true;
  }
  return keep;
}

void write_point_json(JsonWriter& j, const PointResult& x, const SweepKeep& keep) {
  j.begin_object()
      .field("index", x.index)
      .field("model", x.model)
      .field("device", x.device)
      .field("devices", x.devices)
      .field("seq", x.seq)
      .field("global_batch", x.global_batch)
      .field("status", x.status);
  if (keep.best) {
    j.field("strategy_string", x.strategy);
    j.field("step_time_s", x.step_s).field("tokens_per_sec_per_device", x.tokens_per_sec);
    j.field("peak_memory_gib", x.peak_gib);
  }
  j.field("reason", x.reason);
  if (keep.front) {
    j.key("front").begin_array();
    for (const auto& s : x.front) {
      j.begin_object().field("strategy_string", s.strategy).field("step_time_s", s.step_s);
      j.field("tokens_per_sec_per_device", s.tokens_per_sec).field("peak_memory_gib", s.peak_gib);
      j.field("mfu", s.mfu).end_object();
    }
    j.end_array();
  }
  j.end_object();
}

PointResult read_point_json(const Fields& p, const SweepKeep& keep) {
  PointResult x;
  x.index = p.required_int("index", 0);
  x.model = p.optional_string("model").value_or("");
  x.device = p.optional_string("device").value_or("");
  x.devices = p.required_int("devices");
  x.seq = p.required_int("seq");
  x.global_batch = p.required_int("global_batch");
  x.status = p.optional_string("status").value_or("");
  x.strategy = p.optional_string("strategy_string").value_or("");
  x.step_s = p.optional_number("step_time_s", 0, 1e300);
  x.tokens_per_sec = p.optional_number("tokens_per_sec_per_device", 0, 1e300);
  x.peak_gib = p.optional_number("peak_memory_gib", 0, 1e300);
  x.reason = p.optional_string("reason").value_or("");
  if (keep.front) {
    const YAML::Node list = p.raw("front");
    if (!list.IsSequence()) p.fail("front", "expected a list (the sweep keeps the front)");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Fields s(list[i], p.source(), p.path("front[" + std::to_string(i) + "]"));
      auto number = [&](const char* key) {
        const auto v = s.optional_number(key, 0, 1e300);
        if (!v) s.fail(key, "expected a number");
        return *v;
      };
      FrontStrategy f;
      f.strategy = s.optional_string("strategy_string").value_or("");
      f.step_s = number("step_time_s");
      f.tokens_per_sec = number("tokens_per_sec_per_device");
      f.peak_gib = number("peak_memory_gib");
      f.mfu = number("mfu");
      x.front.push_back(std::move(f));
    }
  }
  return x;
}

std::vector<Smallest> smallest_counts(const std::vector<PointResult>& points) {
  std::vector<Smallest> out;
  for (const auto& x : points) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Smallest& s) {
      return s.model == x.model && s.device == x.device && s.seq == x.seq && s.global_batch == x.global_batch;
    });
    if (it == out.end()) it = out.insert(out.end(), Smallest{x.model, x.device, x.seq, x.global_batch, {}});
    if (x.status == "fits" && (!it->devices || x.devices < *it->devices)) it->devices = x.devices;
  }
  return out;
}

}  // namespace meshfit
