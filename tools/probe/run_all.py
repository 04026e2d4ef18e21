"""Runs the whole measurement plan (configurations.py) on the one GPU, each run in a subprocess of
its own (a fresh process group and a clean allocator), within a wall-clock budget, appending every
finished case to --out. A run that fails or runs out of memory is logged and skipped, so one bad
configuration never costs the others; a rerun with --skip-done skips the ids already in --out.

  python3 tools/probe/run_all.py --budget-s 780 --out data/validation/measured-probe.yaml
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configurations  # noqa: E402


def done_ids(path):
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return {line.split(":", 1)[1].strip().strip('"') for line in f if line.startswith("- id:")}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=780, help="stop starting runs after this many seconds")
    p.add_argument("--per-run-s", type=float, default=120, help="a run's own time limit")
    p.add_argument("--skip-done", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    a = p.parse_args(argv)
    start = time.monotonic()
    skip = done_ids(a.out) if a.skip_done else set()
    failed = []
    for entry in configurations.plan():
        if entry["id"] in skip:
            continue
        cmd = configurations.command(entry, a.out)
        if a.dry_run:
            print(" ".join(cmd))
            continue
        left = a.budget_s - (time.monotonic() - start)
        if left < 10:
            print(f"run_all: budget spent; stopped before {entry['id']}", file=sys.stderr)
            break
        try:
            r = subprocess.run(cmd, timeout=min(a.per_run_s, left), capture_output=True, text=True)
            ok = r.returncode == 0
            tail = (r.stderr or "").strip().splitlines()[-1:] if not ok else []
        except subprocess.TimeoutExpired:
            ok, tail = False, ["timed out"]
        print(f"run_all: {entry['id']}: {'ok' if ok else 'FAILED ' + ' '.join(tail)}", file=sys.stderr)
        if not ok:
            failed.append(entry["id"])
    print(f"run_all: {len(failed)} failed: {' '.join(failed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
