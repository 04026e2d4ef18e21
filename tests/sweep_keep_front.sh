#!/bin/sh
# A sweep keeping each point's Pareto front (keep: [front, best, smallest]): its shards merged and
# a run resumed from one shard give the one-process JSON byte for byte; apart from the fronts and
# `keep`, that JSON is small.yaml's (the same best strategies and smallest counts), and every
# point that fits has a front that starts with its best strategy, slower and smaller down the list.
# $1: the meshfit binary, $2: tests/data/sweep.
set -eu
bin=$1
data=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$bin" sweep "$data/small-front.yaml" --format json -q >"$d/a.json"
for k in 1 2 3; do "$bin" sweep "$data/small-front.yaml" --format json -q --shard $k/3 -o "$d/s$k.json"; done
"$bin" merge "$d/s3.json" "$d/s1.json" "$d/s2.json" >"$d/m.json"
cmp "$d/a.json" "$d/m.json"
"$bin" sweep "$data/small-front.yaml" --format json -q --resume "$d/s2.json" >"$d/r.json"
cmp "$d/a.json" "$d/r.json"
"$bin" sweep "$data/small.yaml" --format json -q >"$d/plain.json"
python3 - "$d/a.json" "$d/plain.json" <<'PY'
import json, sys
front, plain = (json.load(open(p)) for p in sys.argv[1:])
assert front.pop("keep") == ["best", "smallest", "front"]
for p in front["points"]:
    f = p.pop("front")
    assert (p["status"] == "fits") == bool(f), p["index"]
    assert not f or f[0]["strategy_string"] == p["strategy_string"], p["index"]
    assert all(a["step_time_s"] <= b["step_time_s"] and a["peak_memory_gib"] >= b["peak_memory_gib"]
               for a, b in zip(f, f[1:])), p["index"]
front["sweep"] = plain["sweep"]
assert front == plain, "the points differ from small.yaml's"
PY
# A shard of the plain sweep does not merge with the front's shards, nor resume it.
"$bin" sweep "$data/small.yaml" --format json -q --shard 1/3 -o "$d/p1.json"
if "$bin" merge "$d/p1.json" "$d/s2.json" "$d/s3.json" 2>"$d/err"; then exit 1; fi
grep -q "field 'keep'" "$d/err"
if "$bin" sweep "$data/small-front.yaml" --format json -q --resume "$d/p1.json" 2>"$d/err"; then exit 1; fi
grep -q "field 'keep'" "$d/err"
echo "keep front: ok"
