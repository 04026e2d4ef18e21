// `mpirun -np N meshfit sweep SWEEP.yaml` (issue 24): a sweep's points spread over Open MPI ranks.
// Rank 0 keeps the queue of points, biggest first (sweep_assign.hpp), and hands them out as ranks
// ask, itself included: every rank searches as many points at once as it has threads (each search
// in parallel too, oneTBB). A result comes back to rank 0 as the point's JSON (sweep_results.hpp),
// and rank 0 writes the output in point order: the same bytes for any N as one process writes.
//
// MPI is initialised only here, by `sweep`, and only when a launcher started the process (Open
// MPI's mpirun sets OMPI_COMM_WORLD_SIZE, a PMIx launcher such as `srun --mpi=pmix` PMIX_RANK):
// every other command, and `sweep` run on its own, never touch it. A build without MPI
// (-DMESHFIT_MPI=OFF, or Open MPI not found) compiles the one-rank stub of sweep_mpi.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace meshfit {

// Whether this binary was built with MPI (`meshfit sweep --help` says so).
bool sweep_mpi_built();

class SweepRanks {
 public:
  // Joins the MPI job (MPI_Init_thread, MPI_THREAD_FUNNELED: only the main thread calls MPI; the
  // search threads never do) when a launcher started this process; otherwise one rank, no MPI.
  SweepRanks();
  ~SweepRanks();  // MPI_Finalize, every rank together
  SweepRanks(const SweepRanks&) = delete;
  SweepRanks& operator=(const SweepRanks&) = delete;

  bool active() const { return active_; }  // in an MPI job (even of one rank): the ranked run
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Once every rank has read its inputs (`failed`: it could not) into a sweep described by `key`
  // (its fingerprint, point count and keep): whether every rank could and all read the same sweep.
  struct Agreement {
    bool all_ok = true;
    bool differs = false;     // this rank's key is not rank 0's
    bool report_own = false;  // this rank's own problem is to be printed (rank 0's, printed once)
    int first_failed = 0;     // the lowest rank with a problem (when !all_ok)
  };
  Agreement agree(bool failed, const std::string& key);
  // Every rank waits for the others (after printing why the sweep cannot run, before exiting: mpirun
  // ends the job at the first rank that exits with an error, and a slower rank's message with it).
  void barrier();

  struct Job {
    std::vector<std::size_t> order;                  // rank 0: the points to search, in hand-out order
    std::function<std::string(std::size_t)> search;  // one point searched, as its JSON; any thread
    std::size_t threads = 0;                         // this rank's search threads (0: its cores)
    // Rank 0, on its main thread, as each point comes back: its index and JSON. Read it then, not
    // at the end: an interrupted run has about a second to write what came back (mpirun's wait
    // between SIGTERM and SIGKILL).
    std::function<void(std::size_t, const std::string&)> receive;
    // Rank 0, after each point: points done, and done per rank.
    std::function<void(std::size_t, const std::vector<std::size_t>&)> progress;
    // Rank 0, on Ctrl-C (SIGINT or SIGTERM to any rank, which is what mpirun sends every rank when
    // one fails or is itself interrupted): write what has come back, marked incomplete.
    std::function<void()> write_interrupted;
  };
  // Returns once every point of job.order has come back to rank 0 (through `receive`). On an
  // interrupt rank 0 calls write_interrupted, then ends every rank (MPI_Abort with exit code 130):
  // no return. An error inside the run ends them too (exit 3), after rank 0 has written what it has.
  void run(const Job& job);

 private:
  bool active_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace meshfit
