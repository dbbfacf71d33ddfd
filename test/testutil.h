/* SPDX-License-Identifier: MIT */
/* Helpers shared by the C tests: pools, exactly-once flag arrays, a seeded
 * generator, fib, waiting until every worker sleeps, capturing stderr, and
 * fields of /proc/self/status, forked children's ends, an atomic maximum. */
#ifndef WSPOOL_TEST_TESTUTIL_H
#define WSPOOL_TEST_TESTUTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"

/* A pool of `threads` workers (> 0), the rest of its configuration as
 * pool_config_default() gives it. */
static inline pool_t *make_pool(unsigned threads) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = threads;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  CHECK(p != NULL);
  CHECK_EQ(pool_threads(p), threads);
  return p;
}

/* A worker start hook that does nothing: with it, pool_create() returns
 * once every worker has started (wspool.h, \ref hooks), so that no thread
 * start falls inside what a test counts afterwards. */
static inline void start_hook_nothing(pool_t *p, unsigned worker, void *ctx) {
  (void)p;
  (void)worker;
  (void)ctx;
}

/* A pool of `workers` whose outside submissions wait while `bound` of
 * theirs wait to start (pool_config_t::max_queued). */
static inline pool_t *bounded_pool(unsigned workers, size_t bound) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = workers;
  cfg.max_queued = bound;
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  return p;
}

/* fn(pool) on a fresh pool of each size listed: ON_POOLS(fn, 1, 2, 4). */
#define ON_POOLS(fn, ...)                                                 \
  do {                                                                    \
    static const unsigned on_pools_sizes_[] = {__VA_ARGS__};              \
    on_pools_(on_pools_sizes_, sizeof on_pools_sizes_ / sizeof(unsigned), \
              (fn));                                                      \
  } while (0)

static inline void on_pools_(const unsigned *sizes, size_t n, void (*fn)(pool_t *)) {
  for (size_t i = 0; i < n; i++) {
    pool_t *pool = make_pool(sizes[i]);
    fn(pool);
    CHECK_OK(pool_destroy(pool));
  }
}

/* ---- flags: one counter per task, each must end at exactly 1 ---------- */

/* n zeroed counters, one per task. */
static inline atomic_uint *flags_alloc(size_t n) {
  atomic_uint *f = calloc(n ? n : 1, sizeof(atomic_uint));
  CHECK(f);
  return f;
}

/* Replaces *flags (of *nflags counters) by n zeroed ones. */
static inline void flags_reset(atomic_uint **flags, size_t *nflags, size_t n) {
  free((void *)*flags);
  *flags = flags_alloc(n);
  *nflags = n;
}

/* Every one of the n tasks counted exactly once. */
static inline void flags_check_once(atomic_uint *f, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    unsigned v = atomic_load(&f[i]);
    if (v != 1) {
      fprintf(stderr, "%s %zu ran %u times\n", what, i, v);
      CHECK_EQ(v, 1);
    }
  }
}

/* ---- a seeded generator ------------------------------------------------ */

/* xorshift64: the same sequence for the same nonzero seed, so what a test
 * does is fixed even where the schedule is not. */
static inline uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *s = x;
  return x;
}

/* Fisher-Yates shuffle of v[0..n) driven by rng_next(seed). */
static inline void shuffle(unsigned *v, unsigned n, uint64_t *seed) {
  for (unsigned i = n; i > 1; i--) {
    unsigned j = (unsigned)(rng_next(seed) % i);
    unsigned t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

/* ---- fib ------------------------------------------------------------------ */

static inline long fib_seq(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; i++) {
    long t = a + b;
    a = b;
    b = t;
  }
  return a;
}

typedef struct fib_arg {
  int n;
  long r;
} fib_arg;

/* fib(n) by fork/join: spawns n-1, computes n-2 itself, syncs. */
static inline void fib_task(void *p) {
  fib_arg *f = (fib_arg *)p;
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fib_arg x = {f->n - 1, 0}, y = {f->n - 2, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, fib_task, &x));
  fib_task(&y);
  CHECK_OK(pool_sync(&t));
  f->r = x.r + y.r;
}

/* ---- reducers: the sum of the indices, the count of items ------------- */

static inline void sum_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  uint64_t *s = (uint64_t *)acc;
  for (size_t i = b; i < e; i++) *s += i;
}
static inline void sum_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  *(uint64_t *)into += *(const uint64_t *)from;
}

static inline void len_body(size_t b, size_t e, void *acc, void *ctx) {
  (void)ctx;
  *(long *)acc += (long)(e - b);
}
static inline void len_combine(void *into, const void *from, void *ctx) {
  (void)ctx;
  *(long *)into += *(const long *)from;
}

/* ---- time and sleepers ---------------------------------------------------- */

static inline void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Let every worker pass its spin phase and go to sleep: wait 30 ms, then
 * until each worker has slept at least once and its counters stand still
 * over 2 ms (a spinning worker keeps counting failed steals). This only
 * arranges the situation; nothing is asserted on timing. */
static inline void wait_all_asleep(pool_t *p) {
  unsigned n = pool_threads(p);
  sleep_ms(30);
  for (unsigned w = 0; w < n; w++) {
    for (;;) {
      pool_worker_stats_t a, b;
      CHECK_OK(pool_worker_stats(p, w, &a));
      sleep_ms(2);
      CHECK_OK(pool_worker_stats(p, w, &b));
      if (b.sleeps > 0 && !memcmp(&a, &b, sizeof a)) break;
    }
  }
}

/* ---- the process ---------------------------------------------------------- */

/* pool_dump_state()'s report, through a pipe, into buf (NUL-terminated;
 * cut at size - 1 bytes). */
static inline void dump_to(char *buf, size_t size) {
  int fds[2];
  CHECK_OK(pipe(fds));
  CHECK_OK(pool_dump_state(fds[1]));
  close(fds[1]);
  size_t n = 0;
  ssize_t k;
  while (n < size - 1 && (k = read(fds[0], buf + n, size - 1 - n)) > 0) n += (size_t)k;
  close(fds[0]);
  buf[n] = 0;
}

/* Runs fn(arg) with file descriptor 2 on a temporary file, and puts what
 * was written there in buf (NUL-terminated, cut to size - 1). */
static inline void capture_stderr(char *buf, size_t size, void (*fn)(void *), void *arg) {
  char path[] = "/tmp/wspool-stderr-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0);
  CHECK(dup2(fd, 2) == 2);
  fn(arg);
  fflush(stderr);
  CHECK(dup2(saved, 2) == 2);
  close(saved);
  memset(buf, 0, size);
  CHECK(pread(fd, buf, size - 1, 0) >= 0);
  close(fd);
}

/* A field of /proc/self/status, in its own units (kB for Vm*). */
static inline long proc_status_field(const char *name) {
  FILE *f = fopen("/proc/self/status", "r");
  CHECK(f != NULL);
  char line[256];
  long v = -1;
  size_t len = strlen(name);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, name, len) && line[len] == ':') {
      v = strtol(line + len + 1, NULL, 10);
      break;
    }
  fclose(f);
  CHECK(v >= 0);
  return v;
}

/* *m = max(*m, v), atomically. */
static inline void atomic_max_u(atomic_uint *m, unsigned v) {
  unsigned cur = atomic_load(m);
  while (v > cur && !atomic_compare_exchange_weak(m, &cur, v)) {
  }
}

/* Waits for the forked child `pid` and returns its exit code; a child
 * that did not exit (a signal) fails the case, `who` naming it in the
 * report. */
static inline int child_exit(pid_t pid, const char *who) {
  int st;
  pid_t r;
  while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
  }
  CHECK_EQ(r, pid);
  if (!WIFEXITED(st)) FAIL("%s: signal %d\n", who, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  return WEXITSTATUS(st);
}

/* Fails the case unless the forked child `pid` exits with 0. */
static inline void child_ok(pid_t pid, const char *who) {
  int code = child_exit(pid, who);
  if (code != 0) FAIL("%s: exit %d\n", who, code);
}

#endif
