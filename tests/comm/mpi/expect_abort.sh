#!/usr/bin/env bash
# Runs the launcher command given (test_comm_mpi's CommMpiAbort test under 2 processes, where rank
# $ORRERY_TEST_ABORT_RANK calls Comm::abort(3, ...)) and passes when it ends non-zero with that
# rank's message: an abort ends every rank, not only the one that called it.
set -uo pipefail
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
  echo "expect_abort: the launcher exited 0; an aborted run must not" >&2
  exit 1
fi
if ! grep -q "rank ${ORRERY_TEST_ABORT_RANK} of 2 aborts: deliberate abort" <<<"$out"; then
  echo "expect_abort: no abort message from rank ${ORRERY_TEST_ABORT_RANK}" >&2
  exit 1
fi
echo "expect_abort: exit status $rc with the rank's message"
