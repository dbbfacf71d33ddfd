/* SPDX-License-Identifier: MIT */
/* The submit wrapper (scheduler.h; docs/design.md 9): pool_submit tasks
 * in submit batches on a worker's deque, their completion accounting, the
 * calling thread's lane and the pushes of outside submissions onto the
 * global queue. */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "split.h"

/* Completion accounting (docs/design.md 9). A pool_submit task
 * is counted submitted exactly once, before anyone can run it: in the
 * global queue's fns_pushed (under its lock) or in its worker's `submitted`
 * (owner only); and finished once, after it ran, in the `finished` of the
 * worker that ran it. No counter is shared by the producers and the
 * workers, so a task writes no contended line for its accounting.
 *
 * The pool is idle when the counts agree, read in this order: every
 * `finished` first, then every submitted count. Each finish we
 * read happens after its task's submission count (that store precedes the
 * push that let the task run, and the finish is a release we acquired), so
 * the finishes read are a subset of the submissions read; equal totals
 * mean every submission read has finished, including everything those
 * tasks submitted (counted before they finished). A submission made
 * before the waiter called is in what it reads. */
bool ws_submits_idle(struct pool *p) {
  /* seq_cst loads (a plain load on x86, ldar on arm64): acquire for the
   * argument above, and, for a waiter registered on the pool's event, the
   * other half of the fence a worker executes before it reads the waiter
   * count (nothing_found in worker.c): either it sees the waiter or these
   * loads see its `finished`. */
  /* Stand-ins (design.md 5.9) run and submit tasks too; one started after
   * this read counts only submissions we may read next (not idle: safe). */
  uint64_t finished = WS_THREADS_SUM(p, finished, ws_seq_cst);
  /* Reservations (ws_reserve): the end on the finished side, read first. */
  finished += ws_u64_load(&p->resv_done, ws_seq_cst);
  uint64_t submitted = ws_u64_load(&p->resv, ws_relaxed);
  for (unsigned l = 0; l < WS_LANES; l++) submitted += ws_u64_load(&p->gq[l].fns_pushed, ws_relaxed);
  submitted += WS_THREADS_SUM(p, submitted, ws_relaxed);
  return submitted == finished;
}

/* A submission counted by w that did not happen after all: the count goes
 * back, and a waiter that saw it is told when w next runs out of work. */
static void uncount_submitted(ws_worker *w, int64_t n) {
  ws_submit_count(w, -n);
  w->announce_idle = true;
}

void ws_submit_run_direct(ws_worker *w, pool_fn fn, void *arg, ws_u64 *taken, bool bounded) {
  /* In no unit (cancel.h), as when a batch carries it; the caller may be
   * a waiter inside one. */
  ws_scope s;
  ws_scope_enter(&s, NULL);
  ws_submit_started(w, bounded);
  ws_prof_run_task(w, fn, arg);
  ws_scope_pop(&s);
  ws_submit_finished(w);
  ws_counter_add(taken, 1);
  ws_counter_add(&w->stats.tasks, 1);
}

/* Submit batches (docs/design.md 9.1, where the arguments are).
 * pool_submit from a worker appends (fn, arg) to the worker's open batch,
 * one task on its deque of up to WS_BATCH_CAP entries.
 *
 * `state` is the number of entries the maker has published, or
 * BATCH_CLOSED once a runner took the batch: the maker writes entry i, then
 * CASes state from i to i + 1 (release; a failed CAS found it closed, and
 * the entry goes into a new batch); whoever takes the batch off a deque
 * first closes it with an exchange (acquire) that returns its count.
 *
 * The runner runs entry 0, then claims the others one at a time while the
 * batch's second header, its steal handle, sits on its deque; whoever takes
 * the handle takes everything not yet claimed, as a batch of its own. A
 * claim is Cilk's THE protocol (Frigo, Leiserson, Randall, PLDI 1998) with
 * the asymmetric barrier (fence.h) in place of the runner's fence:
 *     runner, entry i:  next = i + 1; light fence; i < claim_end? run it
 *     taker:            n0 = next; claim_end = n0; heavy fence; n1 = next;
 *                       final = n1 + 1; takes [n1, end)
 * On the runner's own thread the taker needs no fence.
 *
 * Lifetime: up to three references (the maker's while the batch is open,
 * the runner's until its last claim, the handle's while on a deque); the
 * last drop frees it. The runner sets the claim words, `end` and `runner`
 * before the release push of the handle, which the taker acquired. */
#define BATCH_CLOSED 0x80000000u

typedef struct submit_batch {
  ws_task hdr;    /* taken once: closes the batch and runs it */
  ws_task handle; /* on the runner's deque while it runs: takes the rest */
  ws_u32 state;   /* entries published, or BATCH_CLOSED */
  ws_u32 refs;
  ws_u32 next;       /* the runner's: 1 + the last entry it claimed */
  ws_u32 claim_end;  /* the taker's: entries from here on may be its */
  ws_u32 final;      /* the taker's: 1 + the first entry it took; 0 before */
  uint32_t end;      /* entries in all, from the close */
  bool bounded;      /* outside entries of a bounded pool (their count) */
  ws_worker *runner; /* whose deque the handle is on */
  struct {
    pool_fn fn;
    void *arg;
  } e[WS_BATCH_CAP];
} submit_batch;

/* Drops a reference; w is any worker of the batch's pool, whose allocator
 * takes the batch back. */
static void batch_release(submit_batch *b, ws_worker *w) {
  /* acq_rel: the last one out sees the others' accesses before it frees. */
  if (ws_u32_fetch_add(&b->refs, (uint32_t)-1, ws_acq_rel) == 1)
    ws_mem_free(&w->pool->mem, b, sizeof(*b));
}

static submit_batch *batch_new(ws_worker *w, uint32_t n, uint32_t refs);

static inline void run_entry(ws_worker *w, const submit_batch *b, uint32_t i) {
  pool_fn fn = b->e[i].fn;
  void *arg = b->e[i].arg;
  ws_submit_started(w, b->bounded);
  uint64_t t0 = ws_trace_t0(w);
  ws_prof_run_task(w, fn, arg);
  ws_trace_task(w, (ws_fnptr)fn, t0);
  ws_submit_finished(w);
}

/* The runner's claim of entry i >= 1, after the previous one ran. */
static bool claim(submit_batch *b, uint32_t i) {
  /* Relaxed store and load, ordered by the light fence between them
   * against the taker's heavy fence (above). */
  ws_u32_store(&b->next, i + 1, ws_relaxed);
  ws_light_fence();
  if (i < ws_u32_load(&b->claim_end, ws_relaxed)) return true;
  /* The handle's taker is deciding: wait for it (a few microseconds: one
   * membarrier). Acquire: nothing needed beyond its value, which is exact. */
  uint32_t f;
  for (unsigned spin = 0; (f = ws_u32_load(&b->final, ws_acquire)) == 0; spin++) {
    if (spin < 64)
      ws_cpu_relax();
    else
      sched_yield(); /* the taker was preempted in between */
  }
  return i < f - 1;
}

/* Runs entries [i, end) of b here, in order, where no deque can carry
 * them: entry i as the task already counted taken, the others as if popped
 * from the deque. */
static void run_rest_direct(ws_worker *w, const submit_batch *b, uint32_t i, uint32_t end) {
  run_entry(w, b, i);
  while (++i < end) ws_submit_run_direct(w, b->e[i].fn, b->e[i].arg, &w->stats.local_pops, b->bounded);
}

/* Runs the closed batch b, whose entries [0, end) are all ours, on worker w
 * (one task already counted taken and run: entry 0); consumes a reference. */
static void batch_run(submit_batch *b, ws_worker *w) {
  const uint32_t end = b->end;
  if (end >= 2) {
    /* Relaxed: the push of the handle is a release, and no one else can
     * reach these before it. */
    ws_u32_store(&b->next, 1, ws_relaxed);
    ws_u32_store(&b->claim_end, end, ws_relaxed);
    ws_u32_store(&b->final, 0, ws_relaxed);
    b->runner = w;
    ws_u32_fetch_add(&b->refs, 1, ws_relaxed); /* the handle's; we hold one */
    if (ws_push(w, &b->handle) != 0) {
      /* The deque cannot grow: run them all here, in order. */
      ws_u32_fetch_add(&b->refs, (uint32_t)-1, ws_relaxed);
      run_rest_direct(w, b, 0, end);
      batch_release(b, w);
      return;
    }
  }
  run_entry(w, b, 0);
  /* A worker beyond a shrunk size, or a surplus stand-in, stops after the
   * task it ran: the handle on its deque hands the unclaimed rest to
   * another worker. */
  for (uint32_t i = 1; i < end && !ws_stepping_down(w) && claim(b, i); i++) {
    /* Taken from the batch in hand: as if popped from the deque. */
    ws_counter_add(&w->stats.local_pops, 1);
    pool__tls.tasks++; /* joins w->stats.tasks in ws_run() */
    run_entry(w, b, i);
  }
  batch_release(b, w);
}

static void batch_exec(ws_task *t, ws_worker *w) {
  submit_batch *b = (submit_batch *)t;
  /* Acquire: pairs with the maker's release CAS; entries [0, end) are
   * written. */
  b->end = ws_u32_xchg(&b->state, BATCH_CLOSED, ws_acquire);
  WS_ASSERT(b->end >= 1 && b->end <= WS_BATCH_CAP);
  batch_run(b, w);
}

/* The handle's taker: the entries from the runner's next claim on are
 * ours. */
static uint32_t take_rest(submit_batch *b, ws_worker *w) {
  uint32_t i = ws_u32_load(&b->next, ws_relaxed);
  if (i >= b->end) return i; /* all claimed: no fence needed */
  ws_u32_store(&b->claim_end, i, ws_relaxed);
  if (b->runner != w) {
    /* Another thread's runner may be claiming: the heavy half of the
     * pair, then its claims so far. */
    ws_heavy_fence();
    i = ws_u32_load(&b->next, ws_relaxed);
  }
  /* Release: a plain value; the runner needs nothing else from us. */
  ws_u32_store(&b->final, i + 1, ws_release);
  return i;
}

static void handle_exec(ws_task *t, ws_worker *w) {
  submit_batch *b = (submit_batch *)(void *)((char *)t - offsetof(submit_batch, handle));
  const uint32_t end = b->end;
  uint32_t i = take_rest(b, w);
  if (i >= end) {
    /* Its runner claimed the last entry first: nothing ran here. */
    ws_uncount_take(w, b->runner);
    pool__tls.tasks--; /* ws_run() counts this exec as a task run */
    batch_release(b, w);
    return;
  }
  /* Entries [i, end) are ours: a batch of our own, which leaves them
   * stealable while we run them. */
  submit_batch *nb = batch_new(w, end - i, 1);
  if (!nb) {
    run_rest_direct(w, b, i, end);
    batch_release(b, w);
    return;
  }
  memcpy(nb->e, b->e + i, (end - i) * sizeof(b->e[0]));
  nb->bounded = b->bounded;
  batch_release(b, w);
  ws_u32_store(&nb->state, BATCH_CLOSED, ws_relaxed);
  nb->end = end - i;
  batch_run(nb, w);
}

/* A batch of n entries from w's pool, for the caller to fill in before
 * anyone can reach it; refs: 2 when it becomes the maker's open batch,
 * else 1. */
static submit_batch *batch_new(ws_worker *w, uint32_t n, uint32_t refs) {
  submit_batch *b = ws_mem_alloc(&w->pool->mem, sizeof(*b));
  if (!b) return NULL;
  b->hdr.exec = batch_exec;
  b->handle.exec = handle_exec;
  /* Relaxed: the push that makes it reachable is a release. */
  ws_u32_store(&b->state, n, ws_relaxed);
  ws_u32_store(&b->refs, refs, ws_relaxed);
  ws_u32_store(&b->next, 0, ws_relaxed);
  ws_u32_store(&b->claim_end, 0, ws_relaxed);
  ws_u32_store(&b->final, 0, ws_relaxed);
  b->end = 0;
  b->bounded = false;
  b->runner = NULL;
  return b;
}

/* A batch of n entries fn(args[i]) (fn(NULL) when args is NULL). */
static submit_batch *batch_of_fn(ws_worker *w, pool_fn fn, void *const *args, uint32_t n, uint32_t refs) {
  submit_batch *b = batch_new(w, n, refs);
  if (!b) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    b->e[i].fn = fn;
    b->e[i].arg = args ? args[i] : NULL;
  }
  return b;
}

ws_task *ws_submit_batch_of(ws_worker *w, const ws_gitem *it, size_t n) {
  WS_ASSERT(n >= 1 && n <= WS_BATCH_CAP);
  submit_batch *b = batch_new(w, (uint32_t)n, 1);
  if (!b) return NULL;
  b->bounded = w->pool->cfg.max_queued != 0; /* outside entries: counted */
  for (size_t i = 0; i < n; i++) {
    WS_ASSERT(it[i].fn);
    b->e[i].fn = it[i].fn;
    b->e[i].arg = it[i].arg;
  }
  return &b->hdr;
}

void ws_submit_drop_open(ws_worker *w) {
  submit_batch *b = w->open_batch;
  if (!b) return;
  w->open_batch = NULL;
  batch_release(b, w);
}

/* Inside an isolated computation (design.md 7.5) a submission goes to
 * the global queue, where isolated waits do not look (nothing waits for
 * it there); once destroy closed it, onto the deque after all. 1 for
 * "not taken". A worker never waits for room (WS_ADMIT_FORCE). */
static int submit_isolated(ws_worker *w, pool_fn fn, void *const *args, size_t n) {
  int rc = ws_submit_outside(w->pool, fn, args, n, WS_ADMIT_FORCE);
  return rc == ESHUTDOWN ? 1 : rc;
}

/* From a worker of the pool: append to its open batch, or start a new one.
 * Counted before the entry is published, so no waiter sees it finish first
 * (the CAS is a release, after the count). */
int ws_submit_one_inside(ws_worker *w, pool_fn fn, void *arg) {
  int rc;
  if (__builtin_expect(ws_isolation() != NULL, 0) && (rc = submit_isolated(w, fn, &arg, 1)) != 1)
    return rc;
  ws_submit_count(w, 1);
  submit_batch *b = w->open_batch;
  if (b) {
    uint32_t i = w->open_n;
    b->e[i].fn = fn;
    b->e[i].arg = arg;
    if (ws_u32_cas(&b->state, &i, i + 1, ws_release)) {
      if (++w->open_n == WS_BATCH_CAP) ws_submit_drop_open(w);
      return 0;
    }
    /* Closed: its runner has what it holds; this entry starts a new one. */
    ws_submit_drop_open(w);
  }
  b = batch_of_fn(w, fn, &arg, 1, 2);
  if (!b || ws_push(w, &b->hdr) != 0) {
    if (b) ws_mem_free(&w->pool->mem, b, sizeof(*b));
    uncount_submitted(w, 1);
    return ENOMEM;
  }
  w->open_batch = b;
  w->open_n = 1;
  return 0;
}

/* From a worker of the pool: n tasks onto its own deque in closed batches
 * of up to WS_BATCH_CAP, all or none. The batches come first, then the deque
 * makes room for all of them and for the private frames ws_push_n
 * publishes ahead of them, so the pushes themselves cannot fail. */
int ws_submit_inside(ws_worker *w, pool_fn fn, void *const *args, size_t n) {
  enum { CHUNK = 64 };
  if (n == 1) return ws_submit_one_inside(w, fn, args ? args[0] : NULL);
  /* Each task's argument takes a word of a batch: more than half the
   * address space of them can never fit (and a request that size would
   * stop a sanitizer's allocator instead of failing). */
  if (n > SIZE_MAX / 2 / sizeof(void *)) return ENOMEM;
  int rc;
  if (ws_isolation() && (rc = submit_isolated(w, fn, args, n)) != 1) return rc;
  size_t nb = (n + WS_BATCH_CAP - 1) / WS_BATCH_CAP;
  ws_task *one[CHUNK];
  ws_task **bs = nb <= CHUNK ? one : ws_mem_alloc(&w->pool->mem, nb * sizeof(*bs));
  if (!bs) return ENOMEM;
  size_t made = 0;
  for (; made < nb; made++) {
    size_t lo = made * WS_BATCH_CAP, k = n - lo < WS_BATCH_CAP ? n - lo : WS_BATCH_CAP;
    submit_batch *b = batch_of_fn(w, fn, args ? args + lo : NULL, (uint32_t)k, 1);
    if (!b) break;
    bs[made] = &b->hdr;
  }
  size_t priv = (size_t)(ws_top() - w->priv_lo);
  rc = made < nb ? ENOMEM : ws_deque_reserve(&w->dq, (int64_t)(nb + priv));
  if (rc == 0) {
    ws_submit_count(w, (int64_t)n);
    rc = ws_push_n(w, bs, nb);
    WS_ASSERT(rc == 0); /* room was reserved, private frames included */
  } else {
    for (size_t i = 0; i < made; i++) ws_mem_free(&w->pool->mem, bs[i], sizeof(submit_batch));
  }
  if (bs != one) ws_mem_free(&w->pool->mem, bs, nb * sizeof(*bs));
  return rc;
}

__thread unsigned ws__lane __attribute__((tls_model("initial-exec")));

unsigned ws_lane_assign(void) {
  static ws_u32 next;
  /* Relaxed: any spread will do; consecutive threads get different lanes. */
  unsigned l = ws_u32_fetch_add(&next, 1, ws_relaxed) % WS_LANES;
  ws__lane = l + 1;
  return l;
}

/* Bounded submission (docs/design.md 9.3). `bq_queued` counts the outside
 * tasks admitted and not yet reported started; a producer admits n by a
 * CAS that keeps it at most max_queued, so the tasks waiting to start are
 * never more (a report only ever comes after its tasks started). Each
 * worker reports its starts (ws_submit_started) in credits of at most
 * max_queued / (2 x workers), one RMW of the shared line per credit, and
 * whenever it finds no work; stand-ins report each start. So the count
 * exceeds the tasks really waiting by less than half the bound, and a
 * producer waits only while at least half the bound waits: the workers
 * have work and will report. No bound: none of this runs. */
static void bound_return(struct pool *p, uint64_t n) {
  /* seq_cst, then the event's fence and load: as in ws_bound_flush. */
  ws_u64_fetch_add(&p->bq_queued, (uint64_t)0 - n, ws_seq_cst);
  ws_event_notify(&p->room);
}

void ws_bound_flush(ws_worker *w) {
  struct pool *p = w->pool;
  uint64_t c = w->bound_credit;
  w->bound_credit = 0;
  /* Dekker's pattern with a producer about to block (bound_wait): our
   * seq_cst RMW of the count, then the event's seq_cst fence and load of
   * its waiter count; its seq_cst registration, then its load of the
   * count. It sees the room, or we see it registered and wake it. */
  bound_return(p, c);
}

/* Blocks until n more fit or the pool closes: 0 or ESHUTDOWN. */
static int bound_wait(struct pool *p, uint64_t n) {
  const uint64_t max = p->cfg.max_queued;
  /* A few yields first: the workers report every few tasks, and a
   * producer that keeps up with them should not pay a futex round trip. */
  for (unsigned r = 0; r < 16; r++) {
    sched_yield();
    if (ws_u64_load(&p->bq_queued, ws_relaxed) + n <= max) return 0;
  }
  int rc = 0;
  ws_event_prepare(&p->room);
  for (;;) {
    uint32_t e = ws_event_epoch(&p->room);
    /* seq_cst: destroy closes the gate, then notifies `room` (its fence),
     * and the flushes pair as bound_flush says. */
    if (ws_u32_load(&p->gate, ws_seq_cst) & WS_GATE_CLOSED) {
      rc = ESHUTDOWN;
      break;
    }
    if (ws_u64_load(&p->bq_queued, ws_seq_cst) + n <= max) break;
    ws_event_wait(&p->room, e);
  }
  ws_event_finish(&p->room);
  return rc;
}

/* Counts n outside tasks in the bound: 0, or EAGAIN (TRY: full), E2BIG
 * (more than the bound), ESHUTDOWN (WAIT: the pool closed meanwhile). */
static int bound_admit(struct pool *p, uint64_t n, ws_admit mode) {
  const uint64_t max = p->cfg.max_queued;
  if (mode == WS_ADMIT_FORCE) {
    /* A worker's isolated submission: counted, never waits. Relaxed: the
     * push that follows publishes the tasks; the count orders nothing. */
    ws_u64_fetch_add(&p->bq_queued, n, ws_relaxed);
    return 0;
  }
  if (n > max) return E2BIG;
  uint64_t q = ws_u64_load(&p->bq_queued, ws_relaxed);
  for (;;) {
    /* Relaxed, as above; a stale q fails the CAS or waits a round. */
    if (q <= max && n <= max - q) { /* q + n <= max, without a wrap */
      if (ws_u64_cas(&p->bq_queued, &q, q + n, ws_relaxed)) return 0;
      continue;
    }
    if (mode == WS_ADMIT_TRY) return EAGAIN;
    int rc = bound_wait(p, n);
    if (rc) return rc;
    q = ws_u64_load(&p->bq_queued, ws_relaxed);
  }
}

/* From outside: stored by value in the caller's lane of the global queue,
 * one lock for all n, counted under it (fns_pushed). */
int ws_submit_outside(struct pool *p, pool_fn fn, void *const *args, size_t n, ws_admit mode) {
  const bool bounded = p->cfg.max_queued != 0;
  int rc;
  if (bounded && (rc = bound_admit(p, n, mode)) != 0) return rc;
  rc = ws_gqueue_push_fns(&p->gq[ws_lane()], fn, args, n);
  if (rc == 0) {
    /* A batch's own wakes first: rung before any other wake of this
     * call, they are one wake from here each (sleep.c, ring). */
    if (n > 1) ws_sleep_wake_more(&p->sleep, n - 1);
    ws_sleep_notify(&p->sleep);
  } else if (bounded)
    bound_return(p, n);
  return rc;
}

int ws_push_global(struct pool *p, ws_task *t, unsigned flags) {
  int rc = ws_gqueue_push_task(&p->gq[ws_lane()], t, flags);
  if (rc == 0) ws_sleep_notify(&p->sleep);
  return rc;
}
