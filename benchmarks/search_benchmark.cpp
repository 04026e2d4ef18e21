// Wall time of the full default search (issue 5's figures): Llama-3.1-70B and DeepSeek-V3 at
// sequence 8192 (4096 for DeepSeek-V3) on 64, 1,024 and 16,384 H100-80GB, with 1 and with all
// threads. Per second per core: candidates enumerated (every one gets a verdict), valid strategies
// decided (estimated, or settled by a proven bound), and memory estimates made. Never fails.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <thread>

#include <tbb/global_control.h>

#include "engine/device_config.hpp"
#include "engine/model_config.hpp"
#include "engine/run_config.hpp"
#include "search/search_workspace.hpp"
#include "search/strategy_search.hpp"

using namespace meshfit;

namespace {

// One workspace for every search, as a caller running many searches keeps it (search_workspace.hpp).
SearchWorkspace workspace;

SearchResult once(const Model& m, const Run& run, const Cluster& c) {
  SearchSpace space;
  space.model = &m;
  space.run = &run;
  space.cluster = &c;
  SearchOptions options;
  options.workspace = &workspace;
  return run_search(space, options);
}

// Median wall seconds of `repeats` searches (the counts are the same every time).
double median_seconds(const Model& m, const Run& run, const Cluster& c, int repeats, SearchResult& r) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    r = once(m, run, c);
    seconds.push_back(r.seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

// Usage: search_benchmark [repeats] (default 5; each figure is the median of that many searches).
int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("median of %d searches; per-core rates divide by seconds x threads\n", repeats);
  std::printf("%-14s %7s %8s %13s %10s %10s %9s %9s %12s %13s %16s %8s\n", "model", "devices", "threads", "enumerated",
              "valid", "estimated", "fitting", "seconds", "enum/s/core", "valid/s/core", "estimates/s/core", "speedup");
  for (const char* name : {"llama-3.1-70b", "deepseek-v3"}) {
    const Model m = load_model(name);
    RunFlags f;
    f.seq = std::string(name) == "deepseek-v3" ? 4096 : 8192;
    f.global_batch = std::string(name) == "deepseek-v3" ? 4096 : 512;
    const Run run = make_run(f, true);
    for (std::int64_t devices : {64, 1024, 16384}) {
      const Cluster c = make_cluster("h100-80gb", devices);
      double one_thread = 0;
      for (unsigned threads : {1u, cores}) {
        tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
        SearchResult r;
        const double s = median_seconds(m, run, c, repeats, r);
        if (threads == 1) one_thread = s;
        std::printf("%-14s %7lld %8u %13lld %10lld %10lld %9lld %9.3f %12.3g %13.3g %16.3g %8.2f\n", name,
                    static_cast<long long>(devices), threads, static_cast<long long>(r.enumerated),
                    static_cast<long long>(r.valid), static_cast<long long>(r.estimated),
                    static_cast<long long>(r.fitting), s, r.enumerated / s / threads, r.valid / s / threads,
                    r.estimated / s / threads, one_thread / s);
        if (threads == cores) break;
      }
    }
  }
  return 0;
}
