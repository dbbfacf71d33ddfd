/* SPDX-License-Identifier: MIT */
/* Jobs and the end of their pool (include/wspool.h, \ref jobs, "Outcome"
 * and "Where it runs"): ready jobs count as submitted tasks, so
 * pool_wait_idle() waits for them and pool_destroy() runs them; a job
 * released once its pool's destroy began completes with ESHUTDOWN; none is
 * lost and every wait returns.
 *
 *  late_release     jobs of a private pool P, each after a job of pool A
 *                   that main starts as P's destroy starts, once it began,
 *                   or once it returned; outside
 *                   threads wait for them from before the destroy (which
 *                   then waits for them) and after it returned. Released
 *                   racing the destroy: ran once with 0, or never with
 *                   ESHUTDOWN; once it began or returned: ESHUTDOWN, never
 *                   run. Every wait returns and gets that status.
 *  start_after_destroy  jobs of P started by main after P's destroy
 *                   returned (no pool created meanwhile, so the handle
 *                   stays safe): ESHUTDOWN, never run, and their
 *                   successors skipped with it; pool_job_submit: ESHUTDOWN.
 *  destroy_running  destroy while a chain and a random graph of P run:
 *                   everything runs once, status 0.
 *  wait_idle        pool_wait_idle() returns only once every started job
 *                   whose predecessors completed has completed: chains and
 *                   graphs started from main and from tasks.
 *  cross_pool_idle  a job of pool A with 10^5 successors in pool P (and in
 *                   half the rounds 10^5 more in A, released first): once
 *                   pool_job_wait() of it returned (or pool_job_status()
 *                   said complete), every successor is ready, so
 *                   pool_wait_idle(P) returns only after all of them
 *                   completed.
 *  cross_pool_destroy  the same, then pool_destroy(P): the predecessor
 *                   completed before the destroy began, so every successor
 *                   runs (0), none is skipped with ESHUTDOWN.
 *  recycled         a job of P after a job of A that runs until main has
 *                   destroyed P and created a pool Q (which takes P's
 *                   struct when nothing else was freed meanwhile): the job
 *                   completes with ESHUTDOWN, never run, not on Q.
 *  edge_blocks      P with allocator hooks, a job of P after three jobs of
 *                   A (its third edge needs an edge block) that run on
 *                   past P's destroy: after the destroy P's hooks hold
 *                   nothing and are never called again; the job completes
 *                   with ESHUTDOWN.
 *  foreign_wait_sleeps  an outside thread blocked in pool_job_wait() on a
 *                   job of P after a job of A that runs on until main lets
 *                   it end: P's destroy waits for that thread, asleep on
 *                   its gate (read in /proc: a futex wait on the word the
 *                   handle points to, design.md 10.1), not waking and
 *                   yielding in a loop; then the job completes with
 *                   ESHUTDOWN, the wait returns it, the destroy 0.
 * No timing assertions. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wspool.h>

#include "check.h"
#include "job_util.h"
#include "testutil.h"
#include "wspool_test_config.h"

static void nop(void *arg) { (void)arg; }

/* ---- late_release ---------------------------------------------------------------- */

/* Job k of P is after job k of A, which main starts in phase k % 3: as
 * destroy starts (racing it), once destroy began, once it returned. */
enum { LR_JOBS = 63, LR_EARLY_WAITERS = 4, LR_LATE_WAITERS = 4 };

typedef struct lr_job {
  pool_job_t pred; /* in pool A */
  pool_job_t job;  /* in pool P */
  atomic_uint runs;
} lr_job;

typedef struct lr_state {
  lr_job j[LR_JOBS];
  atomic_uint waiting;
  int early_rc[LR_EARLY_WAITERS][LR_JOBS];
  int late_rc[LR_LATE_WAITERS][LR_JOBS];
  pool_t *p;
  int destroy_rc;
  atomic_uint destroyed;
} lr_state;

static lr_state *lrs;

/* Starts the predecessors of phase `ph`. */
static void lr_phase(int ph) {
  for (int k = ph; k < LR_JOBS; k += 3) CHECK_OK(pool_job_start(&lrs->j[k].pred));
}
static void lr_job_fn(void *arg) { atomic_fetch_add(&lrs->j[(uintptr_t)arg].runs, 1); }

/* Waits inside P before its destroy begins (destroy then waits for it):
 * phase 1's jobs first (released once destroy began), then phase 0's;
 * phase 2's only once destroy returned (before, such a wait would keep
 * destroy from returning, and so their release). */
static void *lr_early(void *arg) {
  int w = (int)(uintptr_t)arg;
  atomic_fetch_add(&lrs->waiting, 1);
  for (int g = 1; g >= 0; g--)
    for (int k = g; k < LR_JOBS; k += 3) lrs->early_rc[w][k] = pool_job_wait(&lrs->j[k].job);
  CHECK(job_wait_until(&lrs->destroyed, 1));
  for (int k = 2; k < LR_JOBS; k += 3) lrs->early_rc[w][k] = pool_job_wait(&lrs->j[k].job);
  return NULL;
}

static void *lr_late(void *arg) {
  int w = (int)(uintptr_t)arg;
  for (int k = LR_JOBS; k-- > 0;) lrs->late_rc[w][k] = pool_job_wait(&lrs->j[k].job);
  return NULL;
}

static void *lr_destroy(void *arg) {
  (void)arg;
  lrs->destroy_rc = pool_destroy(lrs->p);
  atomic_store(&lrs->destroyed, 1);
  return NULL;
}

static void case_late_release(void) {
  unsigned long rounds = check_iters(20);
  pool_t *a = make_pool(2);
  unsigned raced_ran = 0;
  for (unsigned long r = 0; r < rounds; r++) {
    lrs = calloc(1, sizeof *lrs);
    CHECK(lrs);
    lrs->p = make_pool(r % 2 ? 2 : 1);
    for (uintptr_t k = 0; k < LR_JOBS; k++) {
      CHECK_OK(pool_job_init(&lrs->j[k].pred, a, nop, NULL));
      CHECK_OK(pool_job_init(&lrs->j[k].job, lrs->p, lr_job_fn, (void *)k));
      CHECK_OK(pool_job_after(&lrs->j[k].job, &lrs->j[k].pred));
      CHECK_OK(pool_job_start(&lrs->j[k].job));
    }
    pthread_t early[LR_EARLY_WAITERS], late[LR_LATE_WAITERS], destroyer;
    for (uintptr_t w = 0; w < LR_EARLY_WAITERS; w++)
      CHECK_OK(pthread_create(&early[w], NULL, lr_early, (void *)w));
    CHECK(job_wait_until(&lrs->waiting, LR_EARLY_WAITERS));
    lr_phase(0); /* racing the destroy */
    CHECK_OK(pthread_create(&destroyer, NULL, lr_destroy, NULL));
    double end = job_now() + 30.0 * (double)test_stress_factor();
    while (pool_submit(lrs->p, nop, NULL) != ESHUTDOWN) {
      if (job_now() > end) FAIL("pool_destroy never began\n");
      sched_yield();
    }
    lr_phase(1); /* destroy began */
    CHECK_OK(pthread_join(destroyer, NULL));
    CHECK_OK(lrs->destroy_rc);
    for (uintptr_t w = 0; w < LR_LATE_WAITERS; w++)
      CHECK_OK(pthread_create(&late[w], NULL, lr_late, (void *)w));
    lr_phase(2); /* destroy returned */
    for (int w = 0; w < LR_EARLY_WAITERS; w++) CHECK_OK(pthread_join(early[w], NULL));
    for (int w = 0; w < LR_LATE_WAITERS; w++) CHECK_OK(pthread_join(late[w], NULL));
    for (int k = 0; k < LR_JOBS; k++) {
      int st = pool_job_status(&lrs->j[k].job);
      unsigned n = atomic_load(&lrs->j[k].runs);
      CHECK_OK(pool_job_wait(&lrs->j[k].pred));
      if (st == 0 && k % 3 == 0) {
        CHECK_EQ(n, 1);
        raced_ran++;
      } else if (st == ESHUTDOWN) {
        CHECK_EQ(n, 0);
      } else {
        FAIL("job %d (released %s) of the destroyed pool completed with %d, ran %u times\n", k,
             k % 3 == 0   ? "racing the destroy"
             : k % 3 == 1 ? "once destroy began"
                          : "once destroy returned",
             st, n);
      }
      for (int w = 0; w < LR_EARLY_WAITERS; w++) CHECK_EQ(lrs->early_rc[w][k], st);
      for (int w = 0; w < LR_LATE_WAITERS; w++) CHECK_EQ(lrs->late_rc[w][k], st);
    }
    free(lrs);
  }
  printf("# late_release: %u jobs released racing the destroy ran\n", raced_ran);
  CHECK_OK(pool_destroy(a));
}

/* ---- start_after_destroy ------------------------------------------------------------ */

static atomic_uint sad_runs;
static void sad_fn(void *arg) {
  (void)arg;
  atomic_fetch_add(&sad_runs, 1);
}

typedef struct sad_submit {
  pool_t *p;
  pool_job_t *job;
  int rc;
  atomic_uint done;
} sad_submit;

static void *sad_submitter(void *arg) {
  sad_submit *s = arg;
  s->rc = pool_job_submit(s->p, s->job, sad_fn, NULL);
  atomic_store(&s->done, 1);
  return NULL;
}

static void case_start_after_destroy(void) {
  for (int r = 0; r < 20; r++) {
    atomic_store(&sad_runs, 0);
    pool_t *p = make_pool(r % 2 ? 2 : 1);
    pool_job_t alone, chain[5], sub, many;
    CHECK_OK(pool_job_init(&alone, p, sad_fn, NULL));
    for (int k = 0; k < 5; k++) {
      CHECK_OK(pool_job_init(&chain[k], p, sad_fn, NULL));
      if (k) CHECK_OK(pool_job_after(&chain[k], &chain[k - 1]));
    }
    for (int k = 1; k < 5; k++) CHECK_OK(pool_job_start(&chain[k]));
    /* 40 edges to the same job (edge blocks): given back when it is
     * skipped (LeakSanitizer checks, under ASan). */
    CHECK_OK(pool_job_init(&many, p, sad_fn, NULL));
    for (int k = 0; k < 40; k++) CHECK_OK(pool_job_after(&many, &chain[k % 5]));
    CHECK_OK(pool_job_start(&many));
    CHECK_OK(pool_destroy(p));
    /* Not refused: completed with ESHUTDOWN. */
    CHECK_OK(pool_job_start(&alone));
    CHECK_EQ(pool_job_wait(&alone), ESHUTDOWN);
    CHECK_OK(pool_job_start(&chain[0]));
    for (int k = 0; k < 5; k++) CHECK_EQ(pool_job_wait(&chain[k]), ESHUTDOWN);
    CHECK_EQ(pool_job_wait(&many), ESHUTDOWN);
    /* On a thread of its own, so that a call that never returns fails
     * the case (a liveness bound) instead of hanging it. */
    sad_submit s = {p, &sub, -1, 0};
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, sad_submitter, &s));
    if (!job_wait_until(&s.done, 1)) FAIL("pool_job_submit on a destroyed pool never returned\n");
    CHECK_OK(pthread_join(th, NULL));
    CHECK_EQ(s.rc, ESHUTDOWN);
    CHECK_EQ(pool_job_wait(&sub), ESHUTDOWN); /* nothing started: complete all the same */
    CHECK_EQ(atomic_load(&sad_runs), 0);
  }
}

/* ---- destroy while running -------------------------------------------------------------- */

static void case_destroy_running(void) {
  unsigned long rounds = check_iters(10);
  uint64_t seed = 0xde57;
  for (unsigned long r = 0; r < rounds; r++) {
    pool_t *p = make_pool(1 + (unsigned)(r % 3));
    size_t n = 20000;
    jdag *d = jdag_new(n);
    /* A chain in the first half, a random graph in the second. */
    for (size_t i = 1; i < n / 2; i++) jdag_edge(d, i - 1, i);
    for (size_t i = n / 2 + 1; i < n; i++) {
      unsigned k = (unsigned)(rng_next(&seed) % 4);
      for (unsigned e = 0; e < k; e++) {
        size_t span = i - n / 2 < 100 ? i - n / 2 : 100;
        jdag_edge(d, i - 1 - (size_t)(rng_next(&seed) % span), i);
      }
    }
    jdag_seal(d);
    for (size_t i = 0; i < n; i++) jdag_init(d, i, p);
    jdag_link(d);
    unsigned *o = jorder(n, (int)(r % 3), rng_next(&seed));
    jdag_start(d, o);
    free(o);
    CHECK_OK(pool_destroy(p));
    /* Everything ran before destroy returned. */
    for (size_t i = 0; i < n; i++) {
      int st = pool_job_status(&d->n[i].job);
      if (st != 0) FAIL("job %zu: status %d after its pool's destroy\n", i, st);
    }
    jdag_wait(d, rng_next(&seed));
    jdag_check(d, "destroy while running");
    jdag_free(d);
  }
}

/* ---- pool_wait_idle ---------------------------------------------------------------------- */

typedef struct wi_task {
  jdag *d;
  size_t lo, hi; /* starts nodes [lo, hi) */
} wi_task;

static void wi_starter(void *arg) {
  wi_task *t = arg;
  for (size_t i = t->hi; i-- > t->lo;) CHECK_OK(pool_job_start(&t->d->n[i].job));
}

static void wait_idle(pool_t *p) {
  unsigned long rounds = check_iters(20);
  uint64_t seed = 0x1d1e + pool_threads(p);
  for (unsigned long r = 0; r < rounds; r++) {
    size_t n = 5000;
    jdag *d = jdag_new(n);
    for (size_t i = 1; i < n; i++) {
      unsigned k = (unsigned)(rng_next(&seed) % 3);
      if (i % 500 == 0) k = 0;
      for (unsigned e = 0; e < k; e++) {
        size_t span = i < 30 ? i : 30;
        jdag_edge(d, i - 1 - (size_t)(rng_next(&seed) % span), i);
      }
    }
    jdag_seal(d);
    for (size_t i = 0; i < n; i++) {
      d->n[i].spin = (unsigned)(rng_next(&seed) % 100);
      jdag_init(d, i, p);
    }
    jdag_link(d);
    if (r % 2) {
      /* Started by tasks (onto their deques), two halves. */
      wi_task t[2] = {{d, 0, n / 2}, {d, n / 2, n}};
      CHECK_OK(pool_submit(p, wi_starter, &t[0]));
      CHECK_OK(pool_submit(p, wi_starter, &t[1]));
      CHECK_OK(pool_wait_idle(p));
    } else {
      unsigned *o = jorder(n, 2, rng_next(&seed));
      jdag_start(d, o);
      free(o);
      CHECK_OK(pool_wait_idle(p));
    }
    for (size_t i = 0; i < n; i++) {
      int st = pool_job_status(&d->n[i].job);
      if (st == EINPROGRESS) FAIL("round %lu: job %zu not complete after pool_wait_idle\n", r, i);
    }
    jdag_wait(d, rng_next(&seed));
    jdag_check(d, "pool_wait_idle");
    jdag_free(d);
  }
}

static void case_wait_idle(void) { ON_POOLS(wait_idle, 1, 2, 4); }

/* ---- a predecessor in another pool -------------------------------------------------------- */

enum { XP_SUCC = 100000, XP_PAD = 100000 };

typedef struct xp_state {
  pool_job_t pred;
  pool_job_t *succ; /* in P */
  pool_job_t *pad;  /* in A */
  size_t npad;
  atomic_uint *runs;
} xp_state;

static xp_state *xps;

static void xp_succ(void *arg) { atomic_fetch_add(&xps->runs[(uintptr_t)arg], 1); }

/* XP_SUCC jobs of P after one job of A, and (with `pad`) XP_PAD jobs of A
 * put after it later, which its completion releases first (its successors
 * are a stack). Returns once that job completed: waited for, or (`poll`)
 * seen complete by pool_job_status. */
static void xp_setup(pool_t *a, pool_t *p, int pad, int poll) {
  xps = calloc(1, sizeof *xps);
  CHECK(xps);
  xps->npad = pad ? XP_PAD : 0;
  xps->succ = malloc(XP_SUCC * sizeof(pool_job_t));
  xps->pad = malloc((xps->npad + 1) * sizeof(pool_job_t));
  xps->runs = calloc(XP_SUCC, sizeof(atomic_uint));
  CHECK(xps->succ && xps->pad && xps->runs);
  CHECK_OK(pool_job_init(&xps->pred, a, nop, NULL));
  for (uintptr_t i = 0; i < XP_SUCC; i++) {
    CHECK_OK(pool_job_init(&xps->succ[i], p, xp_succ, (void *)i));
    CHECK_OK(pool_job_after(&xps->succ[i], &xps->pred));
    CHECK_OK(pool_job_start(&xps->succ[i]));
  }
  for (size_t i = 0; i < xps->npad; i++) {
    CHECK_OK(pool_job_init(&xps->pad[i], a, nop, NULL));
    CHECK_OK(pool_job_after(&xps->pad[i], &xps->pred));
    CHECK_OK(pool_job_start(&xps->pad[i]));
  }
  CHECK_OK(pool_job_start(&xps->pred));
  if (poll) {
    while (pool_job_status(&xps->pred) == EINPROGRESS) {
    }
    CHECK_OK(pool_job_status(&xps->pred));
  } else {
    CHECK_OK(pool_job_wait(&xps->pred));
  }
  /* Complete: every successor is ready. */
}

static void xp_free(void) {
  for (size_t i = 0; i < xps->npad; i++) CHECK_OK(pool_job_wait(&xps->pad[i]));
  free(xps->succ);
  free(xps->pad);
  free((void *)xps->runs);
  free(xps);
}

static void case_cross_pool_idle(void) {
  unsigned long rounds = check_iters(4);
  pool_t *a = make_pool(1), *p = make_pool(2);
  for (unsigned long r = 0; r < rounds; r++) {
    xp_setup(a, p, (int)(r % 2), (int)(r / 2 % 2));
    CHECK_OK(pool_wait_idle(p));
    size_t pending = 0, first = XP_SUCC;
    for (size_t i = 0; i < XP_SUCC; i++)
      if (pool_job_status(&xps->succ[i]) == EINPROGRESS && pending++ == 0) first = i;
    for (size_t i = 0; i < XP_SUCC; i++) CHECK_OK(pool_job_wait(&xps->succ[i]));
    if (pending)
      FAIL("round %lu: pool_wait_idle returned with %zu of %d started jobs not complete (job "
           "%zu the first), whose only predecessor, in another pool, had completed "
           "(pool_job_wait or pool_job_status had said so)\n",
           r, pending, XP_SUCC, first);
    flags_check_once(xps->runs, XP_SUCC, "successor");
    xp_free();
  }
  CHECK_OK(pool_destroy(p));
  CHECK_OK(pool_destroy(a));
}

static void case_cross_pool_destroy(void) {
  unsigned long rounds = check_iters(4);
  pool_t *a = make_pool(1);
  for (unsigned long r = 0; r < rounds; r++) {
    pool_t *p = make_pool(2);
    xp_setup(a, p, (int)(r % 2), (int)(r / 2 % 2));
    CHECK_OK(pool_destroy(p));
    size_t shut = 0, first = XP_SUCC;
    for (size_t i = 0; i < XP_SUCC; i++) {
      int st = pool_job_wait(&xps->succ[i]);
      if (st == ESHUTDOWN) {
        if (shut++ == 0) first = i;
        CHECK_EQ(atomic_load(&xps->runs[i]), 0);
      } else {
        CHECK_OK(st);
        CHECK_EQ(atomic_load(&xps->runs[i]), 1);
      }
    }
    if (shut)
      FAIL("round %lu: %zu of %d jobs (job %zu the first) were skipped with ESHUTDOWN though "
           "their only predecessor had completed (pool_job_wait or pool_job_status had said "
           "so) before pool_destroy began\n",
           r, shut, XP_SUCC, first);
    xp_free();
  }
  CHECK_OK(pool_destroy(a));
}

/* ---- a destroyed pool's struct taken by a new pool ------------------------ */

static jgate held;
static atomic_uint held_runs;

static void held_pred(void *arg) {
  (void)arg;
  gate_pass(&held);
}

/* Must never run: its pool is destroyed before its predecessor completes. */
static void held_succ(void *arg) {
  (void)arg;
  atomic_fetch_add(&held_runs, 1);
}

static void case_recycled(void) {
  for (unsigned long r = 0; r < check_iters(4); r++) {
    pool_t *a = make_pool(1), *p = make_pool(1);
    memset(&held, 0, sizeof held);
    atomic_store(&held_runs, 0);
    pool_job_t pred, succ;
    CHECK_OK(pool_job_init(&pred, a, held_pred, NULL));
    CHECK_OK(pool_job_init(&succ, p, held_succ, NULL));
    CHECK_OK(pool_job_after(&succ, &pred));
    CHECK_OK(pool_job_start(&succ));
    CHECK_OK(pool_job_start(&pred));
    CHECK_OK(pool_destroy(p));
    pool_t *q = make_pool(1); /* P's struct, most often */
    gate_open(&held);
    CHECK_EQ(pool_job_wait(&succ), ESHUTDOWN);
    CHECK_OK(pool_job_wait(&pred));
    CHECK_OK(pool_wait_idle(q));
    CHECK_EQ(atomic_load(&held_runs), 0);
    CHECK_OK(pool_destroy(q));
    CHECK_OK(pool_destroy(a));
  }
}

/* ---- edge blocks outlive their pool, off its allocator ------------------- */

static atomic_long hook_live, hook_calls_after;
static atomic_int hook_closed;

static void *hook_alloc(void *ctx, size_t n) {
  (void)ctx;
  if (atomic_load(&hook_closed)) atomic_fetch_add(&hook_calls_after, 1);
  size_t *h = malloc(n + 16);
  if (!h) return NULL;
  h[0] = n;
  atomic_fetch_add(&hook_live, (long)n);
  return (char *)h + 16;
}

static void hook_free(void *ctx, void *m) {
  (void)ctx;
  if (atomic_load(&hook_closed)) atomic_fetch_add(&hook_calls_after, 1);
  size_t *h = (size_t *)(void *)((char *)m - 16);
  atomic_fetch_sub(&hook_live, (long)h[0]);
  free(h);
}

static void case_edge_blocks(void) {
  for (unsigned long r = 0; r < check_iters(4); r++) {
    pool_t *a = make_pool(2), *p = NULL;
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = 1;
    cfg.alloc_fn = hook_alloc;
    cfg.free_fn = hook_free;
    atomic_store(&hook_live, 0);
    atomic_store(&hook_calls_after, 0);
    atomic_store(&hook_closed, 0);
    CHECK_OK(pool_create(&p, &cfg));
    memset(&held, 0, sizeof held);
    atomic_store(&held_runs, 0);
    pool_job_t pred[3], succ;
    CHECK_OK(pool_job_init(&succ, p, held_succ, NULL));
    for (int i = 0; i < 3; i++) {
      CHECK_OK(pool_job_init(&pred[i], a, held_pred, NULL));
      CHECK_OK(pool_job_after(&succ, &pred[i]));
    }
    CHECK_OK(pool_job_start(&succ));
    for (int i = 0; i < 3; i++) CHECK_OK(pool_job_start(&pred[i]));
    CHECK_OK(pool_destroy(p));
    atomic_store(&hook_closed, 1);
    CHECK_EQ(atomic_load(&hook_live), 0);
    gate_open(&held);
    CHECK_EQ(pool_job_wait(&succ), ESHUTDOWN);
    for (int i = 0; i < 3; i++) CHECK_OK(pool_job_wait(&pred[i]));
    CHECK_OK(pool_wait_idle(a));
    CHECK_EQ(atomic_load(&hook_calls_after), 0);
    CHECK_EQ(atomic_load(&held_runs), 0);
    CHECK_OK(pool_destroy(a));
  }
}

/* ---- foreign_wait_sleeps ------------------------------------------------------------ */

typedef struct fws_state {
  pool_t *p;
  pool_job_t pred; /* in pool A: runs until `go` */
  pool_job_t job;  /* in P, after pred */
  atomic_uint go, tid_set, destroyed;
  atomic_long destroy_tid;
  int wait_rc, destroy_rc;
} fws_state;

static fws_state fws;

static void fws_pred(void *arg) {
  (void)arg;
  while (!atomic_load(&fws.go)) sleep_ms(1);
}

static void *fws_waiter(void *arg) {
  (void)arg;
  fws.wait_rc = pool_job_wait(&fws.job);
  return NULL;
}

static void *fws_destroyer(void *arg) {
  (void)arg;
  atomic_store(&fws.destroy_tid, (long)syscall(SYS_gettid));
  atomic_store(&fws.tid_set, 1);
  fws.destroy_rc = pool_destroy(fws.p);
  atomic_store(&fws.destroyed, 1);
  return NULL;
}

/* P's line of pool_dump_state() counts `waiters` blocked outside threads. */
static int fws_blocked(pool_t *p, unsigned waiters) {
  static char buf[1 << 16];
  dump_to(buf, sizeof buf);
  char head[64], want[64];
  snprintf(head, sizeof head, "wspool: pool %#lx ", (unsigned long)(uintptr_t)p);
  snprintf(want, sizeof want, "blocked outside threads %u ", waiters);
  const char *line = strstr(buf, head);
  if (!line) return 0;
  const char *end = strchr(line, '\n'), *at = strstr(line, want);
  return at && (!end || at < end);
}

/* 1: thread `tid` is blocked in FUTEX_WAIT_PRIVATE on `word`; 0: it is
 * not; -1: /proc does not say (no such file, or not readable here). */
static int fws_futex_waiting(long tid, const void *word) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char *got = fgets(line, sizeof line, f);
  fclose(f);
  if (!got) return -1;
  char *e;
  long nr = strtol(line, &e, 10);
  if (e == line) return 0; /* "running" */
  unsigned long long addr = strtoull(e, &e, 16), op = strtoull(e, &e, 16);
  return nr == SYS_futex && addr == (unsigned long long)(uintptr_t)word && op == 0x80;
}

static void case_foreign_wait_sleeps(void) {
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("/proc of an emulated process");
  if (!WSPOOL_TEST_FUTEX) TEST_SKIP("the portable futex fallback sleeps on condition variables");
  if (fws_futex_waiting((long)syscall(SYS_gettid), NULL) < 0)
    TEST_SKIP("no /proc/self/task/N/syscall here");
  memset(&fws, 0, sizeof fws);
  pool_t *a = make_pool(1);
  fws.p = make_pool(1);
  CHECK_OK(pool_job_init(&fws.pred, a, fws_pred, NULL));
  CHECK_OK(pool_job_init(&fws.job, fws.p, nop, NULL));
  CHECK_OK(pool_job_after(&fws.job, &fws.pred));
  CHECK_OK(pool_job_start(&fws.job));
  CHECK_OK(pool_job_start(&fws.pred));
  pthread_t waiter, destroyer;
  CHECK_OK(pthread_create(&waiter, NULL, fws_waiter, NULL));
  /* Blocked on P's event before the destroy begins: the destroy then
   * finds it there when it waits for the last outside call to leave. */
  double end = job_now() + 30.0 * (double)test_stress_factor();
  while (!fws_blocked(fws.p, 1)) {
    if (job_now() > end) FAIL("pool_job_wait never blocked\n");
    sleep_ms(1);
  }
  CHECK_OK(pthread_create(&destroyer, NULL, fws_destroyer, NULL));
  CHECK(job_wait_until(&fws.tid_set, 1));
  /* The gate is the first word of the pool's struct (design.md 10.1),
   * which the handle points to. Asleep on it: the destroy ran the drain
   * and joined the workers, and waits for the waiter to leave. */
  long tid = atomic_load(&fws.destroy_tid);
  end = job_now() + 30.0 * (double)test_stress_factor();
  int asleep;
  while ((asleep = fws_futex_waiting(tid, fws.p)) != 1) {
    CHECK(asleep == 0);
    CHECK(!atomic_load(&fws.destroyed));
    if (job_now() > end) FAIL("pool_destroy never slept on its gate (it spins)\n");
    sleep_ms(1);
  }
  CHECK(!atomic_load(&fws.destroyed));
  atomic_store(&fws.go, 1);
  CHECK_OK(pthread_join(destroyer, NULL));
  CHECK_OK(pthread_join(waiter, NULL));
  CHECK_OK(fws.destroy_rc);
  CHECK_EQ(fws.wait_rc, ESHUTDOWN);
  CHECK_EQ(pool_job_status(&fws.job), ESHUTDOWN);
  CHECK_OK(pool_job_wait(&fws.pred));
  CHECK_OK(pool_destroy(a));
}

TEST_MAIN(300, TEST_CASE(late_release), TEST_CASE(start_after_destroy), TEST_CASE(destroy_running),
          TEST_CASE(wait_idle), TEST_CASE(cross_pool_idle), TEST_CASE(cross_pool_destroy),
          TEST_CASE(recycled), TEST_CASE(edge_blocks), TEST_CASE(foreign_wait_sleeps))
