#!/usr/bin/env bash
# A rank killed or stopped in the middle of a sharded HSSNE fit ends the whole run: starts a long fit
# (exact repulsion, no stopping tolerance, comm_timeout 3 s) on 2 ranks, waits for rank 0's first
# progress line, sends rank 1 SIGNAL (KILL: it dies, and the launcher stops the other; STOP: it
# hangs, and rank 0, past its 3 s in the next collective, stops the run naming it), and passes when
# the launcher exits non-zero within LIMIT seconds, the messages name rank 1, and the run wrote
# nothing (outputs are committed only at the end, by rank 0).
# Usage: killed_rank.sh ORRERY LIMIT SIGNAL LAUNCHER NP_FLAG [LAUNCHER_FLAGS...]
set -uo pipefail
[ $# -ge 5 ] || { echo "usage: killed_rank.sh ORRERY LIMIT SIGNAL LAUNCHER NP_FLAG [FLAGS...]" >&2; exit 2; }
orrery=$1 limit=$2 signal=$3 launcher=$4 np_flag=$5
shift 5
flags=("$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/orrery-killed-rank.XXXXXX") || exit 1
launched="" rank_one=""
trap '[ -n "$rank_one" ] && kill -9 "$rank_one" 2>/dev/null; [ -n "$launched" ] && kill -9 "$launched" 2>/dev/null
  rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "killed_rank: $*" >&2; exit 1; }

awk 'BEGIN { srand(5); for (i = 0; i < 2000; i++) { line = "";
  for (j = 0; j < 5; j++) line = line (j ? "," : "") sprintf("%.17g", rand() + (j == i % 3 ? 3 : 0)); print line } }' >x.csv
printf '{"method": "hssne", "input": {"vectors": "x.csv", "perplexity": 10, "affinities": "sparse"},
  "params": {"repulsion": "exact", "max_iter": 100000000, "tol": 0}, "output": {"dir": "out", "format": "npy"},
  "device": "cpu", "threads": 1, "seed": 3, "comm_timeout": 3}\n' >run.json
# The config by its path in this test's own folder, so that the search for rank 1 below finds this
# run's process and not that of another test running the same script at the same time.
"$launcher" "$np_flag" 2 "${flags[@]}" "$orrery" run "$work/run.json" >run.log 2>&1 &
launched=$!

# rank 1's process: the orrery child whose environment says so (Open MPI's, or PMI's under srun)
for _ in $(seq 1 300); do
  if grep -q '^\[hssne\] iter     0 ' run.log; then
    for p in $(pgrep -f "$orrery run $work/run.json"); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qE '^(OMPI_COMM_WORLD_RANK|PMI_RANK|PMIX_RANK)=1$'; then
        rank_one=$p
      fi
    done
    [ -n "$rank_one" ] && break
  fi
  kill -0 "$launched" 2>/dev/null || { cat run.log; fail "the run ended before rank 1 could be killed"; }
  sleep 0.1
done
[ -n "$rank_one" ] || { cat run.log; fail "found no rank 1 process in the fit"; }
kill -s "$signal" "$rank_one"
killed=$(date +%s.%N)
rc=""
for _ in $(seq 1 $((limit * 10))); do
  if ! kill -0 "$launched" 2>/dev/null; then
    wait "$launched"
    rc=$?
    break
  fi
  sleep 0.1
done
took=$(awk -v s="$killed" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
[ -n "$rc" ] || { cat run.log; fail "the other rank was still running $limit s after rank 1 got SIG$signal"; }
launched=""
[ "$rc" -ne 0 ] || { cat run.log; fail "exit status 0 after rank 1 got SIG$signal"; }
if [ "$signal" = STOP ]; then
  grep -q "rank 0 of 2 aborts: waited more than 3 s in .* for rank 1, which did not reach it" run.log ||
    { cat run.log; fail "rank 0's message does not name rank 1 as the one that hangs"; }
else
  grep -qiE "rank 1\b" run.log || { cat run.log; fail "the launcher's message does not name rank 1"; }
fi
[ ! -e out ] || fail "the run wrote $(ls out)"
echo "killed_rank: rank 1 got SIG$signal in the fit; the run ended $took s later, exit status $rc, nothing written"
grep "aborts:" run.log || true
