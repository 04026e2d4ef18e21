#!/usr/bin/env bash
# Runs clang-tidy (the checks .clang-tidy names, every finding an error) over the project's sources,
# with the compile commands of BUILD_DIR (default build/, made by scripts/setup.sh or test.sh, which
# also generates the embedded presets the engine includes). Findings differ between clang-tidy
# versions, so only version 14 (Debian 12's) is trusted; with another, or none, the check is
# skipped with a note, unless --install (as CI runs it) installs Debian's clang-tidy first.
set -euo pipefail
cd "$(dirname "$0")/.."
install=0
[ "${1:-}" = "--install" ] && install=1
if ! command -v clang-tidy >/dev/null 2>&1 || ! clang-tidy --version | grep -q "version 14\."; then
  if [ "$install" -eq 0 ]; then
    echo "check-tidy: skipped: clang-tidy 14 is not installed" >&2
    exit 0
  fi
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y clang-tidy
fi
build="${BUILD_DIR:-build}"
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check-tidy: $build/compile_commands.json is missing: run scripts/setup.sh first" >&2
  exit 2
fi
# The fuzz targets are built by clang with their own flags (scripts/fuzz.sh): not in this build.
# clang-tidy counts the warnings it suppresses in system headers on stderr: those lines are dropped.
# The build's GCC-only flags (-Wno-restrict) are unknown to clang, an error under CI's -Werror: ignored.
set +e
git ls-files '*.cpp' | grep -v '^tests/fuzz/' |
  xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option 2>&1 |
  grep -Ev '^[0-9]+ warnings? generated\.$'
status=${PIPESTATUS[2]}
set -e
if [ "$status" -ne 0 ]; then
  echo "check-tidy: findings above (fix them, or say in .clang-tidy why a check is off)" >&2
  exit 1
fi
echo "check-tidy: no finding" >&2
