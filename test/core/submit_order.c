/* SPDX-License-Identifier: MIT */
/* The order promise of pool_submit (wspool.h): on a pool of one worker,
 * the tasks one outside thread submits start in submission order.
 *
 * Cases:
 *  one_thread   one outside thread submits tasks with pool_submit and
 *               pool_submit_n (runs of 1..100), while the worker is busy
 *               (the first task of each round sleeps) and while it is
 *               idle (a pause between runs): every task starts exactly
 *               once, in submission order.
 *  two_threads  two outside threads submit at once: each thread's tasks
 *               start in its own order (the two interleave freely).
 *  many_workers on a pool of 3, every task still runs exactly once (no
 *               order is promised there; the test checks only the count).
 * Each task records its (thread, sequence number) in a log at the position
 * a shared counter gives it at start. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { MAX_THREADS = 2 };

static atomic_size_t pos;
static uintptr_t *log_; /* thread << 32 | sequence, in start order */
static size_t log_cap;

static void record(void *arg) {
  size_t at = atomic_fetch_add(&pos, 1);
  CHECK(at < log_cap);
  log_[at] = (uintptr_t)arg;
}

static void record_slow(void *arg) {
  struct timespec ts = {0, 2000000}; /* 2 ms: a backlog forms behind it */
  nanosleep(&ts, NULL);
  record(arg);
}

typedef struct producer {
  pool_t *pool;
  uintptr_t thread;
  size_t n;
  uint64_t seed;
} producer;

/* Submits sequence numbers 0..n-1, singly and in runs, as thread t. */
static void *produce(void *v) {
  producer *pr = v;
  void *args[100];
  size_t seq = 0;
  while (seq < pr->n) {
    size_t run = 1 + (size_t)(rng_next(&pr->seed) % 100);
    if (run > pr->n - seq) run = pr->n - seq;
    if (run == 1 || rng_next(&pr->seed) % 3 == 0) {
      for (size_t k = 0; k < run; k++, seq++) {
        pool_fn fn = seq == 0 ? record_slow : record;
        CHECK_OK(pool_submit(pr->pool, fn, (void *)(pr->thread << 32 | seq)));
      }
    } else {
      for (size_t k = 0; k < run; k++) args[k] = (void *)(pr->thread << 32 | (seq + k));
      CHECK_OK(pool_submit_n(pr->pool, record, args, run));
      seq += run;
    }
    if (rng_next(&pr->seed) % 8 == 0) sched_yield(); /* let the worker go idle */
  }
  return NULL;
}

/* Rounds of `threads` producers of n tasks each on a pool of `workers`;
 * `ordered`: check each thread's tasks started in its order. */
static void rounds(unsigned workers, unsigned threads, size_t n, bool ordered) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = workers;
  pool_t *p;
  CHECK_OK(pool_create(&p, &cfg));
  log_cap = n * threads;
  log_ = malloc(log_cap * sizeof(*log_));
  CHECK(log_);
  unsigned long reps = check_iters(20);
  for (unsigned long r = 0; r < reps; r++) {
    atomic_store(&pos, 0);
    producer pr[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (unsigned t = 0; t < threads; t++) {
      pr[t] = (producer){p, t, n, 0x9e3779b97f4a7c15ull * (r + 1) + t};
      CHECK_EQ(pthread_create(&th[t], NULL, produce, &pr[t]), 0);
    }
    for (unsigned t = 0; t < threads; t++) CHECK_EQ(pthread_join(th[t], NULL), 0);
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(atomic_load(&pos), log_cap);
    size_t next[MAX_THREADS] = {0};
    size_t seen[MAX_THREADS] = {0};
    for (size_t k = 0; k < log_cap; k++) {
      unsigned t = (unsigned)(log_[k] >> 32);
      size_t seq = (size_t)(log_[k] & 0xffffffffu);
      CHECK(t < threads && seq < n);
      if (ordered) {
        if (seq != next[t])
          fprintf(stderr, "round %lu: thread %u's task %zu started where %zu was due\n", r, t, seq,
                  next[t]);
        CHECK_EQ(seq, next[t]);
        next[t]++;
      }
      seen[t]++;
    }
    for (unsigned t = 0; t < threads; t++) CHECK_EQ(seen[t], n);
    if (!ordered) {
      /* Each sequence number once: sort-free, by marking. */
      unsigned char *mark = calloc(log_cap, 1);
      CHECK(mark);
      for (size_t k = 0; k < log_cap; k++) {
        size_t id = (size_t)(log_[k] >> 32) * n + (size_t)(log_[k] & 0xffffffffu);
        CHECK_EQ(mark[id], 0);
        mark[id] = 1;
      }
      free(mark);
    }
  }
  free(log_);
  CHECK_OK(pool_destroy(p));
}

static void case_one_thread(void) { rounds(1, 1, 5000, true); }
static void case_two_threads(void) { rounds(1, 2, 5000, true); }
static void case_many_workers(void) { rounds(3, 2, 5000, false); }

TEST_MAIN(240, TEST_CASE(one_thread), TEST_CASE(two_threads), TEST_CASE(many_workers))
