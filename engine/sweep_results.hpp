// What a sweep found per point (meshfit sweep's outputs, merge's input, the HTML page's data).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshfit {

class Fields;
class JsonWriter;

// What a sweep keeps per point (the sweep file's `keep`): the fastest fitting strategy's figures,
// the smallest fitting device count per (model, device, seq, batch), the Pareto front. The
// default, best and smallest, is what sweeps kept before `keep` existed: their outputs stay the same.
struct SweepKeep {
  bool best = true, smallest = true, front = false;
  bool is_default() const { return *this == SweepKeep{}; }
  // The names, in this fixed order whatever the order the file lists them in: best, smallest, front.
  std::vector<std::string> names() const;
  std::string text() const;  // the names joined by ", "
  bool operator==(const SweepKeep&) const = default;
};

// `key` of `f` as a keep list (names from {best, smallest, front}, each once, at least one); a
// mistake is an InputError naming the file and the field.
SweepKeep read_keep(const Fields& f, const std::string& key);

// One strategy of a point's Pareto front: its figures as `meshfit search` reports them.
struct FrontStrategy {
  std::string strategy;
  double step_s = 0, tokens_per_sec = 0, peak_gib = 0, mfu = 0;
};

// One point's result as the outputs carry it (and merge reads it back).
struct PointResult {
  std::int64_t index = 0;
  std::string model, device, status, strategy, reason;
  std::int64_t devices = 0, seq = 0, global_batch = 0;
  std::optional<double> step_s, tokens_per_sec, peak_gib;
  std::vector<FrontStrategy> front;  // fastest first; kept with `keep: [front]`
};

// A point as one object of the JSON's `points` (what `keep` says it carries), and read back from
// one: writing what was read gives the same bytes (shards, --resume and the ranks of an MPI run
// carry points this way).
void write_point_json(JsonWriter& j, const PointResult& x, const SweepKeep& keep);
PointResult read_point_json(const Fields& p, const SweepKeep& keep);

// Per (model, device, seq, global batch), in first-seen order: the smallest count that fits.
struct Smallest {
  std::string model, device;
  std::int64_t seq = 0, global_batch = 0;
  std::optional<std::int64_t> devices;
};
std::vector<Smallest> smallest_counts(const std::vector<PointResult>& points);

}  // namespace meshfit
