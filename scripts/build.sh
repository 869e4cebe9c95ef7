#!/usr/bin/env bash
# Configures and builds orrery in build/ (CUDA backend included when nvcc is found).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${ORRERY_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
