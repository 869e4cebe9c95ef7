#!/usr/bin/env bash
# The interactive map of all 70,000 Fashion-MNIST images: an HSSNE run (t-SNE's tail, PCA to 50
# dimensions, perplexity 30, the defaults' approximate neighbors and interpolated repulsion) with
# output.html and the images' names, then a screenshot of its map.html in headless Chromium with one
# point hovered (docs/viewer-fashion-70k.png in the README). Prints the run's time and the page's
# size per point.
# Usage: bash bench/viewer_fashion_70k.sh [BUILD_DIR] [OUT_DIR] [THREADS] [SCREENSHOT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-runs/viewer_fashion_70k}
threads=${3:-2}
shot=${4:-$out/screenshot.png}
data=${ORRERY_DATA:-data/fashion70k}
bash scripts/fashion70k.sh "$data"
mkdir -p "$out"
config=$(mktemp --suffix=.json)
trap 'rm -f "$config"' EXIT
cat > "$config" <<EOF
{"method": "hssne",
 "input": {"vectors": "$data/images.npy", "labels": "$data/labels.txt", "names": "$data/names.txt",
           "pca": 50, "perplexity": 30,
           "class_names": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                           "Sneaker", "Bag", "Ankle boot"]},
 "params": {"dim": 2, "alpha": 1},
 "output": {"dir": "$out", "format": "npy", "html": true},
 "device": "cpu", "threads": $threads, "seed": 1}
EOF
start=$(date +%s.%N)
"$build/orrery" run "$config"
end=$(date +%s.%N)
size=$(stat -c %s "$out/map.html")
python3 -c "print(f'run {$end - $start:.1f} s; map.html {$size / 1e6:.1f} MB, {$size / 70000:.1f} bytes per point')"
chromium=$(command -v chromium || command -v chromium-browser)
# the point nearest the mean of the Trouser cluster, hovered for the picture
hover=$(/usr/bin/python3 - "$out/embedding.npy" "$data/labels.txt" <<'PY'
import sys
import numpy as np
y, l = np.load(sys.argv[1]), np.loadtxt(sys.argv[2], dtype=int)
c = y[l == 1].mean(0)
print(int(np.argmin(((y - c) ** 2).sum(1))))
PY
)
"$chromium" --headless --no-sandbox --disable-gpu --enable-unsafe-swiftshader --use-angle=swiftshader \
  --hide-scrollbars --window-size=1400,900 --virtual-time-budget=60000 --screenshot="$shot" \
  "file://$(realpath "$out/map.html")#hover=$hover" 2>/dev/null
echo "screenshot: $shot (point $hover hovered)"
