#!/bin/sh
# `mpirun -np N meshfit sweep` (issue 24) on this machine, the ranks talking TCP over loopback as
# they would between machines: for N = 1, 2, 4 (oversubscribed: more ranks than cores) the JSON
# equals the one-process run's and the merge of three --shard runs, byte for byte, for small.yaml
# and for small-front.yaml (keep: [front]); so do the table, the CSV and a --resume run through
# stdout; stderr counts the points per rank. A rank that cannot read the sweep ends every rank
# (exit 2, the message once). Ctrl-C to mpirun, and a rank killed midway, leave rank 0's -o file
# marked "complete":false with fewer points than the sweep's, and mpirun exits non-zero.
# $1: the meshfit binary, $2: tests/data/sweep, $3: mpirun.
set -eu
bin=$1
data=$2
mpirun=$3
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# Open MPI refuses root unless told (CI runs as root); the variables are ignored otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Ranks on this machine as on many: not bound to cores, TCP over loopback between them.
opts="--oversubscribe --bind-to none --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"
ranks() {
  n=$1
  shift
  # shellcheck disable=SC2086 # $opts is a list of words
  "$mpirun" $opts -np "$n" "$bin" sweep "$@"
}
for sweep in small small-front; do
  "$bin" sweep "$data/$sweep.yaml" --format json -q >"$d/one.json"
  for k in 1 2 3; do "$bin" sweep "$data/$sweep.yaml" --format json -q --shard $k/3 -o "$d/s$k.json"; done
  "$bin" merge "$d/s1.json" "$d/s2.json" "$d/s3.json" >"$d/merged.json"
  cmp "$d/one.json" "$d/merged.json"
  for n in 1 2 4; do
    ranks $n "$data/$sweep.yaml" --format json -q -o "$d/ranks$n.json"
    cmp "$d/one.json" "$d/ranks$n.json" || { echo "$sweep: $n ranks differ from one process"; exit 1; }
  done
done
"$bin" sweep "$data/small.yaml" -q >"$d/one.txt"
ranks 3 "$data/small.yaml" -q >"$d/ranks.txt"
cmp "$d/one.txt" "$d/ranks.txt"
"$bin" sweep "$data/small.yaml" --format csv -q >"$d/one.csv"
ranks 4 "$data/small.yaml" --format csv -q >"$d/ranks.csv"
cmp "$d/one.csv" "$d/ranks.csv"
"$bin" sweep "$data/small.yaml" --format json -q --shard 2/3 -o "$d/part.json"
"$bin" sweep "$data/small.yaml" --format json -q >"$d/one.json"
ranks 2 "$data/small.yaml" --format json --resume "$d/part.json" >"$d/resumed.json" 2>"$d/err"
cmp "$d/one.json" "$d/resumed.json"
grep -q "16 of 24 points to search (24 in the sweep) on 2 ranks" "$d/err"
grep -q "16 / 16 points (rank 0: [0-9]*, 1: [0-9]*)" "$d/err"

# A mistake: every rank stops, exit 2, one message.
if ranks 4 "$d/none.yaml" >"$d/out" 2>"$d/err"; then exit 1; fi
[ "$(grep -c 'meshfit sweep: error: .*none.yaml' "$d/err")" -eq 1 ] || { cat "$d/err"; exit 1; }

# Midway: Ctrl-C (SIGINT to mpirun, which stops its ranks), or rank 1 killed. mpirun starts in the
# background with SIGINT's default action restored (a shell without job control starts background
# commands with SIGINT ignored), and the signal goes once rank 0 has reported a tenth of the points
# (waiting up to 600 s: the sanitizer build is slow).
midway() {  # midway int|kill: checks mpirun's exit code and the file rank 0 wrote
  err="$d/$1.err"
  # shellcheck disable=SC2086
  env --default-signal=INT "$mpirun" $opts -np 2 "$bin" sweep "$data/medium.yaml" --format json --threads 1 \
    -o "$d/mid.json" 2>"$err" &
  pid=$!
  i=0
  until grep -q " / 80 points" "$err" 2>/dev/null || [ $i -ge 6000 ]; do sleep 0.1; i=$((i + 1)); done
  if [ "$1" = int ]; then
    kill -INT $pid
  else
    killed=
    for stat in /proc/[0-9]*/stat; do  # mpirun's children (no procps in a bare Debian image)
      p=${stat#/proc/}
      p=${p%/stat}
      [ "$(cut -d' ' -f4 "$stat" 2>/dev/null)" = "$pid" ] || continue
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1; then
        kill -KILL "$p" && killed=$p
      fi
    done
    [ -n "$killed" ] || { echo "kill: no rank 1 among mpirun's children"; kill -KILL $pid; exit 1; }
  fi
  set +e
  wait $pid
  code=$?
  set -e
  [ "$code" -ne 0 ] || { echo "$1: mpirun exited 0"; cat "$err"; exit 1; }
  grep -q '"complete":false' "$d/mid.json" || { echo "$1: no complete:false"; cat "$err"; exit 1; }
  python3 -c 'import json, sys; n = len(json.load(open(sys.argv[1]))["points"]); assert 0 < n < 80, n' "$d/mid.json"
  rm -f "$d/mid.json"
}
midway int
midway kill
echo "sweep over ranks: ok"
