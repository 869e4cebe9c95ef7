#!/usr/bin/env bash
# NeRV (lambda 0.3) on all 70,000 Fashion-MNIST images, end to end through the CLI: the images
# (training set, then test set) gathered once into one .npy, then `orrery run` with PCA to 50
# dimensions, perplexity 30 and params.pairs auto (approximate at this size), timed from the
# process start to its exit. Prints the report's timings, the path taken, the truncation check and
# the quality measures; the run directory keeps the map (embedding.npy, map.svg) for
# scripts/nerv_figure.py.
# Usage: bash bench/nerv_fashion_70k.sh [BUILD_DIR] [OUT_DIR] [THREADS] [DEVICE: cpu | cuda | auto]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-runs/nerv_fashion_70k}
threads=${3:-2}
device=${4:-cpu}
data=${ORRERY_DATA:-data/fashion70k}
mkdir -p "$out"
bash scripts/fashion70k.sh "$data"
config=$(mktemp --suffix=.json)
trap 'rm -f "$config"' EXIT
cat > "$config" <<EOF
{"method": "nerv",
 "input": {"vectors": "$data/images.npy", "labels": "$data/labels.txt", "pca": 50, "perplexity": 30,
           "class_names": ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                           "Sneaker", "Bag", "Ankle boot"]},
 "params": {"dim": 2, "lambda": 0.3, "max_iter": 500},
 "output": {"dir": "$out", "format": "npy"},
 "device": "$device", "threads": $threads, "seed": 1}
EOF
start=$(date +%s.%N)
"$build/orrery" run "$config"
end=$(date +%s.%N)
/usr/bin/python3 - "$out/report.json" "$start" "$end" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
res, t, q = r["result"], r["timings"], r.get("quality", {})
print(f"end to end: {float(sys.argv[3]) - float(sys.argv[2]):.1f} s (process start to exit)")
print("timings:", {k: round(v, 1) for k, v in t.items() if isinstance(v, (int, float))})
print(f"pairs {res['pairs']}, {res['iterations']} iterations, {res['evaluations']} evaluations, "
      f"stop: {res['stop_reason']}, cost {res['objective']:.6g}")
if res["pairs"] == "approximate":
    tr = res["truncation"]
    print(f"pairs per row {res['pairs_per_row']:.0f}, estimated relative error of the cost "
          f"{tr['estimated_relative_error']:.2e} ({tr['rows_checked']} rows)")
for a in q.get("at_k", []):
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in a.items()
           if k in ("k", "trustworthiness", "continuity", "knn_accuracy", "lcmc")})
EOF
