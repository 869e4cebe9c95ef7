#!/usr/bin/env bash
# PLSV on the Debian demo corpus (configs/plsv_debian.json: 1,000 package descriptions, Z = 50) to
# its tol stop, for several seeds and fit settings in one invocation: iterations, log posterior,
# the documents' 5-NN label accuracy in the map, fit and end-to-end seconds, peak RSS, and each
# setting's means. The settings: plain EM to tol 1e-6 (the former default), then SQUAREM at tol
# 1e-6, 3e-6 (the default) and 1e-5.
#
#   bash bench/plsv_debian_seeds.sh [BUILD_DIR] [SEEDS]     (defaults: build, "1 2 3 4 5")
set -euo pipefail
build=${1:-build}
seeds=${2:-1 2 3 4 5}
cli="$build/orrery"
[[ -x $cli ]] || { echo "no $cli: build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
settings=("none 1e-6" "squarem 1e-6" "squarem 3e-6" "squarem 1e-5")
printf '%-8s %-6s %5s %11s %16s %7s %7s %7s %8s\n' extrap tol seed iters log_posterior 5nn fit_s total_s rss_MiB
for setting in "${settings[@]}"; do
  read -r ex tol <<<"$setting"
  for seed in $seeds; do
    out="$work/$ex-$tol-$seed"
    python3 - "$ex" "$tol" "$seed" "$out" >"$out.json" <<'PY'
import json, sys
c = json.load(open("configs/plsv_debian.json"))
c["params"].update({"extrapolation": sys.argv[1], "tol": float(sys.argv[2])})
c["seed"] = int(sys.argv[3])
c["device"] = "cpu"
c["output"]["dir"] = sys.argv[4]
print(json.dumps(c))
PY
    /usr/bin/time -f '%M' -o "$out.rss" "$cli" run "$out.json" --quiet
    python3 - "$out/report.json" "$ex" "$tol" "$seed" "$(cat "$out.rss")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("%-8s %-6s %5s %11d %16.1f %7.4f %7.2f %7.2f %8.1f" % (
    sys.argv[2], sys.argv[3], sys.argv[4], r["result"]["iterations"], r["result"]["log_posterior"],
    r["quality"]["knn_accuracy_5"], r["timings"]["fit"], r["timings"]["total"], int(sys.argv[5]) / 1024))
PY
  done | tee "$work/$ex-$tol.rows"
  awk -v ex="$ex" -v tol="$tol" '{n++; it+=$4; lp+=$5; k+=$6; f+=$7; t+=$8}
    END {printf "%-8s %-6s %5s %11.1f %16.1f %7.4f %7.2f %7.2f   (mean)\n", ex, tol, "mean", it/n, lp/n, k/n, f/n, t/n}' \
    "$work/$ex-$tol.rows"
done
