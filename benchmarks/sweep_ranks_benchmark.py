#!/usr/bin/env python3
"""Issue 24's figures for `mpirun -np N meshfit sweep`: the 1,000-point sweep of sweep_benchmark.cpp
(5 dense and MoE presets x 2 devices x 10 device counts x 2 sequence lengths x 5 global batches)
searched by one process with every core, then by 1, 2 and 4 MPI ranks of one search thread each, so
that the ranks are the only parallelism: the wall time of each (mpirun's start included), the points
per second and the speedup over one rank. Every output is compared with the one-process run's
(byte for byte; a difference fails the benchmark).

On a machine with fewer cores than ranks the ranks are oversubscribed (mpirun --oversubscribe):
they share the cores, and the speedup cannot pass the core count. On a cluster, run the same
mpirun line with a hostfile (README's "Sweeps on a cluster").

Usage: sweep_ranks_benchmark.py MESHFIT [--reps N] [--ranks 1,2,4] [--mpirun PATH]
(N timed runs of each, 1 by default; the median is printed.)
"""
import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SWEEP = """models: [llama-3.1-8b, llama-3.1-70b, qwen3-32b, mixtral-8x7b, qwen3-30b-a3b]
devices: [h100-80gb, b200-192gb]
device_counts: "8..4096"
seq: [4096, 8192]
global_batch: [256, 512, 1024, 2048, 4096]
"""
POINTS = 1000


def median_wall(command, reps, env, out, reference):
    walls = []
    for _ in range(reps):
        start = time.monotonic()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.monotonic() - start)
        if reference and not filecmp.cmp(out, reference, shallow=False):
            sys.exit(f"sweep_ranks_benchmark: {' '.join(command)} wrote another result than one process")
    return statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("meshfit")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--mpirun", default=shutil.which("mpirun"))
    args = parser.parse_args()
    if not args.mpirun:
        sys.exit("sweep_ranks_benchmark: no mpirun (Debian: apt-get install openmpi-bin)")
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory(prefix="meshfit-sweep-ranks-") as d:
        sweep = os.path.join(d, "sweep.yaml")
        with open(sweep, "w") as f:
            f.write(SWEEP)
        reference, out = os.path.join(d, "one.json"), os.path.join(d, "ranks.json")
        one = median_wall([args.meshfit, "sweep", sweep, "--format", "json", "-q", "-o", reference],
                          args.reps, env, None, None)
        print(f"sweep_ranks_benchmark: {POINTS:,} points, {cores} cores, median of {args.reps}")
        print(f"  one process, {cores} threads: {one:.2f} s ({POINTS / one:.1f} points/s)")
        counts = [int(x) for x in args.ranks.split(",")]
        base = None
        for n in counts:
            wall = median_wall([args.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(n), args.meshfit,
                                "sweep", sweep, "--format", "json", "-q", "--threads", "1", "-o", out],
                               args.reps, env, out, reference)
            base = base or wall  # the first count's (1 rank's unless --ranks says otherwise)
            note = " (oversubscribed)" if n > cores else ""
            print(f"  {n} rank{'s' if n > 1 else ''} x 1 thread{note}: {wall:.2f} s ({POINTS / wall:.1f} points/s), "
                  f"speedup {base / wall:.2f}x over {counts[0]}; output identical")


if __name__ == "__main__":
    main()
