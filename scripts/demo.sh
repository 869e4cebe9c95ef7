#!/usr/bin/env bash
# The demo: install what is missing, build, and map the 10,000 Fashion-MNIST test images with
# PE, using posteriors of the paper's soft nearest-neighbor classifier (10 labelled images per class).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/orrery run configs/pe_fashion_mnist.json
echo "demo: the map is runs/pe-fashion-mnist/map.svg (report: runs/pe-fashion-mnist/report.json)"
