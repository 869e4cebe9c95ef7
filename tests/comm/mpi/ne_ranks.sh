#!/usr/bin/env bash
# HSSNE, NeRV and supervised NeRV over MPI equal the same method in one process, bit for bit:
# writes generated vectors (N points in three clusters, with their labels; awk's seeded generator,
# so no tools beyond the shell), runs `orrery run` in one process for each kind asked for, then
# under the launcher with each number of ranks given, and passes when every run's embedding.npy
# equals the one-process file byte for byte, and each run shows one progress stream and writes one
# report (rank 0's, naming every rank; hssne's with its rows).
# HSSNE kinds: exact (sparse P, all pairs, the fixed point), dense (dense P, the fixed point with
# restarts and damping), grid (sparse P, interpolated, gradient steps), tree (Barnes-Hut, gradient),
# hnsw (the approximate neighbour search, each rank querying its own points). Every rank searches
# its own points' neighbours (the exact search or HNSW's queries), so the lists are sharded too.
# NeRV kinds (conjugate gradient; each evaluation split over the ranks): nerv-exact (sparse P, all
# pairs, float), nerv-dense (dense P, double), nerv-cells (sparse P, the truncated pairs over the
# cell grid, 3-D), snerv (the learning metric from the labels, dense, then NeRV).
# With KIND "resume" (or "nerv-resume"): a grid hssne run (a nerv-cells run) stopped after iteration
# 25 (10) under the first NP of the list (ORRERY_STOP_AT_ITERATION: exit 130, a checkpoint, no
# map) and resumed under each NP given (`--resume`) ends with the one-process run's map, bit for bit.
# Usage: ne_ranks.sh ORRERY N "NP..." "KIND..." LAUNCHER NP_FLAG [LAUNCHER_FLAGS...]
set -uo pipefail
[ $# -ge 6 ] || { echo "usage: ne_ranks.sh ORRERY N \"NP...\" \"KIND...\" LAUNCHER NP_FLAG [FLAGS...]" >&2; exit 2; }
orrery=$1 n=$2 nps=$3 kinds=$4 launcher=$5 np_flag=$6
shift 6
flags=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/orrery-ne-ranks.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "ne_ranks: $*" >&2; exit 1; }

# Three Gaussian clusters in 5-D (Box-Muller from awk's seeded rand).
awk -v n="$n" 'BEGIN { srand(11); for (i = 0; i < n; i++) { c = i % 3; line = "";
  for (j = 0; j < 5; j++) { u = rand(); v = rand(); g = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * v);
    line = line (j ? "," : "") sprintf("%.17g", g + (j == c ? 6 : 0)) } print line; print c >"y.csv" } }' >x.csv
perplexity=$(awk -v n="$n" 'BEGIN { p = (n - 1) / 3; print (p < 10 ? p : 10) }')
params() {
  case $1 in
    exact) echo '"affinities": "sparse"}, "params": {"repulsion": "exact", "max_iter": 60, "exaggeration_iter": 20' ;;
    dense) echo '"affinities": "dense"}, "params": {"max_iter": 60, "exaggeration_iter": 20, "init": "pca"' ;;
    grid) echo '"affinities": "sparse"}, "params": {"repulsion": "interpolated", "optimizer": "gradient", "max_iter": 60, "exaggeration_iter": 20' ;;
    hnsw) echo '"affinities": "sparse", "neighbors": "approximate"}, "params": {"repulsion": "exact", "max_iter": 40, "exaggeration_iter": 20' ;;
    tree) echo '"affinities": "sparse"}, "params": {"repulsion": "tree", "optimizer": "gradient", "max_iter": 60, "exaggeration_iter": 20, "dim": 3' ;;
    nerv-exact) echo '"affinities": "sparse"}, "params": {"pairs": "exact", "max_iter": 30' ;;
    nerv-dense) echo '"affinities": "dense"}, "params": {"precision": "double", "max_iter": 30' ;;
    nerv-cells) echo '"affinities": "sparse"}, "params": {"pairs": "approximate", "max_iter": 30, "dim": 3' ;;
    snerv) echo '"labels": "y.csv", "affinities": "dense", "metric": {"pieces": 3, "folds": 2}}, "params": {"max_iter": 30' ;;
    *) fail "unknown kind $1" ;;
  esac
}
method() {  # the method a kind runs
  case $1 in
    nerv-*) echo nerv ;;
    snerv) echo snerv ;;
    *) echo hssne ;;
  esac
}
config() {  # config KIND DIR
  printf '{"method": "%s", "input": {"vectors": "x.csv", "perplexity": %s, %s},
  "output": {"dir": "%s", "format": "npy", "svg": false}, "device": "cpu", "threads": 1, "seed": 3}\n' \
    "$(method "$1")" "$perplexity" "$(params "$1")" "$2" >"$2.json"
}
launch() { "$launcher" "$np_flag" "$1" "${flags[@]}" "$orrery" "${@:2}"; }
seconds() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f s", e - s }'; }

if [ "$kinds" = resume ] || [ "$kinds" = nerv-resume ]; then
  kind=grid stop=25
  [ "$kinds" = nerv-resume ] && kind=nerv-cells stop=10
  config "$kind" one
  "$orrery" run one.json 2>one.log || { cat one.log; fail "resume: the one-process run failed"; }
  first=${nps%% *}
  for np in $nps; do
    config "$kind" "r$np"
    ORRERY_STOP_AT_ITERATION=$stop launch "$first" run "r$np.json" >"r$np.stop.log" 2>&1
    rc=$?
    [ "$rc" -eq 130 ] || { cat "r$np.stop.log"; fail "resume: the stopped run under $first ranks exited $rc, expected 130"; }
    [ -f "r$np/checkpoint.orrery" ] && [ ! -e "r$np/embedding.npy" ] || fail "resume: the stopped run left $(ls "r$np")"
    launch "$np" run "r$np.json" --resume 2>"r$np.log" || { cat "r$np.log"; fail "resume under $np ranks failed"; }
    cmp -s one/embedding.npy "r$np/embedding.npy" || fail "resume: stopped under $first ranks, resumed under $np: the map differs"
    [ ! -e "r$np/checkpoint.orrery" ] || fail "resume under $np ranks left the checkpoint behind"
    echo "ne_ranks: $kind, N = $n, stopped after iteration $stop under $first ranks, resumed under $np: the one-process map"
  done
  exit 0
fi
for kind in $kinds; do
  config "$kind" "$kind-one"
  start=$(date +%s.%N)
  "$orrery" run "$kind-one.json" 2>"$kind-one.log" || { cat "$kind-one.log"; fail "$kind: the one-process run failed"; }
  echo "ne_ranks: $kind, N = $n, one process: $(seconds "$start")"
  m=$(method "$kind")
  for np in $nps; do
    run="$kind-np$np"
    config "$kind" "$run"
    start=$(date +%s.%N)
    launch "$np" run "$run.json" 2>"$run.log" || { cat "$run.log"; fail "$kind: mpirun -np $np failed"; }
    took=$(seconds "$start")
    cmp -s "$kind-one/embedding.npy" "$run/embedding.npy" || fail "$kind, $np ranks: embedding.npy differs from the one-process run"
    [ "$(grep -c "^\[$m\] iter     0 " "$run.log")" -eq 1 ] || { cat "$run.log"; fail "$kind, $np ranks: not one progress stream"; }
    [ "$(grep -c "^\[$m\] wrote " "$run.log")" -eq 1 ] || { cat "$run.log"; fail "$kind, $np ranks: not one writer"; }
    grep -Eq "\"ranks\": $np([,}]|\$)" "$run/report.json" || fail "$kind, $np ranks: the report does not record $np ranks"
    rows=$(tr -d ' \n' <"$run/report.json" | grep -o '"rows":\[[0-9,]*\]')
    [ -n "$rows" ] || [ "$m" != hssne ] || fail "$kind, $np ranks: the report lists no rows per rank"
    echo "ne_ranks: $kind, N = $n, $np ranks ($rows): identical embedding.npy, one report ($took)"
  done
done
