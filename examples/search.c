/* SPDX-License-Identifier: MIT */
/* search: find one item among n in parallel, and stop at the hit.
 *
 * The items are mix(0), mix(1), ..., mix(n - 1), computed as they are
 * looked at. mix() is a bijection on 64-bit integers (the splitmix64
 * finaliser), so no two items are equal: the key mix(where) occurs exactly
 * once, at index `where`, and the answer does not depend on the schedule.
 *
 * pool_parallel_for_try() hands subranges to the body; the body that finds
 * the key records its index and returns EEXIST. That cancels the loop:
 * subranges not yet started are skipped, running ones finish, and the call
 * returns EEXIST. So the loop looks at far fewer than n items when the key
 * is near the front; a key that is absent (mix(n)) makes it look at all of
 * them and return 0.
 *
 *   usage: search [n [workers [where]]]
 *     n        items, 1..10^12 (default 10^8)
 *     workers  0 = the default pool, one worker per CPU (default)
 *     where    the key's index, 0..n-1 (default n / 100: 1 % in)
 *
 * Exits 0 only if the parallel search finds the key where the sequential
 * search does, and both find nothing for the absent key.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <wspool.h>

#define NONE SIZE_MAX /* "not found" */

/* Item i: invertible, so mix(i) == mix(j) only when i == j. */
static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* The sequential baseline: the index of key in [lo, hi), or NONE. */
static size_t find(size_t lo, size_t hi, uint64_t key) {
  for (size_t i = lo; i < hi; i++)
    if (mix(i) == key) return i;
  return NONE;
}

typedef struct {
  uint64_t key;
  atomic_size_t found;    /* the hit's index, NONE until then */
  atomic_size_t examined; /* items the bodies looked at */
} search;

/* The loop body: scan [lo, hi); a non-zero return stops the loop. */
static int look(size_t lo, size_t hi, void *ctx) {
  search *s = ctx;
  size_t i = find(lo, hi, s->key);
  atomic_fetch_add_explicit(&s->examined, (i == NONE ? hi : i + 1) - lo, memory_order_relaxed);
  if (i == NONE) return 0;
  /* The key is unique, so at most one body gets here. With repeated keys
   * this CAS would keep whichever hit came first, not the lowest index: the
   * subranges before it may have been skipped. */
  size_t none = NONE;
  atomic_compare_exchange_strong(&s->found, &none, i);
  return EEXIST; /* found: the rest of the loop is not wanted */
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return EINVAL;
  *out = v;
  return 0;
}

/* One parallel search for key in [0, n): pool_parallel_for_try's code,
 * with the hit and the items examined in *s, the seconds in *secs. */
static int run(pool_t *pool, size_t n, uint64_t key, search *s, double *secs) {
  s->key = key;
  atomic_init(&s->found, NONE);
  atomic_init(&s->examined, 0);
  double t0 = now();
  int rc = pool_parallel_for_try(pool, 0, n, 0, look, s); /* grain 0: automatic */
  *secs = now() - t0;
  return rc;
}

int main(int argc, char **argv) {
  long n = 100000000, workers = 0, where = -1;
  if (argc > 4 || (argc > 1 && parse(argv[1], 1, 1000000000000L, &n)) ||
      (argc > 2 && parse(argv[2], 0, POOL_MAX_THREADS, &workers)) ||
      (argc > 3 && parse(argv[3], 0, n - 1, &where))) {
    fprintf(stderr, "usage: %s [n (1..10^12) [workers (0..%u, 0 = all CPUs) [where (0..n-1)]]]\n",
            argv[0], POOL_MAX_THREADS);
    return 1;
  }
  if (where < 0) where = n / 100;

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "search: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "search: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  size_t N = (size_t)n;
  uint64_t key = mix((uint64_t)where), absent = mix(N); /* index n is past the end */

  double t0 = now();
  size_t seq = find(0, N, key);
  double t_seq = now() - t0;
  t0 = now();
  size_t seq_absent = find(0, N, absent);
  double t_seq_absent = now() - t0;

  search hit, miss;
  double t_par, t_par_absent;
  int rc = run(pool, N, key, &hit, &t_par);
  int rc_absent = run(pool, N, absent, &miss, &t_par_absent);
  size_t found = atomic_load(&hit.found), examined = atomic_load(&hit.examined);

  int ok = rc == EEXIST && found == (size_t)where && seq == (size_t)where;
  int ok_absent = rc_absent == 0 && atomic_load(&miss.found) == NONE && seq_absent == NONE &&
                  atomic_load(&miss.examined) == N;
  printf("key %#018llx (item %ld of %ld) on %u workers:\n", (unsigned long long)key, where, n,
         pool_threads(pool));
  printf("  parallel:   returned %s, found at %zu after examining %zu items (%.2f%% of n), "
         "%.3f ms\n",
         rc == EEXIST ? "EEXIST" : pool_strerror(rc), found, examined,
         100.0 * (double)examined / (double)N, 1e3 * t_par);
  printf("  sequential: found at %zu after %zu items, %.3f ms; parallel/sequential %.2f: %s\n",
         seq, seq == NONE ? N : seq + 1, 1e3 * t_seq, t_par / t_seq, ok ? "ok" : "WRONG");
  printf("absent key: parallel returned %d after examining %zu items, %.3f ms; sequential "
         "%.3f ms (speedup %.2fx): %s\n",
         rc_absent, atomic_load(&miss.examined), 1e3 * t_par_absent, 1e3 * t_seq_absent,
         t_seq_absent / t_par_absent, ok_absent ? "ok" : "WRONG");

  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "search: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  return ok && ok_absent ? 0 : 1;
}
