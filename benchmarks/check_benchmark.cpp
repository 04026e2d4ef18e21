// Issue 6's figure: `meshfit check` over 200 free entries (every strategy searched for each) of
// realistic sizes — dense and MoE presets from 8B to 70B on 8 to 1,024 H100-80GB, sequence 4,096
// or 8,192, global batch 256 to 2,048 — with all cores. Prints the wall time (median of 3) and
// the per-entry median (`check_benchmark N`: N timed runs, 3 by default). Target: under 10 s on the 2-core machine.
// Never fails.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "engine/check_runner.hpp"

using namespace meshfit;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;  // timed runs; the median is reported
  const char* models[] = {"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "mixtral-8x7b", "qwen3-30b-a3b"};
  const std::int64_t device_counts[] = {8, 16, 32, 64, 128, 256, 512, 1024};
  const std::int64_t seqs[] = {4096, 8192};
  const std::int64_t batches[] = {256, 512, 1024, 2048};
  std::vector<CheckEntry> entries;
  for (std::size_t i = 0; entries.size() < 200; ++i) {
    CheckEntry e;
    e.model = models[i % 5];
    e.devices = device_counts[(i / 5) % 8];
    e.run.seq = seqs[(i / 40) % 2];
    e.run.global_batch = batches[(i / 80 + i) % 4];
    e.device = "h100-80gb";
    e.name = std::string(e.model) + "-" + std::to_string(e.devices) + "-" + std::to_string(i);
    entries.push_back(e);
  }
  std::vector<double> walls;
  std::vector<double> per_entry;
  std::int64_t passed = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    const auto results = run_checks(entries);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (rep == 0) {
      for (const auto& r : results) {
        per_entry.push_back(r.seconds);
        passed += r.status == CheckStatus::pass;
      }
    }
  }
  std::sort(walls.begin(), walls.end());
  std::sort(per_entry.begin(), per_entry.end());
  std::printf(
      "check: %zu free entries, %lld pass; wall time median of %d: %.2f s (min %.2f, max %.2f); "
      "per entry median %.3f s, max %.3f s\n",
      entries.size(), static_cast<long long>(passed), reps, walls[walls.size() / 2], walls.front(), walls.back(),
      per_entry[per_entry.size() / 2], per_entry.back());
  return 0;
}
