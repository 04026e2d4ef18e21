#!/usr/bin/env bash
# Builds and runs the whole test suite twice: a release build, then a build under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/). Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build scripts/setup.sh
ctest --test-dir build --output-on-failure -j 2

BUILD_DIR=build-asan scripts/setup.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHFIT_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2
