#!/usr/bin/env bash
# Times `orrery run` as a user runs it, with the documented defaults: a config that gives only the
# vectors and the perplexity (method hssne, so t-SNE's tail, every other key at its default: the
# affinities, neighbor search, repulsion, optimizer, stopping rule, quality measures and SVG map that
# `auto` and the defaults choose), on X.npy. "seconds" is the wall time of the whole process; the map
# goes to OUT.npy and one JSON line to stdout, as the other peers of `orrery_bench hssne` do.
# The orrery binary is $ORRERY_CLI (default build/orrery). THREADS 0 leaves "threads" out (all cores).
#   orrery_defaults.sh X.npy labels.npy PERPLEXITY ITERS SEED THREADS OUT.npy   (ITERS is not used)
set -euo pipefail
x=$(realpath "$1") perplexity=$3 seed=$5 threads=$6 out=$7
cli=${ORRERY_CLI:-build/orrery}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
extra=
[ "$threads" = 0 ] || extra=", \"threads\": $threads"
cat > "$dir/run.json" <<JSON
{"method": "hssne", "input": {"vectors": "$x", "perplexity": $perplexity},
 "output": {"dir": "$dir/out"}, "seed": $seed$extra}
JSON
t0=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$dir/rss" "$cli" run "$dir/run.json" 2> "$dir/log" || { cat "$dir/log" >&2; exit 1; }
t1=$(date +%s.%N)
cp "$dir/out/embedding.npy" "$out"
/usr/bin/python3 - "$dir/out/report.json" "$t0" "$t1" "$(cat "$dir/rss")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
res = r.get("result", {})
print(json.dumps({"orrery": r.get("orrery", {}).get("version") if isinstance(r.get("orrery"), dict) else None,
                  "seconds": float(sys.argv[3]) - float(sys.argv[2]), "peak_rss_mib": int(sys.argv[4]) / 1024,
                  "iterations": res.get("iterations"), "repulsion": res.get("repulsion"),
                  "optimizer": res.get("optimizer"), "affinities": r.get("input", {}).get("affinities"),
                  "timings": r.get("timings")}))
PY
