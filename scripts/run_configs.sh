#!/usr/bin/env bash
# Runs every example config in configs/ as a newcomer would after `bash scripts/setup.sh`: from the
# repository root (relative input paths as written), with `orrery run`, on the inputs as given; but
# short: each config is copied into a temporary directory with its iteration caps lowered and
# output.dir moved there, so the repository is left untouched.
#
#   scripts/run_configs.sh ORRERY_BINARY
#
# Lowered: params.max_iter (every method) to ORRERY_CONFIG_ITER (default 30), params.exaggeration_iter
# (hssne) to half of that, input.metric.model_max_iter (snerv) to ORRERY_CONFIG_ITER; a cap already
# lower is kept. A config that reads another config's output (configs/pe_planted_place.json reads
# runs/pe-planted/classes.csv, written by configs/pe_planted_csv.json) runs after it, reading the
# temporary copy. Prints one line per config with its time; exits 1 naming every config that failed
# (its output is shown), 2 on bad usage. ORRERY_CONFIG_KEEP=DIR keeps every run's output folder
# under DIR/NAME (scripts/compare_runs.sh compares two such sets).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: scripts/run_configs.sh ORRERY_BINARY" >&2; exit 2; }
if [ ! -f "$1" ] || [ ! -x "$1" ]; then echo "run_configs.sh: '$1' is not an executable file" >&2; exit 2; fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
iter=${ORRERY_CONFIG_ITER:-30}
case $iter in ''|*[!0-9]*|0|1) echo "run_configs.sh: ORRERY_CONFIG_ITER expects a whole number >= 2, found '$iter'" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Writes the short copies to $tmp/NAME.json and prints their names, a config after those whose
# output it reads.
/usr/bin/python3 - "$tmp" "$iter" configs/*.json >"$tmp/order" <<'EOF'
import json, os, sys

tmp, cap, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def strip_comments(text):
    # orrery reads configs with // and /* */ comments; json does not.
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1]); i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True; out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n": i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)

def lower(d, key, value):
    if isinstance(d, dict) and not (isinstance(d.get(key), int) and d[key] <= value):
        d[key] = value

configs = {}
for p in paths:
    name = os.path.basename(p)[:-len(".json")]
    with open(p) as f:
        try:
            cfg = json.loads(strip_comments(f.read()))
        except ValueError as e:
            sys.exit(f"run_configs.sh: {p}: {e}")
    out = cfg.get("output", {}).get("dir")
    if not isinstance(out, str):
        sys.exit(f"run_configs.sh: {p}: no output.dir")
    configs[name] = {"cfg": cfg, "out": os.path.normpath(out), "new": os.path.join(tmp, "out", name)}

def redirect(v, deps):
    # An input path inside another config's output.dir reads the short run's output instead.
    if isinstance(v, dict):
        return {k: redirect(x, deps) for k, x in v.items()}
    if isinstance(v, list):
        return [redirect(x, deps) for x in v]
    if isinstance(v, str):
        p = os.path.normpath(v)
        for other, c in configs.items():
            if p == c["out"] or p.startswith(c["out"] + os.sep):
                deps.add(other)
                return c["new"] + p[len(c["out"]):]
    return v

for name, c in configs.items():
    cfg, deps = c["cfg"], set()
    cfg["input"] = redirect(cfg.get("input", {}), deps)
    deps.discard(name)
    c["deps"] = deps
    cfg["output"]["dir"] = c["new"]
    params = cfg.setdefault("params", {})
    lower(params, "max_iter", cap)
    if cfg.get("method") == "hssne":
        lower(params, "exaggeration_iter", cap // 2)
    if cfg.get("method") == "snerv":
        lower(cfg["input"].setdefault("metric", {}), "model_max_iter", cap)
    with open(os.path.join(tmp, name + ".json"), "w") as f:
        json.dump(cfg, f, indent=2)

done, order = set(), []
def visit(name, path):
    if name in done: return
    if name in path: sys.exit("run_configs.sh: configs read each other's output: " + " -> ".join(path + [name]))
    for d in sorted(configs[name]["deps"]): visit(d, path + [name])
    done.add(name); order.append(name)
for name in sorted(configs): visit(name, [])
print("\n".join(order))
EOF

failed=()
start=$SECONDS
while IFS= read -r name; do
  t0=$(date +%s.%N)
  if "$bin" run "$tmp/$name.json" >"$tmp/$name.log" 2>&1; then status=ok; else status="FAILED (exit $?)"; fi
  t1=$(date +%s.%N)
  printf '%-44s %6.1f s  %s\n' "configs/$name.json" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" "$status"
  if [ "$status" != ok ]; then
    failed+=("configs/$name.json")
    tail -n 30 "$tmp/$name.log" | sed 's/^/    /'
  fi
done <"$tmp/order"

echo "run_configs.sh: $(wc -l <"$tmp/order" | tr -d ' ') configs in $((SECONDS - start)) s (iteration caps $iter)"
if [ -n "${ORRERY_CONFIG_KEEP:-}" ]; then
  mkdir -p "$ORRERY_CONFIG_KEEP" && cp -r "$tmp/out/." "$ORRERY_CONFIG_KEEP/"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_configs.sh: failed: ${failed[*]}" >&2
  exit 1
fi
