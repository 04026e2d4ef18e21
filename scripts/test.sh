#!/usr/bin/env bash
# README's test command: installs what is missing, builds (release, build/) and runs every test
# once. The same suite under AddressSanitizer + UndefinedBehaviorSanitizer is
# scripts/test-sanitizers.sh, which CI (.ci/run) runs after this one.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build scripts/setup.sh
ctest --test-dir build --output-on-failure -j 2
