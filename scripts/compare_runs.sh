#!/usr/bin/env bash
# Do two builds of orrery give the same results? Runs every example config (scripts/run_configs.sh,
# short iteration caps) with each binary and compares what the runs wrote: every coordinate and
# array file (.npy, .csv) and text output byte for byte, and each report.json's "result" and
# "quality", "trace", "input" and "params" without their times (dates, times and the build's own
# fields differ by nature and are left out).
#
#   scripts/compare_runs.sh BEFORE_ORRERY AFTER_ORRERY
#
# Prints one line per file that differs and a summary; exits 0 when every file is the same, 1 when
# any differs or a run failed, 2 on bad usage.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/compare_runs.sh BEFORE_ORRERY AFTER_ORRERY" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in before after; do
  bin=$1; [ $side = after ] && bin=$2
  echo "== $side: $bin"
  ORRERY_CONFIG_KEEP="$tmp/$side" bash "$here/run_configs.sh" "$bin" || { echo "compare_runs.sh: a run failed ($side)" >&2; exit 1; }
done
/usr/bin/python3 - "$tmp/before" "$tmp/after" <<'PY'
import json, os, sys
a, b = sys.argv[1], sys.argv[2]
def files(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out
def untimed(v):
    # times (any key naming seconds) differ from run to run by nature
    if isinstance(v, dict):
        return {k: untimed(x) for k, x in v.items() if "seconds" not in k}
    if isinstance(v, list):
        return [untimed(x) for x in v]
    return v
fa, fb = files(a), files(b)
differ = sorted(fa ^ fb)
for f in differ:
    print(f"only in {'before' if f in fa else 'after'}: {f}")
same = 0
for f in sorted(fa & fb):
    pa, pb = os.path.join(a, f), os.path.join(b, f)
    if f.endswith("report.json"):
        ja, jb = untimed(json.load(open(pa))), untimed(json.load(open(pb)))
        keys = ("result", "quality", "trace", "input", "params")
        if any(ja.get(k) != jb.get(k) for k in keys):
            print(f"differs: {f} ({', '.join(k for k in keys if ja.get(k) != jb.get(k))})"); differ.append(f)
        else:
            same += 1
    elif f.endswith((".html", ".svg", "checkpoint.orrery")):
        continue  # pages and drawings carry the report's times
    elif open(pa, "rb").read() != open(pb, "rb").read():
        print(f"differs: {f}"); differ.append(f)
    else:
        same += 1
print(f"compare_runs.sh: {same} files the same, {len(differ)} differ")
sys.exit(1 if differ else 0)
PY
