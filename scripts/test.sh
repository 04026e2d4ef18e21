#!/usr/bin/env bash
# README's test command: installs what is missing, builds (release, build/) and runs every test
# once, with warnings as errors. The same suite under AddressSanitizer + UndefinedBehaviorSanitizer is
# scripts/test-sanitizers.sh, which CI (.ci/run) runs after this one.
set -euo pipefail
cd "$(dirname "$0")/.."

MESHFIT_EXTRA_PACKAGES="chromium chromium-driver libopenmpi-dev openmpi-bin" BUILD_DIR=build scripts/setup.sh -DMESHFIT_WERROR=ON
ctest --test-dir build --output-on-failure -j 2
