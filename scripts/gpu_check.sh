#!/usr/bin/env bash
# GPU check of a built orrery: does this machine's GPU (card, driver, build) run orrery correctly,
# and how fast? Runs from a build folder that holds only test_cuda, orrery and orrery_bench (no ctest
# files, no CMake cache, no Python), so a tree built elsewhere and copied to a GPU machine works too.
#
#   bash scripts/gpu_check.sh [--budget SECONDS] [--out DIR] BUILD_DIR
#
# Steps, in order of value, each time-boxed against one budget (--budget or BUDGET, default 480 s;
# a step cut by its time box fails; one that would start with under 10 s left fails too, but a bench
# is then skipped), each with its own log in the output folder (--out or OUT, default a new
# temporary folder):
#   device          nvidia-smi, `orrery info` and compute-sanitizer's version
#   suite <family>  test_cuda one test family per process (a sticky CUDA fault stays in its family),
#                   guard bytes around every device buffer (ORRERY_GUARD_BUFFERS=1) and a
#                   synchronisation after every launch (ORRERY_SYNC_KERNELS=1)
#   check <config>  `orrery check --device cuda:0 --iterations 3` on a small config of every family,
#                   data written here by awk
#   memcheck, racecheck, synccheck
#                   compute-sanitizer on small cases, guard bytes off (they live inside the
#                   allocation, so memcheck would not see a short overflow into them)
#   bench <name>    orrery_bench, one argument list per line of GPU_BENCH (default below)
# A summary table comes last (step, status, seconds, log); the exit status is 1 when a step failed.
# Without a usable CUDA device it says so in one line and exits 0 (CI runs it that way).
#
# Environment: GPU_SUITE_SKIP (test families left out, blank-separated; default ParityCasesOnTheCpu,
# the registry run on the CPU twice: minutes of one CPU thread that ctest runs on every machine),
# GPU_BENCH (bench argument lists, one per line; empty: no benches), GPU_MEMCHECK_FILTER
# and GPU_RACE_FILTER (gtest filters for the sanitizers), ORRERY_FASHION_DIR (Fashion-MNIST, for the
# image benches), GPU_CHECK_DEVICE (the device `orrery check` tests, default cuda:0), and the test
# hook GPU_CHECK_FORCE=1, which runs every step even without a GPU (a dry run: the GPU steps then
# fail or skip).
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
budget=${BUDGET:-480}
out=${OUT:-}
build=
while [ $# -gt 0 ]; do
  case $1 in
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu_check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$build" ] || { echo "gpu_check: one BUILD_DIR expected, found a second: '$1'" >&2; exit 2; }
       build=$1; shift ;;
  esac
done
[ -n "$build" ] || { echo "gpu_check: missing BUILD_DIR (see --help)" >&2; exit 2; }
[ -d "$build" ] || { echo "gpu_check: BUILD_DIR '$build' is not a folder" >&2; exit 2; }
case $budget in '' | *[!0-9]*) echo "gpu_check: --budget expects whole seconds, found '$budget'" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
cli=$build/orrery
tests=$build/test_cuda
bench=$build/orrery_bench

# --- Is there a GPU? nvidia-smi must list one and orrery (this build, this driver) must see it.
reason=
if ! command -v nvidia-smi > /dev/null 2>&1; then
  reason="nvidia-smi is not on PATH"
elif ! nvidia-smi -L 2> /dev/null | grep '^GPU [0-9]' > /dev/null; then
  reason="nvidia-smi lists no device"
elif [ -x "$cli" ] && ! "$cli" info 2> /dev/null | grep '^  cuda:[0-9]' > /dev/null; then
  reason="orrery info: $("$cli" info 2>&1 | grep -m1 '^cuda:' || echo 'no cuda line')"
fi
if [ -n "$reason" ] && [ "${GPU_CHECK_FORCE:-0}" != 1 ]; then
  echo "gpu_check: no usable CUDA device ($reason): nothing to check"
  exit 0
fi

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/orrery-gpu-check.XXXXXX")
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
cd "$root" || exit 2
end=$((SECONDS + budget))
export ORRERY_CLI=$cli ORRERY_SOURCE_DIR=$root
PATH=$PATH:/usr/local/cuda/bin
[ -z "$reason" ] || echo "gpu_check: GPU_CHECK_FORCE=1: running every step although $reason"

# --- Steps: each runs under `timeout` (the smaller of its cap and the budget left, less 5 s for the
# summary), its output in its own log; results are kept for the summary.
names=() states=() times=() logs=()
record() { names+=("$1"); states+=("$2"); times+=("$3"); logs+=("$4"); }
# step NAME CAP LOG COMMAND...: pass (exit 0), FAIL (any other exit; "FAIL timeout" when the time box
# ended it). With under 10 s of budget left a bench is skipped (the list is cut by the budget, most
# telling first) and any other step fails ("FAIL no budget": the check is incomplete). A gtest run in
# which every test skipped is "skipped".
step() {
  local name=$1 cap=$2 log=$3 left rc t0
  shift 3
  left=$((end - SECONDS - 5))
  ((left < cap)) && cap=$left
  if ((cap < 10)); then
    echo "not run: under 10 s of the $budget s budget left" > "$log"
    if [[ $name == "bench "* ]]; then record "$name" skipped 0 "$log"; else record "$name" "FAIL no budget" 0 "$log"; fi
    return
  fi
  t0=$SECONDS
  timeout -k 10 "$cap" "$@" > "$log" 2>&1 < /dev/null
  rc=$?
  echo "== exit $rc after $((SECONDS - t0)) s (time box $cap s): $*" >> "$log"
  local state=pass
  if ((rc == 124 || rc == 137)); then
    state="FAIL timeout"
  elif ((rc != 0)); then
    state="FAIL rc=$rc"
  elif grep -q '^\[  PASSED  \] 0 tests' "$log" && grep -q '^\[  SKIPPED \] [1-9]' "$log"; then
    state=skipped
  fi
  record "$name" "$state" $((SECONDS - t0)) "$log"
}
skip() { echo "skipped: $2" > "$3"; record "$1" "skipped" 0 "$3"; }

# device: what the machine is (informative; fails only when orrery itself does not run). A script
# for bash -c, since timeout runs programs, not shell functions.
# shellcheck disable=SC2016  # expanded by that shell, from its arguments
device_info='nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$1" info; rc=$?
compute-sanitizer --version 2> /dev/null | tail -1
ldd "$1" "$2" "$3" 2> /dev/null | grep -i "not found"
exit $rc'
step device 30 "$out/device.log" bash -c "$device_info" device_info "$cli" "$tests" "$bench"

# --- The gpu suite, one family (the part of a test's name before '/' or '.') per process.
if [ -x "$tests" ]; then
  families=$("$tests" --gtest_list_tests 2> "$out/suite-list.log" |
    sed -nE 's#^([A-Za-z_][A-Za-z0-9_]*)[/.].*#\1#p' | sort -u)
  [ -n "$families" ] || record "suite (listing)" "FAIL no tests listed" 0 "$out/suite-list.log"
  for f in $families; do
    if [[ " ${GPU_SUITE_SKIP-ParityCasesOnTheCpu} " == *" $f "* ]]; then
      skip "suite $f" "in GPU_SUITE_SKIP (CPU only: ctest runs it on every machine)" "$out/suite-$f.log"
      continue
    fi
    step "suite $f" 120 "$out/suite-$f.log" env ORRERY_GUARD_BUFFERS=1 ORRERY_SYNC_KERNELS=1 \
      "$tests" --gtest_filter="$f.*:$f/*" --gtest_brief=1
  done
else
  record "suite" "FAIL missing" 0 "$tests"
fi

# --- orrery check on a small config of every family; the data is written here.
gen_check_data() {  # DIR: 240 points in three blobs (4-D), their labels, an 80 x 60 count corpus
  awk -v dir="$1" 'function gauss() { return sqrt(-2 * log(1 - rand())) * cos(6.283185307179586 * rand()) }
  BEGIN {
    srand(5)
    for (i = 0; i < 240; i++) {
      line = ""
      for (a = 0; a < 4; a++) line = line (a ? "," : "") sprintf("%.6f", gauss() + 5 * (a == i % 3))
      print line > (dir "/x.csv"); print i % 3 > (dir "/y.csv")
    }
    n_entries = 0
    for (n = 1; n <= 80; n++)
      for (w = 1; w <= 60; w++) {
        c = 0
        for (t = 0; t < 8; t++) c += rand() < ((w - 1) % 4 == (n - 1) % 4 ? 0.375 : 0.025)
        if (c) entry[++n_entries] = n " " w " " c
      }
    print "%%MatrixMarket matrix coordinate integer general" > (dir "/c.mtx")
    print "80 60 " n_entries > (dir "/c.mtx")
    for (e = 1; e <= n_entries; e++) print entry[e] > (dir "/c.mtx")
  }'
}
write_config() {  # NAME METHOD INPUT_JSON [PARAMS_JSON]
  local params=${4:-}
  printf '{"method": "%s", "input": %s, "params": %s, "output": {"dir": "%s"}}\n' \
    "$2" "$3" "${params:-"{}"}" "$chk/out-$1" > "$chk/$1.json"
}
chk=$out/check
mkdir -p "$chk"
if [ ! -x "$cli" ]; then
  record "check" "FAIL missing" 0 "$cli"
elif ! gen_check_data "$chk" > "$chk/generate.log" 2>&1; then
  record "check (data)" "FAIL awk" 0 "$chk/generate.log"
else
  v="\"vectors\": \"$chk/x.csv\", \"perplexity\": 10"
  write_config hssne hssne "{$v, \"affinities\": \"sparse\"}"
  write_config hssne_dense hssne "{$v, \"affinities\": \"dense\"}"
  write_config hssne_grid hssne "{$v, \"affinities\": \"sparse\"}" '{"repulsion": "interpolated"}'
  write_config hssne_start hssne "{$v, \"affinities\": \"sparse\", \"metric\": \"cosine\"}" '{"init": "pca"}'
  write_config hssne_spectral hssne "{$v, \"affinities\": \"dense\"}" '{"init": "spectral"}'
  write_config nerv nerv "{$v, \"affinities\": \"sparse\"}"
  write_config nerv_cells nerv "{$v, \"affinities\": \"sparse\"}" '{"pairs": "approximate"}'
  write_config snerv snerv "{\"vectors\": \"$chk/x.csv\", \"labels\": \"$chk/y.csv\", \"metric\": {\"components\": 6, \"width\": 2.0}}"
  write_config plsv plsv "{\"corpus\": \"$chk/c.mtx\"}" '{"topics": 4}'
  for c in "$root/configs/pe_planted_csv.json" "$chk"/hssne.json "$chk"/hssne_dense.json "$chk"/hssne_grid.json \
    "$chk"/hssne_start.json "$chk"/hssne_spectral.json "$chk"/nerv.json "$chk"/nerv_cells.json "$chk"/snerv.json "$chk"/plsv.json; do
    n=$(basename "$c" .json)
    step "check $n" 60 "$out/check-$n.log" "$cli" check "$c" --device "${GPU_CHECK_DEVICE:-cuda:0}" --iterations 3 \
      --out "$chk/$n.check.json"
  done
fi

# --- compute-sanitizer on small cases, guard bytes off. Each filter keeps the patterns that match a
# test of this build (the parity registry's names change); none matching means the whole suite,
# which the time box then cuts.
sanitizer=$(command -v compute-sanitizer 2> /dev/null)
prune_filter() {  # FILTER -> the ':'-separated patterns of it that match a test, or '*'
  local kept='' p patterns
  IFS=: read -ra patterns <<< "$1"
  for p in "${patterns[@]}"; do
    "$tests" --gtest_list_tests --gtest_filter="$p" 2> /dev/null | grep '^ ' > /dev/null && kept=${kept:+$kept:}$p
  done
  echo "${kept:-*}"
}
if [ -z "$sanitizer" ]; then
  for t in memcheck racecheck synccheck; do skip "$t" "compute-sanitizer not found" "$out/$t.log"; done
elif [ ! -x "$tests" ]; then
  for t in memcheck racecheck synccheck; do record "$t" "FAIL missing" 0 "$tests"; done
else
  # Small cases of every family (no N >= 2^17 case: memcheck runs them 10-50x slower), the edges
  # (one object, k = N - 1, tiles of one row, points off the grid) and the device state of a resume.
  mem_filter=$(prune_filter "${GPU_MEMCHECK_FILTER:-Pe/*N1_K10_D2:Pe/*N37_K300_D3:Pe/*N300_K10000_D2:Hssne/*sparse_N500*:Hssne/*dense_N611_D3_alpha10:Hssne/*grid_N3001_D3_alpha10*:Hssne/*grid_auto_N700*:Hssne/*state_from_the_cpu_N1337_D2*:Knn/*affinities_from_the_graph_N800:KnnGemm/*integer_N1031*:KnnGemm/*k299:KnnGemm/*tiles_of_one:Nerv/*truncated_N1500_D3_lambda3:Nerv/*dense_N700_D2_lambda3:Nerv/*sparse_N600*:Place/*grid_leaves*:Place/*exact_N1501_M301_D3*:Plsv/*engine_N257*:Plsv/*em_N300*:Quality/*query_subsample_N2000:Quality/*distance_matrix*:Snerv/*pairs_N413_d12_K40*:Snerv/*distances_N413_d12_K8:NervPlaceParity.*:HssneResume.ResumedOnTheDevice*:NervResume.ResumedOnTheDevice*}")
  # The kernels that share memory within a block: reductions, kNN tiles, the grid's scatter, ranks.
  race_filter=$(prune_filter "${GPU_RACE_FILTER:-Hssne/*sparse_N500*:Hssne/*grid_auto*:Hssne/*grid_N3001_D2_alpha10*:Nerv/*sparse_N600*:Nerv/*truncated_N1500_D2_lambda3:Pe/*N37_K300_D2:Plsv/*engine_N300*:KnnGemm/*N90_*:KnnGemm/*k299:Place/*grid_leaves*:Quality/*rank_rows_N50_*:Snerv/*distances_N413_d12_K8}")
  echo "memcheck filter: $mem_filter" > "$out/sanitizer-filters.log"
  echo "racecheck/synccheck filter: $race_filter" >> "$out/sanitizer-filters.log"
  step memcheck 150 "$out/memcheck.log" env -u ORRERY_GUARD_BUFFERS "$sanitizer" --tool memcheck --leak-check full \
    --print-limit 30 --error-exitcode 99 "$tests" --gtest_filter="$mem_filter" --gtest_brief=1
  for t in racecheck synccheck; do
    step "$t" 75 "$out/$t.log" env -u ORRERY_GUARD_BUFFERS "$sanitizer" --tool "$t" --print-limit 30 \
      --error-exitcode 99 "$tests" --gtest_filter="$race_filter" --gtest_brief=1
  done
fi

# --- Benchmarks: the issue's GPU targets that fit the rest of an ~8-minute check, most telling first
# (bench/README.md, "GPU targets", has every target's command). Fashion-MNIST where the machine has
# it, else the seeded 50-D mixture at the same sizes. 3-D at 10^5 points: a GPU has no Barnes-Hut tree,
# so a wide 3-D map sums all pairs there, and 10^6 points in 3-D did not finish in 5 minutes on an H200.
fashion=${ORRERY_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
if [ -f "$fashion/train-images-idx3-ubyte.gz" ] && [ -f "$fashion/t10k-images-idx3-ubyte.gz" ]; then
  images="--source fashion --data $fashion"
else
  images="--source mixture"
fi
default_bench="gpu-vs-cpu --device cpu,cuda --n 70000 $images
hssne-scale --device cuda --n 70000 --alpha 1,0.5,2 --steps 5 $images
pe --device cuda --n 1e6 --k 100 --dim 2
knn --device cuda --source mixture --n 1000000 --k 90 --settings none
quality --scale --device cuda --n 70000 --ks 10 --queries none $images
hssne-scale --device cuda --source mixture --n 1000000 --steps 3
nerv-fit --device cuda --n 70000 --lambda 0.3 --exact 0 --cutoff 12 --init pca $images
hssne-scale --device cuda --source mixture --n 100000 --dim 3 --steps 3"
i=0
while IFS= read -r args; do
  [ -n "$args" ] || continue
  i=$((i + 1))
  n=$(printf '%02d-%s' "$i" "${args%% *}")
  if [ ! -x "$bench" ]; then
    skip "bench $n" "no orrery_bench in $build" "$out/bench-$n.log"
    continue
  fi
  # shellcheck disable=SC2086  # one argument list per line, split on blanks as the kit does
  step "bench $n" 150 "$out/bench-$n.log" "$bench" $args
done <<< "${GPU_BENCH-$default_bench}"

# --- Summary: one row per step, the suite's passing families folded into one row (the kit shows the
# last 40 lines); then the totals. The exit status says whether anything failed.
failed=0 skipped=0 suite_pass=0 suite_seconds=0
for ((k = 0; k < ${#names[@]}; ++k)); do
  case ${states[k]} in FAIL*) failed=$((failed + 1)) ;; skipped) skipped=$((skipped + 1)) ;; esac
  if [[ ${names[k]} == "suite "* && ${states[k]} == pass ]]; then
    suite_pass=$((suite_pass + 1)) suite_seconds=$((suite_seconds + times[k]))
  fi
done
{
  card=$(grep -m1 '^  cuda:0' "$out/device.log" 2> /dev/null | sed 's/^ *//')
  echo "--- gpu_check summary: ${card:-no cuda:0 in orrery info}"
  printf '%-30s %-14s %6s  %s\n' step status seconds "log (in $out)"
  folded=0
  for ((k = 0; k < ${#names[@]}; ++k)); do
    if [[ ${names[k]} == "suite "* && ${states[k]} == pass ]]; then
      ((folded)) || printf '%-30s %-14s %6s  %s\n' "suite ($suite_pass families)" pass "$suite_seconds" "suite-*.log"
      folded=1
      continue
    fi
    printf '%-30s %-14s %6s  %s\n' "${names[k]}" "${states[k]}" "${times[k]}" "${logs[k]#"$out"/}"
  done
  echo "gpu_check: ${#names[@]} steps, $failed failed, $skipped skipped, $SECONDS s of a $budget s budget"
} > "$out/summary.log"
cat "$out/summary.log"
((failed == 0))
