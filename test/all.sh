#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, as CI runs it: eleven builds, each with `meson test`.
#   release     gcc, -Dwerror=true, the Doxygen reference (warnings fail) and
#               the spin models of test/models (the other legs skip them)
#   tsan        gcc, ThreadSanitizer
#   asan        gcc, AddressSanitizer + UndefinedBehaviorSanitizer
#   ao          gcc, the libatomic_ops backend and the portable futex
#               fallback (mutex + condition variable buckets), -Dwerror=true
#   clang       clang, -Dwerror=true
#   clang-tsan  clang, ThreadSanitizer
#   lto         gcc, -Db_lto=true and -fcf-protection=full (a distribution's
#               flags); the packaging test builds a static LTO subproject user
#   aarch64     gcc cross to arm64 Linux, the tests under qemu-user, hwloc
#               off (docs/platforms.md says what that leg shows)
#   debug       gcc, -Ddebug_checks=true: every misuse the header names is
#               reported, the runtime's invariants asserted
#   degraded    gcc, -Dmembarrier=failing: every heavy barrier fails after
#               registration, so the tests of what those barriers order
#               ($degraded_tests: sleep and wake-up, outside submissions,
#               batch claims, destroy, outside waits) run on the degraded
#               path of the asymmetric barriers (docs/design.md 5.3)
#   chaos       gcc, -Dchaos=true: the core, fork/join, submit, destroy and cancel
#               tests ($chaos_tests), each under WSPOOL_CHAOS_SEED=1, 2, 3:
#               every atomic access and fence may yield or spin first
# Ends with one line "N passed, N failed, N skipped" and exits non-zero on any
# failure (a build that fails counts as one failure).
# WSPOOL_CONFIGS="release tsan" runs a subset; WSPOOL_STRESS=N lengthens the
# stress tests N times.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
mkdir -p "$root/build-test"
configs=${WSPOOL_CONFIGS:-"release tsan asan ao debug degraded chaos clang clang-tsan lto aarch64"}
chaos_tests="deque fence submit submit_batch wakeup destroy destroy_waiters fj_compute fj_sync_order
  fj_outside fj_sync_outside fj_group fj_deep fj_publish fj_take fj_wait_sleep fj_tree_orders
  fault_destroy_race cancel_group cancel_nested cancel_loop job_outcome blocking_run blocking_destroy"
degraded_tests="fence submit submit_order submit_batch wakeup destroy destroy_waiters idle_memory
  fj_outside fj_sync_outside fj_wait_sleep fj_publish fault_destroy_race test_parfor cancel_loop
  blocking_run blocking_destroy job_wait job_destroy"
passed=0 failed=0 skipped=0

opts_for() {
  case "$1" in
  release) echo "-Dbuildtype=release -Dwerror=true" ;;
  tsan) echo "-Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false -Dpeers=disabled -Dmodels=disabled" ;;
  asan) echo "-Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dpeers=disabled -Dmodels=disabled" ;;
  ao) echo "-Dbuildtype=release -Dwerror=true -Datomics=libatomic_ops -Dfutex=false -Dpeers=disabled -Dmodels=disabled" ;;
  debug) echo "-Dbuildtype=debugoptimized -Dwerror=true -Ddebug_checks=true -Dpeers=disabled -Dmodels=disabled" ;;
  degraded) echo "-Dbuildtype=debugoptimized -Dwerror=true -Dmembarrier=failing -Dpeers=disabled -Dmodels=disabled" ;;
  chaos) echo "-Dbuildtype=debugoptimized -Dwerror=true -Dchaos=true -Dpeers=disabled -Dmodels=disabled" ;;
  clang) echo "-Dbuildtype=release -Dwerror=true -Dpeers=disabled -Dmodels=disabled" ;;
  clang-tsan) echo "-Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false -Dpeers=disabled -Dmodels=disabled" ;;
  lto) echo "-Dbuildtype=release -Dwerror=true -Db_lto=true -Dc_args=-fcf-protection=full -Dpeers=disabled -Dmodels=disabled" ;;
  aarch64) echo "--cross-file $root/test/cross/aarch64-linux-gnu.ini -Dbuildtype=release -Dwerror=true -Dhwloc=disabled -Dpeers=disabled -Dmodels=disabled" ;;
  *) return 1 ;;
  esac
}

# Sanitizer findings fail the test that triggers them.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=0 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 ${UBSAN_OPTIONS:-}"

# Adds a meson test log's results to the totals.
count_log() {
  local name=$1 log=$2
  if [ -f "$log" ]; then
    p=$(grep -c '"result": "OK"' "$log")
    s=$(grep -c '"result": "SKIP"' "$log")
    f=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log")
    echo "=== $name: $p passed, $f failed, $s skipped"
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  else
    echo "=== $name: no test log"
    failed=$((failed + 1))
  fi
}

for c in $configs; do
  leg_start=$SECONDS
  dir="$root/build-test/$c"
  opts=$(opts_for "$c") || { echo "unknown config $c"; failed=$((failed + 1)); continue; }
  echo "=== $c: meson setup $opts"
  rm -rf "$dir"
  # The clang legs build with clang (CC is read at setup only).
  cc_env=()
  case "$c" in clang*) cc_env=(env CC=clang CXX=clang++) ;; esac
  # shellcheck disable=SC2086
  if ! "${cc_env[@]}" meson setup "$dir" $opts >"$root/build-test/$c.setup.log" 2>&1 ||
    ! ninja -C "$dir" >"$root/build-test/$c.build.log" 2>&1; then
    echo "=== $c: BUILD FAILED"
    tail -n 30 "$root/build-test/$c.setup.log" "$root/build-test/$c.build.log" 2>/dev/null
    failed=$((failed + 1))
    continue
  fi
  if [ "$c" = chaos ]; then
    for seed in 1 2 3; do
      echo "=== chaos: WSPOOL_CHAOS_SEED=$seed"
      # shellcheck disable=SC2086
      WSPOOL_CHAOS_SEED=$seed meson test -C "$dir" --print-errorlogs $chaos_tests
      count_log "$c seed $seed" "$dir/meson-logs/testlog.json"
    done
  elif [ "$c" = degraded ]; then
    # shellcheck disable=SC2086
    meson test -C "$dir" --print-errorlogs $degraded_tests
    count_log "$c" "$dir/meson-logs/testlog.json"
  else
    meson test -C "$dir" --print-errorlogs
    count_log "$c" "$dir/meson-logs/testlog.json"
  fi
  # Each leg's length (build and tests), for the run's time budget.
  echo "=== $c: $((SECONDS - leg_start)) s"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
