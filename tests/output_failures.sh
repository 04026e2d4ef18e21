#!/bin/sh
# Output that does not reach its reader is not a success (issue 18): stdout on a full device is
# exit 2 with the reason. $1: the meshfit binary.
set -u
bin=$1
err=$(mktemp)
"$bin" search --model llama-3.1-8b --device h100-80gb --devices 8 --seq 4096 --global-batch 8 >/dev/full 2>"$err"
code=$?
[ "$code" -eq 2 ] || { echo "search > /dev/full: exit $code, expected 2"; exit 1; }
grep -q "cannot write the output to stdout" "$err" || { echo "no reason given"; cat "$err"; exit 1; }
"$bin" models --format json >/dev/full 2>"$err"
[ $? -eq 2 ] || { echo "models > /dev/full: expected exit 2"; exit 1; }
rm -f "$err"
echo "ok"
