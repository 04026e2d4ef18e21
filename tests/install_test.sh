#!/bin/sh
# `cmake --install` into a temporary prefix: the binary runs from there, and the man page, the
# bash completion and the data files are where Debian's tools look for them.
set -eu
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/meshfit" --version >/dev/null
"$prefix/bin/meshfit" search --model llama-3.1-8b --device h100-80gb --devices 8 --seq 4k --global-batch 64 --top 1 -q >/dev/null
test -s "$prefix/share/man/man1/meshfit.1"
grep -q '^\.TH MESHFIT 1' "$prefix/share/man/man1/meshfit.1"
test -s "$prefix/share/bash-completion/completions/meshfit"
bash -n "$prefix/share/bash-completion/completions/meshfit"
test -d "$prefix/share/meshfit/models"
echo "installed: ok"
