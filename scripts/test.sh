#!/usr/bin/env bash
# The test command: install what is missing, build with warnings as errors, run every test.
# GPU tests (label gpu) skip with a reason when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ORRERY_CMAKE_ARGS="-DORRERY_WERROR=ON ${ORRERY_CMAKE_ARGS:-}" bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
