/* SPDX-License-Identifier: MIT */
/* A debug_checks build (-Ddebug_checks=true) notes, on stderr, a sync that
 * left the inline fast path because of its order (its frame was not the
 * newest pending spawn of its thread): once per call site, for the first
 * 10 sites, and goes on (nothing aborts). Other builds: skipped (77).
 *
 * Each case runs in a fork()ed child (this process starts no thread
 * before forking) with stderr on a pipe; the child checks the results
 * itself (every task ran once, with the exact fib value) and the parent
 * reads the notes, whose first line names the site: a function of this
 * program (linked with -rdynamic; compiled without hot/cold splitting, so
 * a site's code stays under its function's name).
 *  - once_per_site: typed syncs out of order at two sites (one with
 *    NAME_sync, one with NAME_sync_rc) and pool_sync out of order at a
 *    third, each run 40 times on a pool of one worker, then 40 times more
 *    on four workers from four jobs at once; and syncs newest first at a
 *    fourth site. Exactly one note per out-of-order site, none for the
 *    fourth, and no overflow line.
 *  - ten_sites: twelve sites out of order, run in turn, each 5 times on a
 *    pool of one worker: notes for the first ten, one each, then one line
 *    saying further sites are not reported, and nothing for the last two.
 * Built with the header's inline paths (the sync reaches the library
 * through a trampoline, which the note looks past) and with
 * POOL_NO_INLINE (a direct call). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* A typed leaf: counts its runs and returns fib(n). */
static long leaf(atomic_int *runs, int n) {
  atomic_fetch_add(runs, 1);
  return fib_seq(n);
}
POOL_TASK(long, leaf, atomic_int *, int);

/* The same as a plain task. */
typedef struct plain_arg {
  atomic_int runs;
  int n;
  long r;
} plain_arg;
static void plain_leaf(void *p) {
  plain_arg *a = p;
  atomic_fetch_add(&a->runs, 1);
  a->r = fib_seq(a->n);
}

/* Two typed children synced oldest first; then the same with sync_rc and
 * three children; plain frames oldest first; typed children newest first.
 * Each checks its results. noinline: each is a call site of its own. */
__attribute__((noinline)) void site_typed(int n) {
  atomic_int r1, r2;
  atomic_init(&r1, 0);
  atomic_init(&r2, 0);
  leaf_frame f1, f2;
  CHECK_OK(leaf_spawn(&f1, &r1, n));
  CHECK_OK(leaf_spawn(&f2, &r2, n + 1));
  long a = leaf_sync(&f1); /* out of order: f2 is newer */
  long b = leaf_sync(&f2);
  CHECK_EQ(a, fib_seq(n));
  CHECK_EQ(b, fib_seq(n + 1));
  CHECK_EQ(atomic_load(&r1), 1);
  CHECK_EQ(atomic_load(&r2), 1);
}

__attribute__((noinline)) void site_typed_rc(int n) {
  atomic_int r[3];
  leaf_frame f[3];
  for (int i = 0; i < 3; i++) {
    atomic_init(&r[i], 0);
    CHECK_OK(leaf_spawn(&f[i], &r[i], n + i));
  }
  for (int i = 0; i < 3; i++) { /* oldest first */
    long v = -1;
    CHECK_OK(leaf_sync_rc(&f[i], &v));
    CHECK_EQ(v, fib_seq(n + i));
    CHECK_EQ(atomic_load(&r[i]), 1);
  }
}

__attribute__((noinline)) void site_plain(int n) {
  plain_arg a[2];
  pool_task_t t[2];
  for (int i = 0; i < 2; i++) {
    atomic_init(&a[i].runs, 0);
    a[i].n = n + i;
    CHECK_OK(pool_spawn(NULL, &t[i], plain_leaf, &a[i]));
  }
  for (int i = 0; i < 2; i++) {
    CHECK_OK(pool_sync(&t[i])); /* oldest first */
    CHECK_EQ(a[i].r, fib_seq(n + i));
    CHECK_EQ(atomic_load(&a[i].runs), 1);
  }
}

__attribute__((noinline)) void site_in_order(int n) {
  atomic_int r1, r2;
  atomic_init(&r1, 0);
  atomic_init(&r2, 0);
  leaf_frame f1, f2;
  CHECK_OK(leaf_spawn(&f1, &r1, n));
  CHECK_OK(leaf_spawn(&f2, &r2, n + 1));
  long b = leaf_sync(&f2); /* newest first */
  long a = leaf_sync(&f1);
  CHECK_EQ(a + b, fib_seq(n + 2));
  CHECK_EQ(atomic_load(&r1) + atomic_load(&r2), 2);
}

/* Twelve sites of the same shape as site_typed (distinct constants keep
 * the compiler from folding them into one function). */
#define TEN_SITE(k)                                          \
  __attribute__((noinline)) void site_k##k(void) {           \
    atomic_int r1, r2;                                       \
    atomic_init(&r1, 0);                                     \
    atomic_init(&r2, 0);                                     \
    leaf_frame f1, f2;                                       \
    CHECK_OK(leaf_spawn(&f1, &r1, k));                       \
    CHECK_OK(leaf_spawn(&f2, &r2, k + 20));                  \
    long a = leaf_sync(&f1);                                 \
    long b = leaf_sync(&f2);                                 \
    CHECK_EQ(a * 1000 + b, fib_seq(k) * 1000 + fib_seq(k + 20)); \
    CHECK_EQ(atomic_load(&r1) * 10 + atomic_load(&r2), 11); \
  }
TEN_SITE(0)
TEN_SITE(1)
TEN_SITE(2)
TEN_SITE(3)
TEN_SITE(4)
TEN_SITE(5)
TEN_SITE(6)
TEN_SITE(7)
TEN_SITE(8)
TEN_SITE(9)
TEN_SITE(10)
TEN_SITE(11)
static void (*const k_sites[12])(void) = {site_k0, site_k1, site_k2, site_k3,
                                          site_k4, site_k5, site_k6, site_k7,
                                          site_k8, site_k9, site_k10, site_k11};

/* ---- the children's work ------------------------------------------------ */

static void four_sites(void *arg) {
  int reps = (int)(intptr_t)arg;
  for (int i = 0; i < reps; i++) {
    site_typed(i % 15);
    site_typed_rc(i % 13);
    site_plain(i % 11);
    site_in_order(i % 17);
  }
}

static void run_once_per_site(void) {
  pool_t *one = make_pool(1);
  CHECK_OK(pool_submit(one, four_sites, (void *)(intptr_t)40));
  CHECK_OK(pool_wait_idle(one));
  pool_destroy(one);
  pool_t *four = make_pool(4);
  for (int j = 0; j < 4; j++) CHECK_OK(pool_submit(four, four_sites, (void *)(intptr_t)40));
  CHECK_OK(pool_wait_idle(four));
  pool_destroy(four);
}

static void twelve_sites(void *arg) {
  (void)arg;
  for (int k = 0; k < 12; k++)
    for (int i = 0; i < 5; i++) k_sites[k]();
}

static void run_ten_sites(void) {
  pool_t *one = make_pool(1);
  CHECK_OK(pool_submit(one, twelve_sites, NULL));
  CHECK_OK(pool_wait_idle(one));
  pool_destroy(one);
}

/* ---- the parent's checks ----------------------------------------------- */

/* Runs `run` in a child with stderr on a pipe; returns what it wrote. The
 * child must exit 0 (its own checks passed). */
static char *child_output(void (*run)(void)) {
  int fds[2];
  CHECK_OK(pipe(fds));
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    check_watchdog(60);
    dup2(fds[1], 2);
    close(fds[0]);
    run();
    fflush(NULL);
    _exit(0);
  }
  close(fds[1]);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  ssize_t n;
  while ((n = read(fds[0], buf + len, cap - 1 - len)) > 0) {
    len += (size_t)n;
    if (len == cap - 1) {
      cap *= 2;
      buf = realloc(buf, cap);
      CHECK(buf != NULL);
    }
  }
  buf[len] = 0;
  close(fds[0]);
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "child status %d, stderr:\n%s\n", st, buf);
    CHECK(0);
  }
  return buf;
}

#define NOTE "wspool: debug note: a sync took the slow path because of its order"
#define OVERFLOW "wspool: debug note: further sites are not reported (the first 10 were)"

/* Lines of `out` that start with `prefix` and contain `what` (NULL: any). */
static int count_lines(const char *out, const char *prefix, const char *what) {
  int count = 0;
  for (const char *line = out; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (strncmp(line, prefix, strlen(prefix)) == 0) {
      char *copy = strndup(line, len);
      CHECK(copy != NULL);
      if (!what || strstr(copy, what)) count++;
      free(copy);
    }
    line += len + (end ? 1 : 0);
  }
  return count;
}

static void case_once_per_site(void) {
  char *out = child_output(run_once_per_site);
  int ok = count_lines(out, NOTE, "(site_typed+") == 1 &&
           count_lines(out, NOTE, "(site_typed_rc+") == 1 &&
           count_lines(out, NOTE, "(site_plain+") == 1 &&
           count_lines(out, NOTE, "(site_in_order+") == 0 && count_lines(out, NOTE, NULL) == 3 &&
           count_lines(out, OVERFLOW, NULL) == 0;
  if (!ok) FAIL("notes, in the child's stderr:\n%s\n", out);
  printf("%s", out);
  free(out);
}

static void case_ten_sites(void) {
  char *out = child_output(run_ten_sites);
  int ok = count_lines(out, NOTE, NULL) == 10 && count_lines(out, OVERFLOW, NULL) == 1;
  for (int k = 0; k < 12; k++) {
    char name[32];
    snprintf(name, sizeof name, "(site_k%d+", k);
    ok = ok && count_lines(out, NOTE, name) == (k < 10 ? 1 : 0);
  }
  if (!ok) FAIL("notes, in the child's stderr:\n%s\n", out);
  printf("%s", out);
  free(out);
}

TEST_MAIN_WITH(WSPOOL_TEST_DEBUG_CHECKS ? NULL : "not a debug_checks build", NULL, 240,
               TEST_CASE(once_per_site), TEST_CASE(ten_sites))
