// Issue 24's figures: `meshfit sweep` over a 1,000-point sweep — 5 dense and MoE presets (8B to
// 70B) x 2 devices (H100-80GB, B200) x 10 device counts (8 to 4,096) x 2 sequence lengths x 5
// global batches — through the command itself (read, points in parallel, JSON written), with one
// thread and with every core. Prints the wall times, the points per second and the speedup
// (`sweep_benchmark N`: N timed runs each, 1 by default; the median). Never fails.
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "engine/commands.hpp"

using namespace meshfit;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  const auto dir = std::filesystem::temp_directory_path() / "meshfit-sweep-benchmark";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "sweep.yaml").string();
  std::ofstream(file) << "models: [llama-3.1-8b, llama-3.1-70b, qwen3-32b, mixtral-8x7b, qwen3-30b-a3b]\n"
                         "devices: [h100-80gb, b200-192gb]\n"
                         "device_counts: \"8..4096\"\n"
                         "seq: [4096, 8192]\n"
                         "global_batch: [256, 512, 1024, 2048, 4096]\n";
  auto time_with = [&](int threads) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    std::vector<double> walls;
    for (int r = 0; r < reps; ++r) {
      std::ostringstream out, err;
      const auto start = std::chrono::steady_clock::now();
      command_sweep({file, "--format", "json", "-q"}, out, err);
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(walls.begin(), walls.end());
    return walls[walls.size() / 2];
  };
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  const double one = time_with(1), all = time_with(cores);
  std::printf(
      "sweep: 1,000 points; 1 thread %.2f s (%.1f points/s); %d threads %.2f s (%.1f points/s); speedup %.2fx\n", one,
      1000 / one, cores, all, 1000 / all, one / all);
  std::filesystem::remove_all(dir);
  return 0;
}
