#!/usr/bin/env bash
# PLSV over MPI equals PLSV in one process, bit for bit: writes a generated corpus (N documents in
# SVMlight form, each mostly words of one of a few planted topics; awk's seeded generator, so no tools
# beyond the shell), runs `orrery run` in one process, then under the launcher with each number of
# ranks given, and passes when every run's documents.npy, topics.npy and theta.npy equal the
# one-process files byte for byte and when each run shows one progress stream and writes one report
# (rank 0's, naming every rank). Then a fold-in of the same corpus into the one-process model, under
# the largest number of ranks given, must equal the one-process fold-in alike.
# With RESUME_AFTER=I in the environment, each fit under NP ranks is first stopped after EM iteration
# I under the first NP of the list (ORRERY_STOP_AT_ITERATION: exit 130, a checkpoint and nothing
# else) and then resumed under NP (`--resume`); its files must equal the one-process run's all the
# same (no fold-in then).
# Documents are sharded in blocks of 1024 (kPlsvChunk): N = 2049 gives 2 ranks 1024 and 1025
# documents, 3 ranks 1024, 1024 and 1, and 4 ranks none, 1024, 1024 and 1.
# Usage: plsv_ranks.sh ORRERY N "NP..." LAUNCHER NP_FLAG [LAUNCHER_FLAGS...]
set -uo pipefail
[ $# -ge 5 ] || { echo "usage: plsv_ranks.sh ORRERY N \"NP...\" LAUNCHER NP_FLAG [FLAGS...]" >&2; exit 2; }
orrery=$1 n=$2 nps=$3 launcher=$4 np_flag=$5
shift 5
flags=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/orrery-plsv-ranks.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "plsv_ranks: $*" >&2; exit 1; }

# 60 words, 4 planted topics of 15 words each; a document of 8 to 30 words takes 3 in 4 of them from
# its topic and the rest from anywhere. SVMlight: the topic as label, ascending 1-based word ids.
awk -v n="$n" 'BEGIN { srand(11); w = 60; t = 4; for (i = 0; i < n; i++) { c = int(rand() * t);
  delete cnt; len = 8 + int(rand() * 23);
  for (j = 0; j < len; j++) { id = rand() < 0.75 ? c * (w / t) + int(rand() * (w / t)) : int(rand() * w); cnt[id + 1]++ }
  line = c; for (id = 1; id <= w; id++) if (id in cnt) line = line " " id ":" cnt[id]; print line } }' >corpus.svm
config() {  # config DIR [MODEL]: a PLSV run (or a fold-in into MODEL) of a few tens of EM iterations
  local model=""
  [ $# -ge 2 ] && model=", \"model\": \"$2\""
  printf '{"method": "plsv", "input": {"corpus": "corpus.svm"%s},
  "params": {"topics": 4, "max_iter": 30, "tol": 0, "relocate_every": 7},
  "output": {"dir": "%s", "format": "npy", "svg": false}, "device": "cpu", "threads": 1, "seed": 5}\n' "$model" "$1" >"$1.json"
}
launch() { "$launcher" "$np_flag" "$1" "${flags[@]}" "$orrery" "${@:2}"; }
seconds() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f s", e - s }'; }
# check NP DIR ONE FILES...: one progress stream, one writer, the files equal ONE's, a report naming NP ranks
check() {
  local np=$1 dir=$2 one=$3
  shift 3
  for f in "$@"; do
    cmp -s "$one/$f" "$dir/$f" || fail "$np ranks: $dir/$f differs from the one-process run"
  done
  [ "$(grep -c "$started" "$dir.log")" -eq 1 ] || { cat "$dir.log"; fail "$np ranks: not one progress stream"; }
  [ "$(grep -c '^\[plsv\] wrote ' "$dir.log")" -eq 1 ] || { cat "$dir.log"; fail "$np ranks: not one writer"; }
  [ "$(ls "$dir")" = "$(printf '%s\n' "$@" report.json | sort)" ] || fail "$np ranks: unexpected files: $(ls "$dir")"
  grep -q "\"ranks\": $np," "$dir/report.json" || fail "$np ranks: the report does not record $np ranks"
  grep -q '"name": "mpi"' "$dir/report.json" || fail "$np ranks: the report does not name the mpi communicator"
}

resume=${RESUME_AFTER:-} first=${nps%% *} started='^\[plsv\] iter    0 '
config one
start=$(date +%s.%N)
"$orrery" run one.json 2>one.log || { cat one.log; fail "the one-process run failed"; }
echo "plsv_ranks: N = $n, one process: $(seconds "$start")"
last=""
for np in $nps; do
  config "np$np"
  if [ -n "$resume" ]; then
    ORRERY_STOP_AT_ITERATION=$resume launch "$first" run "np$np.json" >"np$np.stop.log" 2>&1
    rc=$?
    [ "$rc" -eq 130 ] || { cat "np$np.stop.log"; fail "the run stopped under $first ranks exited $rc, expected 130"; }
    [ "$(ls "np$np")" = checkpoint.orrery ] || fail "the run stopped under $first ranks left: $(ls "np$np")"
    started='^\[orrery\] resuming after iteration '
  fi
  start=$(date +%s.%N)
  launch "$np" run "np$np.json" ${resume:+--resume} 2>"np$np.log" || { cat "np$np.log"; fail "mpirun -np $np failed"; }
  took=$(seconds "$start")
  check "$np" "np$np" one documents.npy theta.npy topics.npy
  rows=$(tr -d ' \n' <"np$np/report.json" | grep -o '"rows":\[[0-9,]*\]')
  echo "plsv_ranks: N = $n, $np ranks ($rows)${resume:+, resumed after iteration $resume under $first}: identical documents.npy, topics.npy and theta.npy, one report ($took)"
  last=$np
done

# Fold-in: the one-process model fixed, documents placed over ranks.
[ -n "$last" ] && [ -z "$resume" ] || exit 0
config fold_one one
"$orrery" run fold_one.json 2>fold_one.log || { cat fold_one.log; fail "the one-process fold-in failed"; }
config "fold_np$last" one
launch "$last" run "fold_np$last.json" 2>"fold_np$last.log" || { cat "fold_np$last.log"; fail "fold-in under mpirun -np $last failed"; }
check "$last" "fold_np$last" fold_one documents.npy topics.npy
echo "plsv_ranks: fold-in, N = $n, $last ranks: identical documents.npy and topics.npy, one report"
