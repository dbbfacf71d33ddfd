/* SPDX-License-Identifier: MIT */
/* Jobs (wspool.h \ref jobs; the protocol and its argument are
 * docs/design.md 9.2): a submitted task with a word to wait on, and a
 * join counter over its predecessors, the dependency counting of dataflow
 * task graphs (Cilk's join counters; OpenMP's depend clauses and Taskflow
 * are built the same way): a job runs when the count of its predecessors
 * not yet complete, plus one until it is started, falls to zero.
 *
 * A job's successors are a Treiber stack of edges (pool_job_after pushes,
 * any thread), closed by its completion with an exchange that leaves the
 * job's status in the word: an edge pushed before the close is released
 * by the completer, one that finds it closed is satisfied at once. The
 * edges are the successor's memory (two inside it, blocks after that), so
 * a predecessor never allocates, and they live until the successor is
 * ready, which is after every predecessor let go of its edge. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "job.h"
#include "profile.h"

/* Edges beyond the two a job holds come in blocks of this many: 512 bytes. */
enum { EDGE_BLOCK = 31 };

typedef struct job_edge {
  /* The next edge of the predecessor's list; once the list is closed, its
   * completer's alone, tagged EDGE_RESERVED (job_complete). */
  struct job_edge *next;
  ws_job *succ; /* whose edge it is; NULL: a free slot of `own` */
} job_edge;

/* On `next` of a closed list's edge: its successor's pool is reserved. */
#define EDGE_RESERVED ((uintptr_t)1)

static job_edge *edge_next(const job_edge *e) {
  return (job_edge *)((uintptr_t)e->next & ~EDGE_RESERVED);
}

typedef struct edge_block {
  struct edge_block *next;
  size_t used;
  job_edge e[EDGE_BLOCK];
} edge_block;

/* `succ` once the job completed: its status, odd (edges are aligned). */
#define SUCC_CLOSED(status) ((void *)((uintptr_t)(unsigned)(status) << 1 | 1u))
/* `busy`: NOT_DONE until complete, then the status << BUSY_SHIFT; WAITER
 * while an outside thread blocks on it (the latch's waiter bit). */
#define BUSY_NOT_DONE ((int64_t)1)
#define BUSY_WAITER ((int64_t)1 << 62)
#define BUSY_SHIFT 8

#define JOB_MAGIC 0x6a6f62ull /* "job" */
/* Initialised and not started, or started: the constant folded with the
 * job's address (stale memory of another job does not pass). */
#define JOB_NEW(j) (JOB_MAGIC << 8 ^ (uint64_t)(uintptr_t)(j))
#define JOB_STARTED(j) (JOB_NEW(j) ^ 1u)

struct ws_job {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  struct pool *pool;
  ws_i64 pending; /* predecessors not complete, + 1 until started */
  ws_i64 busy;    /* BUSY_NOT_DONE, or the status (above) */
  ws_ptr succ;    /* job_edge *, or SUCC_CLOSED(status) */
  ws_ctx unit;    /* the job as a unit of work (cancel.h), nested in none */
  ws_u64 magic;   /* JOB_NEW, JOB_STARTED; relaxed: any thread may check */
  job_edge own[2];
  union {
    edge_block *more; /* until ready: the edge blocks */
    ws_job *next;     /* once ready: the link of a list of jobs (rel_q) */
  } u;
};

_Static_assert(sizeof(ws_job) <= sizeof(pool_job_t), "pool_job_t too small");

static void job_exec(ws_task *t, ws_worker *w);

/* What releasing jobs leaves to do once the releaser completed
 * (job_settle): jobs ready, counted and not yet queued (`ready`); on a
 * job's own worker, the one it runs next (`tail`, when allowed); jobs
 * queued from outside their pool, which may not complete yet (`held`);
 * jobs refused, which complete unrun (`dead`, the status in their unit).
 * Linked through u.next (a held job's function may run meanwhile, but
 * nothing of it reads that link). */
typedef struct rel_q {
  bool tail_ok;
  ws_job *tail;
  ws_job *ready;
  ws_job *held; /* queued from outside their pool, waiting to complete */
  ws_job *dead;
} rel_q;

static ws_job *job_valid(const pool_job_t *pj) {
  ws_job *j = (ws_job *)(uintptr_t)pj;
  if (!j) return NULL;
  uint64_t m = ws_u64_load(&j->magic, ws_relaxed);
  return m == JOB_NEW(j) || m == JOB_STARTED(j) ? j : NULL;
}

ws_job *ws_job_unstarted(pool_job_t *pj) {
  ws_job *j = (ws_job *)pj;
  return j && ws_u64_load(&j->magic, ws_relaxed) == JOB_NEW(j) ? j : NULL;
}

/* Waits until (*word & mask) == 0: for a step another thread is a few
 * instructions from (yielding, in case it was preempted). Acquire: what
 * that thread did before its clear. */
static void spin_until_clear(ws_i64 *word, int64_t mask) {
  for (unsigned spin = 0; ws_i64_load(word, ws_acquire) & mask; spin++) {
    if (spin < 64)
      ws_cpu_relax();
    else
      sched_yield();
  }
}

/* j's count reached zero: it will run (or be skipped when it runs). On a
 * worker of its pool it counts as a submission now (submit.c, completion
 * accounting) and job_settle queues it once the releaser's own work is
 * done (the first such job may run next, directly). A predecessor's
 * completer that reserved j's pool (`reserved`: job_complete) pushes it
 * and is done with it. From any other thread (a start, a group's end) it
 * is queued at once, inside its pool's gate; `pending`, 0 now, holds 1
 * meanwhile, and j does not complete before job_settle clears it, once
 * the releaser is out of the pool. */
static void job_ready(ws_job *j, ws_worker *w, rel_q *q, bool reserved) {
  /* Every predecessor let go of its edge before its decrement, and the
   * last decrement (acq_rel) saw them all: the blocks are ours. */
  struct pool *p = j->pool;
  for (edge_block *b = j->u.more, *n; b; b = n) {
    n = b->next;
    ws_mem_free(&p->mem, b, sizeof(*b));
  }
  if (w && w->pool == p) {
    ws_submit_count(w, 1);
    j->u.next = q->ready;
    q->ready = j;
    return;
  }
  int rc;
  if (reserved) {
    /* Inside the gate since before the close, if any (ws_reserve). */
    if ((rc = ws_push_global(p, &j->hdr, WS_GQ_COUNTED | WS_GQ_FORCE)) == 0) return;
    goto refused;
  }
  rc = ws_enter(p);
  if (rc == 0) {
    /* Relaxed: the push below is a release. */
    ws_i64_store(&j->pending, 1, ws_relaxed);
    rc = ws_push_global(p, &j->hdr, WS_GQ_COUNTED);
    if (rc == 0) {
      j->u.next = q->held;
      q->held = j;
      return;
    }
    ws_i64_store(&j->pending, 0, ws_relaxed);
    ws_leave(p);
  }
refused:
  /* Refused (ESHUTDOWN: the pool is being destroyed; ENOMEM; EOWNERDEAD):
   * it completes unrun, with that status, counted nowhere. */
  ws_ctx_fail(&j->unit, rc);
  j->u.next = q->dead;
  q->dead = j;
}

/* A predecessor of j completed (or j's start, or its group's end). */
static void job_release(ws_job *j, int status, ws_worker *w, rel_q *q, bool reserved) {
  if (status) ws_ctx_fail(&j->unit, status); /* the first one sticks (EALREADY after) */
  /* acq_rel: the releases of every earlier decrement (each after its
   * predecessor let go of its edge) reach the one that reaches zero. */
  if (ws_i64_fetch_add(&j->pending, -1, ws_acq_rel) == 1) job_ready(j, w, q, reserved);
}

/* j ran (or was skipped) with `status`: close its list, publish the
 * status, j's last touch (a waiter may free it then), then release the
 * successors, so that none completes before j (design.md 9.2). Their
 * failure is recorded first (a failed predecessor that completes later
 * records its own after); a successor in a pool the completer is no
 * worker of has that pool reserved (ws_reserve) across the publish, so a
 * pool_wait_idle() or a pool_destroy() that saw j complete covers it.
 * The ready ones are queued by job_settle. */
static void job_complete(ws_job *j, int status, ws_worker *w, rel_q *q) {
  struct pool *p = j->pool;
  /* acq_rel: acquire, every edge pushed before (release CAS in
   * pool_job_after) is complete, its successor counted; release, an
   * after() that finds it closed (acquire) sees j's writes. */
  job_edge *e = ws_ptr_xchg(&j->succ, SUCC_CLOSED(status), ws_acq_rel);
  /* The list is ours now: nothing else reads or writes its `next`s. */
  for (job_edge *f = e, *n; f; f = n) {
    n = edge_next(f);
    ws_job *s = f->succ;
    if (status) ws_ctx_fail(&s->unit, status);
    if (!(w && w->pool == s->pool) && ws_reserve(s->pool) == 0)
      f->next = (job_edge *)((uintptr_t)f->next | EDGE_RESERVED);
  }
  /* Queued from outside by a releaser that has not completed yet
   * (job_ready): wait for it (a few instructions, unless it was
   * preempted). Acquire: its clear is its last touch of j. */
  spin_until_clear(&j->pending, ~(int64_t)0);
  /* seq_cst: the latch's completer store, which an outside waiter's
   * registration (its CAS of the waiter bit) pairs with (design.md 5.7).
   * After it j may be gone: only the pool and the successors (each alive
   * until our decrement) are touched. */
  int64_t old = ws_i64_xchg(&j->busy, (int64_t)status << BUSY_SHIFT, ws_seq_cst);
  /* Every wait for a job blocks (pool_job_wait), none helps: no worker
   * sleeps on this word, so only a registered waiter is woken. */
  if (old & BUSY_WAITER) ws_latch_notify(p, WS_WAKE_OUTSIDE);
  /* Each successor's edge is its own memory, alive until our decrement
   * (the last of them makes it ready): read all we need of it first. */
  while (e) {
    job_edge *next = edge_next(e);
    bool reserved = (uintptr_t)e->next & EDGE_RESERVED;
    ws_job *s = e->succ;
    struct pool *sp = s->pool;
    job_release(s, 0, w, q, reserved);
    if (reserved) ws_unreserve(sp); /* after its push */
    e = next;
  }
}

/* After the releaser completed: lets the held jobs complete, queues the
 * ready ones and completes the refused ones (and what those release),
 * until nothing is left. */
static void job_settle(ws_worker *w, rel_q *q) {
  for (;;) {
    ws_job *j;
    if ((j = q->held) != NULL) {
      q->held = j->u.next;
      struct pool *p = j->pool;
      /* Release: pairs with job_complete's acquire; after it j may run to
       * completion and be gone. */
      ws_i64_store(&j->pending, 0, ws_release);
      ws_leave(p);
    } else if ((j = q->ready) != NULL) {
      q->ready = j->u.next;
      /* Made ready inside an isolated computation: not for its waits
       * (design.md 7.5), the global queue (counted already). */
      if (ws_isolation() && ws_push_global(j->pool, &j->hdr, 0) == 0) continue;
      if (q->tail_ok && !q->tail) {
        q->tail = j;
      } else if (ws_push(w, &j->hdr) != 0) {
        /* The deque cannot grow: run it here, now. */
        ws_counter_add(&w->stats.local_pops, 1);
        ws_run(w, &j->hdr);
      }
    } else if ((j = q->dead) != NULL) {
      q->dead = j->u.next;
      job_complete(j, ws_ctx_result(&j->unit), w, q);
    } else {
      return;
    }
  }
}

static void job_exec(ws_task *t, ws_worker *w) {
  ws_job *j = (ws_job *)t;
  rel_q q = {.tail_ok = true};
  for (;;) {
    ws_scope_set_ctx(ws__scope, &j->unit);
    ws_submit_started(w, false); /* jobs do not count in a bound */
    if (ws_ctx_cancelled(&j->unit)) {
      ws_counter_add(&w->stats.skipped, 1);
      pool__tls.tasks--; /* ws_run() counts a run */
    } else {
      uint64_t t0 = ws_trace_t0(w);
      ws_prof_run_task(w, j->fn, j->arg);
      ws_trace_task(w, (ws_fnptr)j->fn, t0);
    }
    job_complete(j, ws_ctx_result(&j->unit), w, &q);
    job_settle(w, &q);
    ws_submit_finished(w); /* after the counts of what it released */
    j = q.tail;
    if (!j) return;
    q.tail = NULL;
    /* Run next, here: as if popped from the deque. */
    ws_counter_add(&w->stats.local_pops, 1);
    pool__tls.tasks++;
  }
}

/* A predecessor, or the start, let go of j from outside job_exec. */
static void release_here(ws_job *j, int status) {
  rel_q q = {.tail_ok = false};
  ws_worker *w = ws_self();
  job_release(j, status, w, &q, false);
  job_settle(w, &q);
}

void ws_job_hold(ws_job *j) {
  /* Relaxed: j is not started, so the count is at least 1 and cannot reach
   * zero meanwhile; the release that hands j to its releaser orders it. */
  ws_i64_fetch_add(&j->pending, 1, ws_relaxed);
}

void ws_job_release(ws_job *j, int status) { release_here(j, status); }

int pool_job_init(pool_job_t *pj, pool_t *pool, pool_fn fn, void *arg) {
  if (!pj || !fn) return EINVAL;
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  if (ws_pool_forked(p)) return EOWNERDEAD;
  ws_job *j = (ws_job *)pj;
  j->hdr.exec = job_exec;
  j->fn = fn;
  j->arg = arg;
  j->pool = p;
  /* Relaxed: the job reaches other threads through the caller's own
   * synchronisation, or a push (a release). */
  ws_i64_store(&j->pending, 1, ws_relaxed);
  ws_i64_store(&j->busy, BUSY_NOT_DONE, ws_relaxed);
  ws_ptr_store(&j->succ, NULL, ws_relaxed);
  ws_ctx_init(&j->unit, NULL);
  j->own[0] = j->own[1] = (job_edge){NULL, NULL};
  j->u.more = NULL;
  ws_u64_store(&j->magic, JOB_NEW(j), ws_relaxed);
  return 0;
}

/* A free edge of j (its thread only, before the start), or NULL. */
static job_edge *edge_new(ws_job *j) {
  for (int i = 0; i < 2; i++)
    if (!j->own[i].succ) return &j->own[i];
  edge_block *b = j->u.more;
  if (!b || b->used == EDGE_BLOCK) {
    edge_block *nb = ws_mem_alloc(&j->pool->mem, sizeof(*nb));
    if (!nb) return NULL;
    nb->next = b;
    nb->used = 0;
    j->u.more = b = nb;
  }
  return &b->e[b->used++];
}

/* Gives back the edge edge_new just gave (unused). */
static void edge_undo(ws_job *j, job_edge *e) {
  edge_block *b = j->u.more;
  if (b && e >= b->e && e < b->e + EDGE_BLOCK)
    b->used--;
  else
    e->succ = NULL;
}

int pool_job_after(pool_job_t *pj, pool_job_t *ppred) {
  ws_job *j = ws_job_unstarted(pj), *pred = job_valid(ppred);
  if (!j || !pred || j == pred) return EINVAL;
  job_edge *e = edge_new(j);
  if (!e) return ENOMEM;
  e->succ = j;
  ws_job_hold(j);
  /* Acquire: a closed word is the completer's release exchange, after
   * pred's writes, which j (run after this) must see; an open one is the
   * expected value of the CAS (acq_rel, whose failure acquires). */
  void *h = ws_ptr_load(&pred->succ, ws_acquire);
  for (;;) {
    if ((uintptr_t)h & 1u) {
      /* pred's completer closed the list: the edge is satisfied now, once
       * pred's status is published (a few instructions after the close,
       * job_complete), so that j never runs before pred is complete. */
      spin_until_clear(&pred->busy, BUSY_NOT_DONE);
      edge_undo(j, e);
      int status = (int)((uintptr_t)h >> 1);
      if (status) ws_ctx_fail(&j->unit, status);
      /* Relaxed: the start's hold keeps the count above zero. */
      ws_i64_fetch_add(&j->pending, -1, ws_relaxed);
      return 0;
    }
    e->next = h;
    /* Release: the edge and j's count before the completer (which
     * acquires with its exchange) reads them. */
    if (ws_ptr_cas(&pred->succ, &h, e, ws_acq_rel)) return 0;
  }
}

/* Completes j, never run, with `status`; it counted nowhere. */
static void complete_refused(ws_job *j, int status) {
  rel_q q = {.tail_ok = false};
  ws_worker *w = ws_self();
  ws_i64_store(&j->pending, 0, ws_relaxed); /* its start's hold, not a releaser's */
  ws_ctx_fail(&j->unit, status);
  job_complete(j, ws_ctx_result(&j->unit), w, &q);
  job_settle(w, &q);
}

int pool_job_start(pool_job_t *pj) {
  ws_job *j = ws_job_unstarted(pj);
  if (!j) return EINVAL;
  ws_u64_store(&j->magic, JOB_STARTED(j), ws_relaxed);
  release_here(j, 0);
  return 0;
}

int pool_job_submit(pool_t *pool, pool_job_t *pj, pool_fn fn, void *arg) {
  int rc = pool_job_init(pj, pool, fn, arg);
  if (rc) return rc;
  ws_job *j = (ws_job *)pj;
  ws_worker *w = ws_self();
  if (!(w && w->pool == j->pool) && (rc = ws_enter(j->pool)) != 0) {
    /* Refused before anything ran: complete, so a wait returns it. */
    ws_u64_store(&j->magic, JOB_STARTED(j), ws_relaxed);
    complete_refused(j, rc);
    return rc;
  }
  pool_job_start(pj);
  if (!(w && w->pool == j->pool)) ws_leave(j->pool);
  return 0;
}

static int status_of(int64_t busy) { return (int)(busy >> BUSY_SHIFT); }

int pool_job_wait(pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  /* Acquire: the job's writes (its function's) before its completion. */
  int64_t v = ws_i64_load(&j->busy, ws_acquire);
  if (!(v & BUSY_NOT_DONE)) return status_of(v);
  struct pool *p = j->pool;
  ws_latch done = ws_latch_zero(&j->busy, BUSY_NOT_DONE, BUSY_WAITER);
  ws_worker *w = ws_self();
  bool inside = w && w->pool == p;
  /* Not refused once destroy began: a job that can no longer run
   * completes with ESHUTDOWN, which wakes this wait. */
  int rc = inside ? 0 : ws_enter_any(p);
  if (rc) return rc;
  /* A task's wait does not help (design.md 9.2): what it ran could wait,
   * in turn, for a job suspended below it on this stack, and no order of
   * jobs prevents that. It blocks in a blocking region instead: a
   * stand-in runs the pool's work meanwhile (5.9). */
  uint64_t at = ws_prof_wait_begin(p);
  if (w) pool_blocking_begin();
  ws_latch_block(p, &done);
  if (w) pool_blocking_end();
  ws_prof_wait_end(p, at);
  if (!inside) ws_leave(p);
  return status_of(ws_i64_load(&j->busy, ws_acquire));
}

int pool_job_status(const pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  int64_t v = ws_i64_load(&j->busy, ws_acquire);
  return v & BUSY_NOT_DONE ? EINPROGRESS : status_of(v);
}

int pool_job_cancel(pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  ws_ctx_cancel(&j->unit);
  return 0;
}
