#!/bin/sh
# Ctrl-C during a search (issue 5): SIGINT stops it cleanly, within seconds, with what was found so
# far marked as interrupted — in the table and as "interrupted":true in JSON — and exit code 130.
# $1: the meshfit binary. A DeepSeek-V3 search on 16,384 devices with one thread takes seconds
# (far longer under the sanitizers), so the signal lands mid-search.
set -u
bin=$1
out=$(mktemp)
search() {
  "$bin" search --model deepseek-v3 --device h100-80gb --devices 16384 --seq 4096 --global-batch 4096 \
    --threads 1 "$@" >"$out" 2>/dev/null &
  pid=$!
  sleep 0.5
  kill -INT "$pid"
  # A clean stop is prompt: give it 30 s, then call it a hang.
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; echo "hang after SIGINT"; exit 1; fi
  wait "$pid"
  code=$?
}
search
[ "$code" -eq 130 ] || { echo "table: exit $code, expected 130"; exit 1; }
grep -q "INTERRUPTED" "$out" || { echo "table: no INTERRUPTED mark"; cat "$out"; exit 1; }
grep -q "enumerated" "$out" || { echo "table: no counts after the interrupt"; exit 1; }
search --format json
[ "$code" -eq 130 ] || { echo "json: exit $code, expected 130"; exit 1; }
grep -q '"interrupted":true' "$out" || { echo "json: not marked interrupted"; cat "$out"; exit 1; }
tail -c 2 "$out" | grep -q '}' || { echo "json: not a complete document"; exit 1; }
rm -f "$out"
echo "ok"
