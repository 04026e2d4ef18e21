#!/bin/sh
# Ctrl-C during a search (issues 5 and 18): SIGINT (or SIGTERM) stops it within a second, with what
# was found so far marked as interrupted in every output — the table, JSON, CSV, the --devices
# list — and exit code 130, also when nothing fits yet.
# $1: the meshfit binary, $2: tests/data. DeepSeek-V3 on 16,384 devices with one thread takes
# seconds, the model at the input bounds minutes (far longer under the sanitizers), so the signal
# lands mid-search.
set -u
bin=$1
data=$2
out=$(mktemp)
err=$(mktemp)
started() {
  "$bin" search "$@" >"$out" 2>"$err" &
  pid=$!
  sleep 0.5
}
finish() {  # waits for the stop: within 30 s (the sanitizer build), else a hang
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; echo "hang after the signal"; exit 1; fi
  wait "$pid"
  code=$?
}
expect() {  # expect CODE PATTERN WHAT
  [ "$code" -eq "$1" ] || { echo "$3: exit $code, expected $1"; cat "$out" "$err"; exit 1; }
  grep -q -- "$2" "$out" || { echo "$3: no '$2'"; cat "$out"; exit 1; }
}
ds="--model deepseek-v3 --device h100-80gb --devices 16384 --seq 4096 --global-batch 4096 --threads 1"
bounds="--model $data/bad-input/at-bounds-moe.json --device h100-80gb --seq 4096 --global-batch 4096"

svg=$(mktemp)
started $ds --plot "$svg"; kill -INT "$pid"; finish
expect 130 "INTERRUPTED" "table"
grep -q "INTERRUPTED" "$svg" || { echo "svg: not marked interrupted"; exit 1; }
rm -f "$svg"
grep -q "enumerated" "$out" || { echo "table: no counts after the interrupt"; exit 1; }
started $ds --format json; kill -INT "$pid"; finish
expect 130 '"interrupted":true' "json"
tail -c 2 "$out" | grep -q '}' || { echo "json: not a complete document"; exit 1; }
started $ds --format csv; kill -TERM "$pid"; finish
expect 130 "^# INTERRUPTED" "csv after SIGTERM"
# Nothing fits in the part searched: still 130, not 1 ("nothing fits").
started $bounds --devices 16384; kill -INT "$pid"; finish
expect 130 "INTERRUPTED" "nothing fits yet"
grep -q "interrupted" "$err" || { echo "nothing fits yet: stderr does not say interrupted"; exit 1; }
# A device-count list cut short says so and is not a complete answer (it exited 0).
started $bounds --devices 8..16384 --threads 1; kill -INT "$pid"; finish
expect 130 "INTERRUPTED: [0-9]* of 12 device counts searched" "device list"
started $bounds --devices 8..16384 --format json --threads 1; kill -INT "$pid"; finish
expect 130 '"interrupted":true' "device list json"
# A second signal ends the process at once, with the same code.
started $bounds --devices 16384; kill -INT "$pid"; sleep 0.01; kill -INT "$pid" 2>/dev/null; finish
[ "$code" -eq 130 ] || { echo "second signal: exit $code, expected 130"; exit 1; }
rm -f "$out" "$err"
echo "ok"
