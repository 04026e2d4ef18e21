#include "engine/sweep_mpi.hpp"

#include <cstdlib>
#include <stdexcept>

#include "engine/input_error.hpp"

#ifdef MESHFIT_HAVE_MPI

// The C API only: the MPI-2 C++ bindings are gone from MPI-3, and mpi.h would pull in Open MPI's
// (or MPICH's) old ones under C++ unless told not to.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iostream>
#include <mutex>
#include <set>
#include <utility>

#include "engine/interrupt.hpp"

namespace meshfit {

namespace {

// The messages between rank 0 and the others.
enum Tag : int {
  kAsk = 1,      // rank → 0: int64, how many more points it can take
  kAssign = 2,   // 0 → rank: int64[], the points to search; none: the queue is empty
  kResult = 3,   // rank → 0: "INDEX JSON" (text: no byte order to agree on)
  kDone = 4,     // rank → 0: int64 0; it ran every point it was given and will ask for no more
  kStopped = 5,  // rank → 0: int64 0; it was interrupted (SIGINT/SIGTERM)
};

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

void send_int(std::int64_t value, int to, int tag) { MPI_Send(&value, 1, MPI_INT64_T, to, tag, MPI_COMM_WORLD); }

// Points searched on this rank's cores, `threads` at once, while the main thread — the one every
// MPI call is funneled through — talks to the other ranks. The searches run as tasks enqueued in
// an arena whose every slot is a worker's (none reserved for the main thread, which never joins),
// with one worker more than usual allowed, so that `threads` threads search.
class LocalRunner {
 public:
  LocalRunner(std::function<std::string(std::size_t)> search, std::size_t threads)
      : search_(std::move(search)),
        threads_(threads),
        workers_(tbb::global_control::max_allowed_parallelism, threads + 1),
        arena_(static_cast<int>(threads), 0) {
    arena_.initialize();
  }
  // The tasks refer to this object: it outlives them (an interrupt ends the process instead).
  ~LocalRunner() {
    std::unique_lock<std::mutex> lock(m_);
    changed_.wait(lock, [&] { return running_ == 0; });
  }
  LocalRunner(const LocalRunner&) = delete;
  LocalRunner& operator=(const LocalRunner&) = delete;

  std::size_t threads() const { return threads_; }
  std::size_t running() {
    const std::lock_guard<std::mutex> lock(m_);
    return running_;
  }
  void start(std::size_t index) {
    {
      const std::lock_guard<std::mutex> lock(m_);
      ++running_;
    }
    arena_.enqueue([this, index] {
      std::string json, error;
      try {
        json = search_(index);
      } catch (const std::exception& e) {  // a bug (a point's own errors are in its JSON): the main loop throws it
        error = e.what();
      }
      const std::lock_guard<std::mutex> lock(m_);
      if (error.empty()) {
        finished_.emplace_back(index, std::move(json));
      } else if (error_.empty()) {
        error_ = "point " + std::to_string(index) + ": " + error;
      }
      --running_;
      changed_.notify_all();
    });
  }
  std::vector<std::pair<std::size_t, std::string>> take_finished() {
    const std::lock_guard<std::mutex> lock(m_);
    if (!error_.empty()) throw std::runtime_error(error_);
    return std::exchange(finished_, {});
  }
  // Until a point finishes, or a millisecond: MPI has no way to wake this thread, so the main loop
  // polls it that often (a millisecond is nothing beside a search, and an idle rank sleeps).
  void wait_a_little() {
    std::unique_lock<std::mutex> lock(m_);
    changed_.wait_for(lock, std::chrono::milliseconds(1), [&] { return !finished_.empty() || !error_.empty(); });
  }

 private:
  std::function<std::string(std::size_t)> search_;
  std::size_t threads_;
  tbb::global_control workers_;
  tbb::task_arena arena_;
  std::mutex m_;
  std::condition_variable changed_;
  std::size_t running_ = 0;
  std::vector<std::pair<std::size_t, std::string>> finished_;
  std::string error_;
};

std::size_t thread_count(std::size_t asked) {
  return asked > 0 ? asked : static_cast<std::size_t>(std::max(1, tbb::info::default_concurrency()));
}

// Rank 0: hands out the queue (its own runner first takes what its free threads can), gathers the
// results, and stops when every point is back and every other rank has said it is done.
void serve(const SweepRanks::Job& job, int size) {
  LocalRunner local(job.search, thread_count(job.threads));
  std::set<std::size_t> back;
  std::vector<std::size_t> per_rank(static_cast<std::size_t>(size), 0);
  std::size_t next = 0;
  int done = 0;
  bool stopped = false;
  auto record = [&](int from, std::size_t index, const std::string& json) {
    if (!back.insert(index).second) throw std::logic_error("point " + std::to_string(index) + " came back twice");
    job.receive(index, json);
    ++per_rank[static_cast<std::size_t>(from)];
    if (job.progress) job.progress(back.size(), per_rank);
  };
  // What has come back is written, marked incomplete; then every rank ends, this one too.
  auto end_interrupted = [&](int code) {
    try {
      job.write_interrupted();
    } catch (const std::exception& e) {
      std::cerr << "meshfit sweep: error: " << e.what() << '\n';
    }
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; should a library's, this does not either
  };
  try {
    while (true) {
      while (next < job.order.size() && local.running() < local.threads()) local.start(job.order[next++]);
      for (const auto& [index, json] : local.take_finished()) record(0, index, json);
      int flag = 0;
      MPI_Status st;
      while (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag) {
        if (st.MPI_TAG == kResult) {
          int n = 0;
          MPI_Get_count(&st, MPI_CHAR, &n);
          std::string text(static_cast<std::size_t>(n), '\0');
          MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, kResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          const std::size_t space = text.find(' ');
          if (space == std::string::npos) throw std::logic_error("a result without its point index");
          record(st.MPI_SOURCE, std::stoul(text.substr(0, space)), text.substr(space + 1));
          continue;
        }
        std::int64_t value = 0;
        MPI_Recv(&value, 1, MPI_INT64_T, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (st.MPI_TAG == kAsk) {
          std::vector<std::int64_t> given;
          while (static_cast<std::int64_t>(given.size()) < value && next < job.order.size()) {
            given.push_back(static_cast<std::int64_t>(job.order[next++]));
          }
          MPI_Send(given.data(), static_cast<int>(given.size()), MPI_INT64_T, st.MPI_SOURCE, kAssign, MPI_COMM_WORLD);
        } else if (st.MPI_TAG == kDone) {
          ++done;
        } else if (st.MPI_TAG == kStopped) {
          stopped = true;
        }
      }
      if (stopped || InterruptScope::requested()) end_interrupted(kExitInterrupted);
      if (next == job.order.size() && local.running() == 0 && done == size - 1) break;
      local.wait_a_little();
    }
    for (const auto& [index, json] : local.take_finished()) record(0, index, json);
    if (back.size() != job.order.size()) throw std::logic_error("a point did not come back");
  } catch (const std::exception& e) {
    std::cerr << "meshfit sweep: internal error on rank 0: " << e.what() << '\n';
    end_interrupted(3);
  }
}

// Every other rank: asks for as many points as it has idle threads (and one), searches them, sends
// each result back, and says it is done once rank 0 has no more to give.
void work(const SweepRanks::Job& job, int rank) {
  LocalRunner local(job.search, thread_count(job.threads));
  bool asked = false, closed = false, stopped = false;
  try {
    while (true) {
      for (auto& [index, json] : local.take_finished()) {
        const std::string text = std::to_string(index) + ' ' + json;
        MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kResult, MPI_COMM_WORLD);
      }
      if (!stopped && InterruptScope::requested()) {
        send_int(0, 0, kStopped);  // rank 0 writes what it has and ends the job
        stopped = closed = true;
      }
      int flag = 0;
      MPI_Status st;
      while (MPI_Iprobe(0, kAssign, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag) {
        int n = 0;
        MPI_Get_count(&st, MPI_INT64_T, &n);
        std::vector<std::int64_t> given(static_cast<std::size_t>(n));
        MPI_Recv(given.data(), n, MPI_INT64_T, 0, kAssign, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        asked = false;
        if (given.empty()) closed = true;
        for (auto index : given) local.start(static_cast<std::size_t>(index));
      }
      // One point more than threads: a thread that finishes starts the next at once, not after a
      // round trip to rank 0 (a millisecond or two a point: without it 2 ranks of one thread took
      // 24.2 s over benchmarks/sweep_ranks_benchmark.py's sweep, with it 20.1 s); at the end a
      // rank holds at most one point, one of the smallest, that another could have run.
      const std::size_t running = local.running(), wanted = local.threads() + 1;
      if (!closed && !asked && running < wanted) {
        send_int(static_cast<std::int64_t>(wanted - running), 0, kAsk);
        asked = true;
      }
      if (closed && !asked && running == 0) {
        for (auto& [index, json] : local.take_finished()) {
          const std::string text = std::to_string(index) + ' ' + json;
          MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kResult, MPI_COMM_WORLD);
        }
        if (!stopped) send_int(0, 0, kDone);
        return;
      }
      local.wait_a_little();
    }
  } catch (const std::exception& e) {
    std::cerr << "meshfit sweep: internal error on rank " << rank << ": " << e.what() << '\n';
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::_Exit(3);
  }
}

}  // namespace

bool sweep_mpi_built() { return true; }

SweepRanks::SweepRanks() {
  if (!launched_by_mpirun()) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    throw std::runtime_error("MPI_Init_thread failed");
  }
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (provided < MPI_THREAD_FUNNELED) {
    // The search threads exist beside the main thread (they never call MPI): a library that
    // cannot have them is not one this can run on.
    std::cerr << "meshfit sweep: this MPI library supports no threads beside MPI's (MPI_THREAD_FUNNELED)\n";
    std::cerr.flush();
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

SweepRanks::~SweepRanks() {
  int finalized = 0;
  if (active_ && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

SweepRanks::Agreement SweepRanks::agree(bool failed, const std::string& key) {
  Agreement a;
  if (!active_) {
    a.all_ok = !failed;
    a.report_own = failed;
    return a;
  }
  // Rank 0's verdict and key, to every rank.
  int root_failed = rank_ == 0 && failed ? 1 : 0;
  MPI_Bcast(&root_failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root_key = key;
  std::int64_t length = static_cast<std::int64_t>(key.size());
  MPI_Bcast(&length, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  root_key.resize(static_cast<std::size_t>(length));
  MPI_Bcast(root_key.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  a.differs = rank_ != 0 && !failed && !root_failed && key != root_key;
  const int mine = failed || a.differs ? rank_ : size_;
  int first = size_;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  a.all_ok = first == size_;
  a.first_failed = first;
  a.report_own = failed && (rank_ == 0 || !root_failed);
  return a;
}

void SweepRanks::barrier() {
  if (active_) MPI_Barrier(MPI_COMM_WORLD);
}

void SweepRanks::run(const Job& job) {
  if (!active_) throw std::logic_error("SweepRanks::run outside an MPI job");
  const InterruptScope interrupt;
  if (rank_ == 0) {
    serve(job, size_);
  } else {
    work(job, rank_);
  }
}

}  // namespace meshfit

#else  // a build without MPI: one rank, always

namespace meshfit {

bool sweep_mpi_built() { return false; }
// Under mpirun every rank would run the whole sweep and write it: refused, with what to do instead.
SweepRanks::SweepRanks() {
  const char* ranks = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (ranks && std::atoi(ranks) > 1) {
    throw InputError(
        "this meshfit was built without MPI, so its ranks cannot share a sweep: build it with Open MPI "
        "(Debian: libopenmpi-dev openmpi-bin), or run shares with --shard K/N and join them with meshfit merge");
  }
}
SweepRanks::~SweepRanks() {}  // NOLINT(modernize-use-equals-default): the MPI build's does finalize

SweepRanks::Agreement SweepRanks::agree(bool failed, const std::string&) {
  Agreement a;
  a.all_ok = !failed;
  a.report_own = failed;
  return a;
}

void SweepRanks::barrier() {}

void SweepRanks::run(const Job&) { throw std::logic_error("SweepRanks::run in a build without MPI"); }

}  // namespace meshfit

#endif
