// A table of what a layer kind's figures read below a (tp, cp, pp) triple of the search: the SP
// flag and TP overlap, the CP algorithm, ep, etp and the micro-batch size (and, for the times, whether the
// schedule is DualPipeV). The walk of a triple (search_space_enumerate.hpp) takes these values
// from its domains (triple_domains.hpp); an entry sits at the positions of the strategy's values
// in them, so the table needs no key, no hash and no collision handling. The scorer opens it when
// a triple's walk starts and closes it after; outside a walk (explain, check, the tests) it is
// closed and every figure is made afresh.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "estimators/strategy.hpp"

namespace meshfit {

// The values of the walked dimensions in a triple, as TripleDomains holds them (rising, for the
// numbers; the CP algorithms in the walk's order).
struct TripleValues {
  std::int64_t tp = 1, cp = 1;
  std::span<const CpAlgo> algos;
  std::span<const std::int64_t> eps, etps, bs;
};

template <class Entry>
class TripleTable {
 public:
  // A triple's walk starts: every entry empty. `flags`: the values of the extra index (1 or 2).
  void open(const TripleValues& v, std::size_t flags) {
    v_ = v;
    flags_ = flags;
    const std::size_t size = kSpSettings * v.algos.size() * v.eps.size() * v.etps.size() * v.bs.size() * flags;
    if (entries_.size() < size) entries_.resize(size);
    filled_.assign(size, 0);
    open_ = true;
  }
  void close() { open_ = false; }

  // The entry of `s` under `flag`, with `filled` telling whether it holds its figures already (the
  // caller fills it otherwise); null when the table is closed or s's values are not the triple's.
  Entry* find(const Strategy& s, std::size_t flag, bool& filled) {
    if (!open_ || s.tp != v_.tp || s.cp != v_.cp) return nullptr;
    const std::size_t algo = position(v_.algos, s.cp_algo);
    const std::size_t ep = rising_position(v_.eps, s.ep);
    const std::size_t etp = rising_position(v_.etps, s.etp);
    const std::size_t b = rising_position(v_.bs, s.micro_batch);
    if (algo == kOut || ep == kOut || etp == kOut || b == kOut || flag >= flags_) return nullptr;
    const std::size_t i =
        ((((sp_setting(s) * v_.algos.size() + algo) * v_.eps.size() + ep) * v_.etps.size() + etp) * v_.bs.size() + b) *
            flags_ +
        flag;
    filled = filled_[i] != 0;
    filled_[i] = 1;
    return &entries_[i];
  }

 private:
  static constexpr std::size_t kOut = SIZE_MAX;
  // SP off or on, each with tp_comm_overlap off or on (the times read both).
  static constexpr std::size_t kSpSettings = 4;
  static std::size_t sp_setting(const Strategy& s) { return (s.sp ? 1 : 0) + (s.tp_comm_overlap ? 2 : 0); }
  template <class T>
  static std::size_t position(std::span<const T> values, const T& x) {
    const auto it = std::find(values.begin(), values.end(), x);
    return it == values.end() ? kOut : static_cast<std::size_t>(it - values.begin());
  }
  static std::size_t rising_position(std::span<const std::int64_t> values, std::int64_t x) {
    const auto it = std::lower_bound(values.begin(), values.end(), x);
    return it == values.end() || *it != x ? kOut : static_cast<std::size_t>(it - values.begin());
  }

  TripleValues v_;
  std::size_t flags_ = 1;
  bool open_ = false;
  std::vector<Entry> entries_;         // grown, never shrunk: the largest triple's size
  std::vector<unsigned char> filled_;  // per entry: its figures made in this triple
};

// The entry of `s` under `flag` in `table` (null: no table), filled by `make(entry)` the first
// time the walk meets s's values; without a table, made into `local`.
template <class Entry, class Make>
const Entry& found_or_made(TripleTable<Entry>* table, const Strategy& s, std::size_t flag, std::optional<Entry>& local,
                           Make&& make) {
  bool filled = false;
  Entry* entry = table ? table->find(s, flag, filled) : nullptr;
  if (entry && filled) return *entry;
  if (!entry) entry = &local.emplace();
  make(*entry);
  return *entry;
}

}  // namespace meshfit
