#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*.cpp: every reader and the run-config parser) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/, then fuzzes each target in turn.
#
#   bash scripts/fuzz.sh                 20 s per target (what scripts/test.sh runs)
#   bash scripts/fuzz.sh 3600            a long run: an hour per target
#   bash scripts/fuzz.sh 60 fuzz_npy     one minute, one target
#
# Each target starts from its seed corpus (fuzz/corpus/TARGET, read only) plus what earlier runs
# found (build-fuzz/corpus/TARGET, kept between runs). A crash, a leak, undefined behaviour, an
# exception other than an input error, an allocation over 2 GB or an input taking over 10 s is a
# finding: the input is saved as fuzz/crashes/TARGET-<kind>-<hash> and the script exits 1 after the
# remaining targets have run. Reproduce one with `build-fuzz/TARGET FILE`; then make it a
# regression test under tests/ (asserting the clean input error) and fix the reader.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2; }

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DORRERY_CUDA=OFF -DORRERY_FUZZ=ON -DORRERY_BUILD_TESTS=OFF \
  -DORRERY_BUILD_BENCH=OFF -DORRERY_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}"

mkdir -p fuzz/crashes
root=$(pwd)
failed=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  echo "fuzz: $t for ${seconds} s" >&2
  # One process (-jobs would take every core); absolute paths, because a target may change its
  # working directory (fuzz_config works in a scratch directory of inputs).
  if ! "$root/build-fuzz/$t" "$root/build-fuzz/corpus/$t" "$root/fuzz/corpus/$t" -max_total_time="$seconds" \
       -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$root/fuzz/crashes/$t-" -print_final_stats=1 \
       >"build-fuzz/$t.log" 2>&1; then
    tail -n 40 "build-fuzz/$t.log" >&2
    failed+=("$t")
  else
    grep -E "^stat::number_of_executed_units|^Done" "build-fuzz/$t.log" | tr '\n' ' ' >&2
    echo >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}; inputs saved in fuzz/crashes/" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no findings" >&2
