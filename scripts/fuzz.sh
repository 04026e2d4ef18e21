#!/usr/bin/env bash
# Builds the input loaders' libFuzzer targets with clang (build-fuzz/) and runs each for SECONDS
# (default 30), seeded from tests/data and the bundled presets. Skipped, with a note, when clang is
# not installed; with --install (as CI runs it) clang and its runtime are installed first.
# A crash stops the script with the reproducer's path (build-fuzz/crash-*).
set -euo pipefail
cd "$(dirname "$0")/.."

install=0
seconds=30
for a in "$@"; do
  case "$a" in
    --install) install=1 ;;
    *) seconds=$a ;;
  esac
done

if ! command -v clang++ >/dev/null 2>&1 || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  if [ "$install" -eq 0 ]; then
    echo "fuzz: skipped: clang with libFuzzer (Debian: clang, libclang-rt-14-dev) is not installed" >&2
    exit 0
  fi
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y clang libclang-rt-14-dev
fi
# Without MPI: no fuzz target reaches it (sweep's ranks only run under mpirun).
BUILD_DIR=build-fuzz scripts/setup.sh -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMESHFIT_FUZZ=ON -DMESHFIT_TESTS=OFF -DMESHFIT_BENCHMARKS=OFF -DMESHFIT_MPI=OFF

# Seeds: the inputs each loader reads in the tests (valid and bad ones).
seeds() {
  case "$1" in
    fuzz_config_json) echo data/models tests/data/models tests/data/bad tests/data/hf-dir tests/data/bad-input ;;
    fuzz_device_yaml) echo data/devices tests/data/devices ;;
    fuzz_manifest) echo examples/ci tests/data/bad-input ;;
    fuzz_search_file) echo tests/data/search tests/data/run-options ;;
    fuzz_strategy_string) echo tests/fuzz/corpus/strategy ;;
    fuzz_train_yaml) echo tests/data/export tests/data/bad-input ;;
    fuzz_sapp_nd_config) echo tests/data/sapp-nd ;;
    fuzz_sweep_file) echo tests/data/sweep ;;
  esac
}
for t in fuzz_config_json fuzz_device_yaml fuzz_manifest fuzz_search_file fuzz_strategy_string fuzz_train_yaml fuzz_sweep_file fuzz_sapp_nd_config; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  echo "fuzz: $t for ${seconds}s" >&2
  log=build-fuzz/$t.log
  # shellcheck disable=SC2046
  if ! (cd build-fuzz && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
          "corpus/$t" $(for d in $(seeds $t); do echo "../$d"; done)) >"$log" 2>&1; then
    cat "$log"
    echo "fuzz: $t failed; the input that did it is build-fuzz/crash-* (or leak-*, timeout-*)" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^Done" "$log" >&2 || true
done
