#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Model-checks the sleep, wait and claim protocols with spin (README.md).
#   run.sh            every model and configuration: no error allowed
#   run.sh --faults   every seeded fault: each must give a counterexample
#   run.sh --model FILE.pml [-DNAME[=VALUE]...]   one ad hoc run
# Exit 0 = pass, 1 = fail, 77 = skipped (no spin or no C compiler).
# Each run: spin -a, pan compiled with -DSAFETY (assertions, invalid end
# states), run with -m$DEPTH (a search deeper than that fails the run).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
DEPTH=100000
MEMLIM=1024                         # MB per pan run
OPT=-O1                             # pan's compile: -O1 halves -O2's time
CC_PAN=${PAN_CC:-${CC:-cc}}

command -v spin >/dev/null 2>&1 || { echo "spin not installed: skipped"; exit 77; }
command -v "$CC_PAN" >/dev/null 2>&1 || CC_PAN=gcc
command -v "$CC_PAN" >/dev/null 2>&1 || { echo "no C compiler for pan: skipped"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wspool-models.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# Normal configurations: name, model, defines.
normal=(
  "sleep       sleep.pml -DNW=2 -DNP=1 -DNI=2"
  "sleep-sym   sleep.pml -DNW=2 -DNP=1 -DNI=2 -DASYM=0"
  "sleep-nonap sleep.pml -DNW=2 -DNP=1 -DNI=2 -DNAP=0"
  "sleep-2p    sleep.pml -DNW=2 -DNP=2 -DNI=1"
  "sleep-3w    sleep.pml -DNW=3 -DNP=1 -DNI=1"
  "sleep-spawn sleep.pml -DNW=2 -DNP=1 -DNI=1 -DSPAWN=1"
  "sleep-timed sleep.pml -DNW=2 -DNP=1 -DNI=2 -DTIMED=1"
  "bells       sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1"
  "bells-sym   sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1 -DASYM=0"
  "bells-nonap sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1 -DNAP=0"
  "bells-3w    sleep.pml -DNW=3 -DNP=1 -DNI=1 -DBELLS=1"
  "bells-spawn sleep.pml -DNW=2 -DNP=1 -DNI=1 -DBELLS=1 -DSPAWN=1"
  "bells-timed sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1 -DTIMED=1"
  "bells-standin sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1 -DNBELL=1"
  "bells-batch sleep.pml -DNW=2 -DNP=1 -DNI=2 -DBELLS=1 -DBATCH=1"
  "wait        wait.pml  -DNWT=2"
  "wait-1      wait.pml  -DNWT=1"
  "wait-sym    wait.pml  -DNWT=2 -DASYM=0"
  "wait-task   wait.pml  -DNWT=2 -DTC=1"
  "claim       claim.pml -DEND=5"
  "claim-sym   claim.pml -DEND=5 -DASYM=0"
)
# Seeded faults: name, model, defines (the fault macro last).
faults=(
  "sleep       sleep.pml -DNO_SLEEPER_FENCE"
  "sleep       sleep.pml -DNO_MEMBARRIER"
  "sleep       sleep.pml -DNO_NAP_LOOK"
  "sleep-sym   sleep.pml -DASYM=0 -DNO_SLEEPER_FENCE"
  "sleep-sym   sleep.pml -DASYM=0 -DNO_PRODUCER_FENCE"
  "sleep-sym   sleep.pml -DASYM=0 -DNO_RECHECK"
  "sleep       sleep.pml -DLATE_EPOCH"
  "sleep       sleep.pml -DNO_PREPARE_CLEAR"
  "bells       sleep.pml -DBELLS=1 -DNO_BELL_EPOCH"
  "bells       sleep.pml -DBELLS=1 -DNBELL=0 -DNO_EPOCH_FALLBACK"
  "bells       sleep.pml -DBELLS=1 -DNO_RING_WAKE"
  "wait-1      wait.pml  -DNWT=1 -DNO_WAITER_FENCE"
  "wait        wait.pml  -DNO_MEMBARRIER"
  "wait-sym    wait.pml  -DASYM=0 -DNO_COMPLETER_FENCE"
  "wait        wait.pml  -DNO_WAITERS_CHECK"
  "wait        wait.pml  -DLATE_EPOCH"
  "claim       claim.pml -DNO_TAKER_FENCE"
  "claim       claim.pml -DNO_MEMBARRIER"
  "claim-sym   claim.pml -DASYM=0 -DNO_RUNNER_FENCE"
  "claim       claim.pml -DNO_RECHECK"
  "claim       claim.pml -DNO_FINAL_WAIT"
)

# run_one NAME MODEL DEFINES... : spin -a, compile, search; pan's output in
# $d/pan.log and the seconds taken in $d/secs. Nonzero if no search ran.
run_one() {
  local name=$1 model=$2 d=$3
  shift 3
  mkdir -p "$d"
  cp "$here/$model" "$d/" || return 1
  (cd "$d" && spin -a "$@" "$model" >spin.log 2>&1) || { echo "$name: spin -a failed:"; cat "$d/spin.log"; return 1; }
  (cd "$d" && "$CC_PAN" "$OPT" -w -DSAFETY -DMEMLIM=$MEMLIM -o pan pan.c >cc.log 2>&1) ||
    { echo "$name: compiling pan failed:"; cat "$d/cc.log"; return 1; }
  local t0=$SECONDS
  (cd "$d" && ./pan -m$DEPTH -n >pan.log 2>&1)
  echo $((SECONDS - t0)) >"$d/secs"
}

# Fields of a pan log.
states() { grep -m1 -o '[0-9]* states, stored' "$1" | cut -d' ' -f1; }
depth() { grep -m1 -o 'depth reached [0-9]*' "$1" | cut -d' ' -f3; }
errors() { grep -m1 -o 'errors: [0-9]*' "$1" | cut -d' ' -f2; }
complete() { [ -n "$(errors "$1")" ] && ! grep -q 'max search depth too small' "$1"; }

# verdict MODE NAME MODEL DEFINES DIR: prints the line; nonzero = failed.
verdict() {
  local mode=$1 name=$2 model=$3 defs=$4 d=$5 log=$5/pan.log
  if [ ! -f "$d/secs" ]; then
    printf '%-11s %-40s FAILED: no search ran\n' "$name" "$model $defs"
    return 1
  fi
  if [ "$mode" = normal ]; then
    if complete "$log" && [ "$(errors "$log")" = 0 ]; then
      printf '%-11s %-40s ok: %8s states, depth %s (-m%s), %s s\n' \
        "$name" "$model $defs" "$(states "$log")" "$(depth "$log")" "$DEPTH" "$(cat "$d/secs")"
      return 0
    fi
    printf '%-11s %-40s FAILED:\n' "$name" "$model $defs"
    grep -E '^pan|error' "$log" | head -5
    return 1
  fi
  # A fault counts as found only through the property's own assertion or
  # an invalid end state, not a store buffer overflow.
  local what
  what=$(grep -m1 -E 'pan:1: (assertion violated|invalid end state)' "$log" | sed 's/^pan:1: //')
  if [ "$(errors "$log")" = 1 ] && [ -n "$what" ] && ! grep -q 'assert((bn\[' <<<"$what"; then
    printf '%-11s %-40s found: %s, %s states\n' "$name" "$model $defs" "$what" "$(states "$log")"
    return 0
  fi
  printf '%-11s %-40s NOT FOUND (errors: %s)\n' "$name" "$model $defs" "$(errors "$log")"
  return 1
}

# run_all MODE CONFIG... : JOBS searches at a time, lines printed in order.
JOBS=${MODEL_JOBS:-$(nproc 2>/dev/null || echo 2)}
run_all() {
  local mode=$1 i=0 c name model defs fail=0
  shift
  for c in "$@"; do
    i=$((i + 1))
    read -r name model defs <<<"$c"
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    # shellcheck disable=SC2086
    run_one "$name" "$model" "$work/$i" $defs >"$work/$i.err" 2>&1 &
  done
  wait
  i=0
  for c in "$@"; do
    i=$((i + 1))
    read -r name model defs <<<"$c"
    cat "$work/$i.err"
    verdict "$mode" "$name" "$model" "$defs" "$work/$i" || fail=1
  done
  return $fail
}

case "${1:-}" in
"") run_all normal "${normal[@]}" ;;
--faults) OPT=-O0 run_all faults "${faults[@]}" ;;  # small searches: compile fast
--model)
  shift
  [ $# -ge 1 ] || { echo "usage: run.sh --model FILE.pml [-DNAME...]"; exit 1; }
  model=$1
  shift
  run_one "${model%.pml}" "$model" "$work/1" "$@" || exit 1
  cat "$work/1/pan.log"
  complete "$work/1/pan.log" && [ "$(errors "$work/1/pan.log")" = 0 ]
  ;;
*)
  echo "usage: run.sh [--faults | --model FILE.pml [-DNAME...]]"
  exit 1
  ;;
esac
