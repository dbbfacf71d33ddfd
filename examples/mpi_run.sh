#!/bin/sh
# SPDX-License-Identifier: MIT
# The mpi_hybrid test: two ranks on this machine, each bound to its share of
# the cores, under Open MPI's mpirun or MPICH's mpiexec.
#   mpi_run.sh MPIRUN PROGRAM N SANITIZE
# SANITIZE is the build's b_sanitize. Under ASan a 2-rank run reports some
# 3,000 leaked blocks, all allocated by Open MPI and its components, and
# TSan is known to flag Open MPI's internals: neither is wspool's, so
# sanitizer builds skip the run (77) and only build the example.
# Exit 0 only when the program verified its total and its placement.
set -u
mpirun=$1 prog=$2 n=$3 sanitize=$4
if [ "$sanitize" != none ]; then
  echo "mpi_hybrid: skipped under -Db_sanitize=$sanitize (noise from MPI internals)"
  exit 77
fi
ncpu=$(nproc 2>/dev/null || echo 1)
if "$mpirun" --version 2>&1 | grep -qi 'open mpi\|open-mpi\|openrte'; then
  # CI runs as root in a container: Open MPI refuses that without both
  # variables. Oversubscribe: 2 ranks may exceed the slots it detects.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  if [ "$ncpu" -ge 2 ]; then
    bind="--bind-to core --map-by core"
  else
    bind="--bind-to none" # one CPU: both ranks share it
  fi
  # shellcheck disable=SC2086
  set -- "$mpirun" --oversubscribe $bind -np 2 "$prog" "$n"
else
  # MPICH (Hydra)
  if [ "$ncpu" -ge 2 ]; then bind="-bind-to core"; else bind=""; fi
  # shellcheck disable=SC2086
  set -- "$mpirun" $bind -n 2 "$prog" "$n"
fi
echo "$*"
out=$(timeout 100 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "mpi_hybrid: exit status $rc"; exit 1; }
printf '%s\n' "$out" | grep -q "total .*: verified" || exit 1
printf '%s\n' "$out" | grep -q "placement: every worker inside its rank's cpuset" || exit 1
[ "$(printf '%s\n' "$out" | grep -c "inside the rank's cpuset$")" -ge 2 ] || exit 1
# Bound to distinct cores, no two ranks may share a CPU.
if [ "$ncpu" -ge 2 ] && printf '%s\n' "$out" | grep -q "^warning: ranks"; then exit 1; fi
exit 0
