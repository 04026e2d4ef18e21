"""Runs the whole measurement plan (configurations.py) on the one GPU, each run in a subprocess of
its own (a fresh process group and a clean allocator), several at once, within a wall-clock budget.
Each run writes its case to a file of its own; after every run the cases so far are gathered into
--out in the plan's order, so the file does not depend on which run finished first, and a call cut
off keeps what it measured. A run that fails is logged
(the tail of its error in --log) and skipped, so one bad configuration never costs the others (after
two failures of one kind the rest of that kind is skipped); one
that ran out of memory while sharing the GPU is tried again alone if time is left. A rerun with
--skip-done skips the ids already in --out.

  python3 tools/probe/run_all.py --budget-s 780 --lanes 3 --out data/validation/measured-probe.yaml

Memory is per process (the caching allocator's peaks are its own), so runs sharing the GPU measure
the same peaks as runs alone; their step times are not comparable, and the cases carry none.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configurations  # noqa: E402


def done_ids(path):
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {line.split(":", 1)[1].strip().strip('"') for line in f if line.startswith("- id:")}


def out_of_memory(text):
    return "OutOfMemoryError" in text or "CUDA out of memory" in text


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--log", default=None, help="where each failed run's error tail goes")
    p.add_argument("--budget-s", type=float, default=780, help="stop starting runs after this many seconds")
    p.add_argument("--per-run-s", type=float, default=180, help="a run's own time limit")
    p.add_argument("--lanes", type=int, default=3, help="runs at once")
    p.add_argument("--only", default=None, help="comma-separated plan indices to run")
    p.add_argument("--skip-done", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    a = p.parse_args(argv)
    start = time.monotonic()
    skip = done_ids(a.out) if a.skip_done else set()
    entries = [e for e in configurations.plan() if e["id"] not in skip]
    if a.only:
        keep = {int(x) for x in a.only.split(",")}
        entries = [e for i, e in enumerate(configurations.plan()) if i in keep and e["id"] not in skip]
    work = tempfile.mkdtemp(prefix="probe-")
    prior = ""
    if os.path.exists(a.out):
        with open(a.out, encoding="utf-8") as f:
            prior = f.read()
    failures_by_kind = {}

    def kind(e):  # runs alike enough that one's error is likely the other's
        return (e["model"], e["tp"] > 1, e["sp"], e["compile"], e["recompute"])

    def save():  # --out rewritten after every run, in the plan's order, so a cut-off call keeps its cases
        tmp = a.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(prior)
            for e in configurations.plan():
                if e["id"] in finished:
                    f.write(finished[e["id"]])
        os.replace(tmp, a.out)

    log = open(a.log, "a", encoding="utf-8") if a.log else sys.stderr
    queue = [(e, a.lanes) for e in entries]  # (entry, lanes it may share the GPU with)
    running, finished, failed = [], {}, []

    def left():
        return a.budget_s - (time.monotonic() - start)

    while queue or running:
        while queue and left() > 10:
            e, lanes = queue[0]
            if len(running) >= lanes or (lanes == 1 and running):
                break
            queue.pop(0)
            if failures_by_kind.get(kind(e), 0) >= 2:
                print(f"run_all: {e['id']}: skipped, two runs of its kind failed", file=log, flush=True)
                failed.append(e["id"])
                continue
            path = os.path.join(work, e["id"] + ".yaml")
            cmd = configurations.command(e, path)
            if a.dry_run:
                print(" ".join(cmd))
                continue
            err = open(os.path.join(work, e["id"] + ".err"), "w+", encoding="utf-8")
            proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, text=True,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1"))
            running.append((e, lanes, proc, err, time.monotonic(), path))
        if not queue or left() <= 10:
            if not running:
                break
        time.sleep(0.5)
        for item in list(running):
            e, lanes, proc, err, t0, path = item
            timed_out = time.monotonic() - t0 > a.per_run_s or left() < -30
            if proc.poll() is None and not timed_out:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            running.remove(item)
            err.seek(0)
            text = err.read()
            err.close()
            ok = proc.returncode == 0 and os.path.exists(path)
            took = time.monotonic() - t0
            if ok:
                with open(path, encoding="utf-8") as f:
                    finished[e["id"]] = f.read()
                save()
                print(f"run_all: {e['id']}: ok in {took:.0f} s", file=log, flush=True)
                continue
            if out_of_memory(text) and lanes > 1:
                queue.append((e, 1))  # alone, at the end
                print(f"run_all: {e['id']}: out of memory beside others; again alone later", file=log, flush=True)
                continue
            reason = "timed out" if timed_out else f"exit {proc.returncode}"
            tail = "\n    ".join(text.strip().splitlines()[-25:])
            print(f"run_all: {e['id']}: FAILED ({reason}, {took:.0f} s)\n    {tail}", file=log, flush=True)
            failed.append(e["id"])
            failures_by_kind[kind(e)] = failures_by_kind.get(kind(e), 0) + 1
    not_run = [e["id"] for e, _ in queue]
    if not a.dry_run:
        save()
    print(f"run_all: {len(finished)} measured, {len(failed)} failed, {len(not_run)} not run "
          f"in {time.monotonic() - start:.0f} s; failed: {' '.join(failed)}; not run: {' '.join(not_run)}",
          file=log, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
