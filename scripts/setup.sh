#!/usr/bin/env bash
# Installs what meshfit needs on Debian 12 (as root, only the packages that are missing; one
# apt-get update first), then configures and builds into BUILD_DIR (default: build).
# MESHFIT_EXTRA_PACKAGES names more packages to install the same way (the test scripts' own).
# Extra arguments are passed to cmake's configure step, e.g. -DMESHFIT_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build pkg-config libtbb-dev libyaml-cpp-dev libboost-program-options-dev
          doctest-dev libbenchmark-dev librsvg2-bin libxml2-utils python3)
# What the test scripts add: Debian's Chromium and its ChromeDriver for the report's browser test,
# Open MPI for `mpirun meshfit sweep` (without it the build has sweep in one process, and its MPI
# test is left out).
read -r -a extra <<<"${MESHFIT_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  # apt's progress goes to stderr, so that stdout carries only what the caller runs after.
  $SUDO apt-get update >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}" >&2
fi

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build_dir" -j 2 >&2
