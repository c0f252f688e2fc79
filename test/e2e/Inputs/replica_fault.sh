#!/usr/bin/env bash
# Runs a command as one rank of an mpirun job, and on rank RANK sends itself
# SIGNAL after DELAY seconds: KILL (a rank that dies) or STOP (a rank that
# stalls, alive, so only the collective timeout can notice).
#   replica_fault.sh RANK SIGNAL DELAY COMMAND...
set -eu
rank=$1 signal=$2 delay=$3
shift 3
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then
  (sleep "$delay"; kill -s "$signal" $$) &
fi
exec "$@"
