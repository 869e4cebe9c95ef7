#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors, run every test (the
# GoogleTest suites and the Python package's pytest suite), every example config, and the pip
# install of the Python package; then the same suite again under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/, CUDA off, -O1), and a short fuzzing pass over every
# reader and the config parser (scripts/fuzz.sh, 20 s per target; ORRERY_FUZZ_SECONDS changes it,
# 0 skips it).
# GPU tests (label gpu) skip with a reason when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ORRERY_CMAKE_ARGS="-DORRERY_WERROR=ON ${ORRERY_CMAKE_ARGS:-}" bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
bash scripts/gpu_check.sh build   # the GPU suite, orrery check, sanitizers, benches; one line without a GPU
bash scripts/run_configs.sh build/orrery   # every example config, as a newcomer runs it (iterations capped)
bash scripts/test_pip.sh                    # the Python package as `pip install` gives it

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DORRERY_CUDA=OFF -DORRERY_SANITIZE=ON -DORRERY_BUILD_BENCH=OFF \
  -DORRERY_WERROR=ON >/dev/null
cmake --build build-asan -j "$(nproc)"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"

fuzz_seconds=${ORRERY_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" -gt 0 ]; then
  bash scripts/fuzz.sh "$fuzz_seconds"
fi
