#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
# (a full rebuild: about 20 minutes on a 2-core machine). Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."

MESHFIT_EXTRA_PACKAGES="chromium chromium-driver libopenmpi-dev openmpi-bin" BUILD_DIR=build-asan scripts/setup.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHFIT_SANITIZE=ON -DMESHFIT_BENCHMARKS=OFF -DMESHFIT_WERROR=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2
