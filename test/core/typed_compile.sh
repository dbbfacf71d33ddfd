#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Typed tasks at compile time (wspool_typed.h):
#  - a program using every kind of task (the one-piece POOL_STATIC_TASK
#    forms too) compiles cleanly in C11 with
#    -Wall -Wextra -Wpedantic -Wconversion -Werror, and in C++17 with
#    -Wall -Wextra -Wpedantic -Werror;
#  - a wrong argument type does not compile, and the compiler names the
#    generated spawn function: a pointer of another type (an ISO C
#    constraint violation: an error with -pedantic-errors, as in C++), a
#    struct where an int is expected, too many or too few arguments, a
#    wrong result type at the sync; a narrowing arithmetic argument is
#    reported by -Wconversion; the same for NAME_run and NAME_run_rc (the
#    pool first, the result pointer of the right type), NAME_push and
#    NAME_pop_rc;
#  - a task of 14 arguments compiles, one of 15 does not.
# The clean program is also compiled with clang and clang++ when installed.
#   typed_compile.sh INCLUDE_DIR "CC COMMAND" ["CXX COMMAND"]
set -uo pipefail
inc=$1
read -r -a cc <<<"$2"
read -r -a cxx <<<"${3:-}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

prelude='#include <wspool.h>
typedef struct pt { int x, y; } pt;
static long g(long *p, int n) { return *p + n; }
POOL_TASK(long, g, long *, int);
static void h(pt p) { (void)p; }
POOL_VOID_TASK(h, pt);
static double k(void) { return 1.0; }
POOL_TASK_0(double, k);
POOL_STATIC_TASK(int, s2, int, int);
static inline int s2(int a, int b) { return a + b; }
POOL_STATIC_VOID_TASK(s1, int);
static void s1(int a) { (void)a; }
POOL_STATIC_TASK_0(int, s0);
static int s0(void) { return 0; }
POOL_STATIC_VOID_TASK_0(sv0);
static void sv0(void) {}
long use(long *p);'

good='long use(long *p) {
  g_frame f; h_frame e; k_frame d;
  pt q = {1, 2};
  double kd = 0;
  long r = 0;
  g_spawn(&f, p, 3);
  h_spawn(&e, q);
  k_spawn(&d);
  k_sync(&d);
  h_sync(&e);
  h_run(NULL, q);
  if (h_run_rc(NULL, q) != 0 || k_run_rc(NULL, &kd) != 0 || g_run_rc(NULL, &r, p, 2) != 0)
    return 0;
  if (g_push(NULL, p, 4) != 0 || h_push(NULL, q) != 0 || k_push(NULL) != 0) return 0;
  if (k_pop_rc(&kd) != 0 || h_pop_rc() != 0) return 0;
  h_push(NULL, q);
  h_pop();
  r += g_pop();
  s1_run(NULL, 1);
  sv0_run(NULL);
  r += s2_run(NULL, 1, 2) + s0_run(NULL);
  return g_sync(&f) + g_run(NULL, p, 1) + r + (k_run(NULL) > kd);
}'

# expect NAME OK|FAIL PATTERN LANG FLAGS... < body
check() {
  local name=$1 want=$2 pat=$3 lang=$4
  shift 4
  local src="$tmp/$name.$lang" out="$tmp/$name.out" rc
  { printf '%s\n' "$prelude"; cat; } >"$src"
  if [ "$lang" = cpp ]; then
    [ ${#cxx[@]} -gt 0 ] || { echo "skip $name (no C++ compiler)"; return; }
    "${cxx[@]}" -fsyntax-only -I"$inc" "$@" "$src" >"$out" 2>&1
  else
    "${cc[@]}" -fsyntax-only -I"$inc" "$@" "$src" >"$out" 2>&1
  fi
  rc=$?
  if [ "$want" = OK ] && [ $rc -ne 0 ]; then
    echo "FAIL $name: expected to compile"; cat "$out"; fails=$((fails + 1))
  elif [ "$want" = FAIL ] && { [ $rc -eq 0 ] || ! grep -q -- "$pat" "$out"; }; then
    echo "FAIL $name: expected an error matching '$pat' (exit $rc)"; cat "$out"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

c11=(-std=c11 -Wall -Wextra -Wpedantic)
check good_c OK - c "${c11[@]}" -Wconversion -Werror <<<"$good"
check good_cpp OK - cpp -std=c++17 -Wall -Wextra -Wpedantic -Wold-style-cast -Werror <<<"$good"
# Clang warns about unused static inline functions in the main file, where
# the macros expand: when it is installed, the clean program must stay
# clean with it too.
if command -v clang >/dev/null && command -v clang++ >/dev/null; then
  saved_cc=("${cc[@]}") saved_cxx=("${cxx[@]}")
  cc=(clang) cxx=(clang++)
  check good_clang OK - c "${c11[@]}" -Wconversion -Werror <<<"$good"
  check good_clangxx OK - cpp -std=c++17 -Wall -Wextra -Wpedantic -Werror <<<"$good"
  cc=("${saved_cc[@]}") cxx=("${saved_cxx[@]}")
fi
check pointer_c FAIL g_spawn c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { int x = 0; g_frame f; (void)p; g_spawn(&f, &x, 3); return g_sync(&f); }
B
check pointer_cpp FAIL g_spawn cpp -std=c++17 <<'B'
long use(long *p) { int x = 0; g_frame f; (void)p; g_spawn(&f, &x, 3); return g_sync(&f); }
B
check struct_arg FAIL g_spawn c "${c11[@]}" <<'B'
long use(long *p) { pt q = {1, 2}; g_frame f; g_spawn(&f, p, q); return g_sync(&f); }
B
check struct_param FAIL h_spawn c "${c11[@]}" <<'B'
long use(long *p) { h_frame e; h_spawn(&e, 5); h_sync(&e); return *p; }
B
check too_many FAIL g_spawn c "${c11[@]}" <<'B'
long use(long *p) { g_frame f; g_spawn(&f, p, 3, 4); return g_sync(&f); }
B
check too_few FAIL g_spawn c "${c11[@]}" <<'B'
long use(long *p) { g_frame f; g_spawn(&f, p); return g_sync(&f); }
B
check wrong_frame FAIL g_spawn c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { k_frame f; g_spawn(&f, p, 3); return 0; }
B
check result_type FAIL "invalid initializer\|incompatible type" c "${c11[@]}" <<'B'
long use(long *p) { g_frame f; g_spawn(&f, p, 3); pt r = g_sync(&f); return r.x; }
B
check narrowing FAIL g_spawn c "${c11[@]}" -Wconversion -Werror <<'B'
long use(long *p) { double d = 2.5; g_frame f; g_spawn(&f, p, d); return g_sync(&f); }
B
check run_pointer FAIL g_run c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { int x = 0; (void)p; return g_run(NULL, &x, 3); }
B
check run_result_pointer FAIL g_run_rc c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { int r = 0; (void)g_run_rc(NULL, &r, p, 3); return r; }
B
check push_pointer FAIL g_push c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { int x = 0; (void)p; g_push(NULL, &x, 3); return g_pop(); }
B
check pop_result_pointer FAIL g_pop_rc c "${c11[@]}" -pedantic-errors <<'B'
long use(long *p) { int r = 0; g_push(NULL, p, 3); (void)g_pop_rc(&r); return r; }
B
check run_too_few FAIL g_run c "${c11[@]}" <<'B'
long use(long *p) { return g_run(NULL, p); }
B
check run_no_pool FAIL g_run c "${c11[@]}" <<'B'
long use(long *p) { return g_run(p, 3); }
B
# Fourteen arguments compile; fifteen do not.
check args14 OK - c "${c11[@]}" -Wconversion -Werror <<'B'
static int w(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j, int k, int l,
             int m, int n) { return a + b + c + d + e + f + g + h + i + j + k + l + m + n; }
POOL_TASK(int, w, int, int, int, int, int, int, int, int, int, int, int, int, int, int);
long use(long *p) { (void)p; return w_run(NULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14); }
B
check args15 FAIL "at_most_14_arguments" c "${c11[@]}" <<'B'
static int w(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j, int k, int l,
             int m, int n, int o) { return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o; }
POOL_TASK(int, w, int, int, int, int, int, int, int, int, int, int, int, int, int, int, int);
long use(long *p) { (void)p; return 0; }
B
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "typed tasks: type checks as documented"
