#!/usr/bin/env bash
# Fails when a C++ source is not formatted as .clang-format says. Formatting differs between
# clang-format versions, so only version 14 (Debian 12's) is trusted; with another, or none, the
# check is skipped with a note, unless --install (as CI runs it) installs Debian's clang-format first.
# Format the tree with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1 || ! clang-format --version | grep -q "version 14\."; then
  if [ "${1:-}" != "--install" ]; then
    echo "check-format: skipped: clang-format 14 is not installed" >&2
    exit 0
  fi
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y clang-format
fi
git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run --Werror
echo "check-format: every C++ source formatted" >&2
