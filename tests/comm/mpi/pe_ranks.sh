#!/usr/bin/env bash
# PE over MPI equals PE in one process, bit for bit: writes generated posteriors (N objects, K
# classes; awk's seeded generator, so no tools beyond the shell), runs `orrery run` in one process,
# then under the launcher with each number of ranks given, and passes when every run's objects.npy
# and classes.npy equal the one-process files byte for byte and when each run shows one progress
# stream and writes one report (rank 0's, naming every rank). With N = "refuse": passes when a NeRV
# run on a GPU (whose engines' sharding needs NCCL, not built yet) under 2 ranks is refused with exit
# status 2 naming `comm`, writing nothing.
# With RESUME_AFTER=I in the environment, each run under NP ranks is first stopped after L-BFGS
# iteration I under the first NP of the list (ORRERY_STOP_AT_ITERATION: exit 130, a checkpoint and
# nothing else) and then resumed under NP (`--resume`): its files must equal the one-process run's
# all the same, and the checkpoint must be gone.
# PE_RANKS_DEVICE (default cpu) is every run's device: "cuda:0" on a GPU machine checks ranks that
# share one GPU (their sums leave it by chunk and meet over MPI) against one process on it.
# Usage: pe_ranks.sh ORRERY N K "NP..." LAUNCHER NP_FLAG [LAUNCHER_FLAGS...]
#        pe_ranks.sh ORRERY refuse - - LAUNCHER NP_FLAG [LAUNCHER_FLAGS...]
set -uo pipefail
[ $# -ge 6 ] || { echo "usage: pe_ranks.sh ORRERY N K \"NP...\" LAUNCHER NP_FLAG [FLAGS...]" >&2; exit 2; }
orrery=$1 n=$2 k=$3 nps=$4 launcher=$5 np_flag=$6
shift 6
flags=("$@")
[ "$n" = refuse ] && n=100 k=3 nps="" refuse=1 || refuse=0
work=$(mktemp -d "${TMPDIR:-/tmp}/orrery-pe-ranks.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "pe_ranks: $*" >&2; exit 1; }

# Rows of softmax(3 u + 2.5 [j = c]) with u uniform and c a random class: confident and confused objects.
awk -v n="$n" -v k="$k" 'BEGIN { srand(7); for (i = 0; i < n; i++) { s = 0; c = int(rand() * k);
  for (j = 0; j < k; j++) { v[j] = exp(3 * rand() + (j == c ? 2.5 : 0)); s += v[j] }
  line = ""; for (j = 0; j < k; j++) line = line (j ? "," : "") sprintf("%.17g", v[j] / s); print line } }' >post.csv
config() {  # config DIR: a PE run of a few tens of L-BFGS iterations writing into DIR
  printf '{"method": "pe", "input": {"posteriors": "post.csv", "normalize_rows": true},
  "params": {"max_iter": 40, "ftol": 0}, "output": {"dir": "%s", "format": "npy", "svg": false},
  "device": "%s", "threads": 1, "seed": 5}\n' "$1" "${PE_RANKS_DEVICE:-cpu}" >"$1.json"
}
launch() { "$launcher" "$np_flag" "$1" "${flags[@]}" "$orrery" "${@:2}"; }

config one
start=$(date +%s.%N)
[ "$refuse" -eq 1 ] || "$orrery" run one.json 2>one.log || { cat one.log; fail "the one-process run failed"; }
[ "$refuse" -eq 1 ] || echo "pe_ranks: N = $n, one process: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f s\n", e - s }')"
resume=${RESUME_AFTER:-} first=${nps%% *} started='^\[pe\] iter    0 '
[ -z "$resume" ] || started='^\[orrery\] resuming after iteration '
for np in $nps; do
  config "np$np"
  if [ -n "$resume" ]; then
    ORRERY_STOP_AT_ITERATION=$resume launch "$first" run "np$np.json" >"np$np.stop.log" 2>&1
    rc=$?
    [ "$rc" -eq 130 ] || { cat "np$np.stop.log"; fail "the run stopped under $first ranks exited $rc, expected 130"; }
    [ "$(ls "np$np")" = checkpoint.orrery ] || fail "the run stopped under $first ranks left: $(ls "np$np")"
  fi
  start=$(date +%s.%N)
  launch "$np" run "np$np.json" ${resume:+--resume} 2>"np$np.log" || { cat "np$np.log"; fail "mpirun -np $np failed"; }
  took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f s", e - s }')
  for f in objects.npy classes.npy; do
    cmp -s "one/$f" "np$np/$f" || fail "$np ranks: $f differs from the one-process run${resume:+ (stopped after iteration $resume under $first ranks, resumed)}"
  done
  [ "$(grep -c "$started" "np$np.log")" -eq 1 ] || { cat "np$np.log"; fail "$np ranks: not one progress stream"; }
  [ "$(grep -c '^\[pe\] wrote ' "np$np.log")" -eq 1 ] || { cat "np$np.log"; fail "$np ranks: not one writer"; }
  [ "$(ls "np$np")" = "$(printf 'classes.npy\nobjects.npy\nreport.json')" ] || fail "$np ranks: unexpected files: $(ls "np$np")"
  grep -q "\"ranks\": $np," "np$np/report.json" || fail "$np ranks: the report does not record $np ranks"
  grep -q '"name": "mpi"' "np$np/report.json" || fail "$np ranks: the report does not name the mpi communicator"
  rows=$(tr -d ' \n' <"np$np/report.json" | grep -o '"rows":\[[0-9,]*\]')
  echo "pe_ranks: N = $n, $np ranks ($rows)${resume:+, resumed after iteration $resume under $first}: identical objects.npy and classes.npy, one report ($took)"
done

[ "$refuse" -eq 1 ] || exit 0
# What cannot shard is refused alike on every rank, before anything is read or written.
printf '{"method": "nerv", "input": {"vectors": "post.csv"}, "output": {"dir": "gpu"}, "device": "cuda"}\n' >gpu.json
launch 2 run gpu.json >gpu.log 2>&1
rc=$?
[ "$rc" -eq 2 ] || { cat gpu.log; fail "a GPU run under 2 ranks: exit status $rc, expected 2"; }
grep -q "error: comm: .*only pe run on GPUs" gpu.log || { cat gpu.log; fail "a GPU run under 2 ranks: no message naming comm"; }
[ ! -e gpu ] || fail "a GPU run under 2 ranks wrote $(ls gpu)"
echo "pe_ranks: a GPU run under 2 ranks refused (exit 2, naming comm), nothing written"
