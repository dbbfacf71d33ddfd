/* SPDX-License-Identifier: MIT */
/* Jobs (wspool.h \ref jobs; the protocol and its argument are
 * docs/design.md 9.2): a submitted task with a word to wait on, and a
 * join counter over its predecessors, the dependency counting of dataflow
 * task graphs (Cilk's join counters; OpenMP's depend clauses and Taskflow
 * are built the same way): a job runs when the count of its predecessors
 * not yet complete, plus one until it is started, falls to zero.
 *
 * A job's successors are a Treiber stack of edges (pool_job_after pushes,
 * any thread) in its one shared word, `state`, beside its waiter bit; its
 * completion is one CAS of that word to its status, which closes the list
 * and publishes the status at once: an edge pushed before is released by
 * the completer, one that finds it closed is satisfied then and there.
 * The edges are the successor's memory (two inside it, blocks after
 * that), so a predecessor never allocates, and they live until the
 * successor is ready, which is after every predecessor let go of its edge.
 * Until the start, a job counts its predecessors in a word of its own
 * thread's (`holds`): `pending` needs one atomic step per edge, the
 * predecessor's. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "job.h"
#include "profile.h"

/* Edges beyond the two a job holds come in blocks of this many: 512 bytes,
 * from the C library, not the pool's allocator: a job's blocks live until
 * its last predecessor let go, which may be in another pool, after its
 * own pool was destroyed (wspool.h, \ref memory). */
enum { EDGE_BLOCK = 31 };

typedef struct job_edge {
  /* The next edge of the predecessor's list; once pushed, its completer's
   * alone, tagged EDGE_RESERVED (job_complete). */
  struct job_edge *next;
  ws_job *succ; /* whose edge it is; NULL: a free slot of `own` */
} job_edge;

/* On `next` of a pushed edge: its successor's pool is reserved. */
#define EDGE_RESERVED ((uintptr_t)1)

static job_edge *edge_next(const job_edge *e) {
  return (job_edge *)((uintptr_t)e->next & ~EDGE_RESERVED);
}

typedef struct edge_block {
  struct edge_block *next;
  size_t used;
  job_edge e[EDGE_BLOCK];
} edge_block;

_Static_assert(_Alignof(job_edge) >= 4, "the state word's two flags");

/* `state`: until complete, STATE_OPEN | STATE_WAITER while an outside
 * thread blocks on it (the latch's waiter bit) | the successor list; then
 * the status << STATUS_SHIFT (design.md 9.2). */
#define STATE_OPEN ((int64_t)1)
#define STATE_WAITER ((int64_t)2)
#define STATE_FLAGS (STATE_OPEN | STATE_WAITER)
#define STATUS_SHIFT 8

static job_edge *state_list(int64_t v) { return (job_edge *)(uintptr_t)(v & ~STATE_FLAGS); }

/* `pending` from the init to the start: UNSTARTED less the predecessors
 * released so far, never 1 or below (fewer than 2^62 edges); the start
 * adds `holds` - UNSTARTED, leaving the releases still to come. */
#define UNSTARTED ((int64_t)1 << 62)

#define JOB_MAGIC 0x6a6f62ull /* "job" */
/* `magic` of an initialised job: the constant folded with the job's
 * address (stale memory of another job does not pass), JOB_STARTED once
 * started, and in the top byte the low byte of the process's fork
 * generation at the init (ws_fork_gen, api.h): in a child of fork() a job
 * of the parent's is told apart (job_forked). The fork byte is xor-ed
 * over address bits, and decoding xors the address out again (job_bits),
 * so tagged pointers keep their tag. */
#define JOB_TAG(j) (JOB_MAGIC << 8 ^ (uint64_t)(uintptr_t)(j))
#define JOB_STARTED ((uint64_t)1)
#define JOB_FORK_SHIFT 56
#define JOB_FORK_MASK ((uint64_t)0xff << JOB_FORK_SHIFT)

struct ws_job {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  struct pool *pool;
  ws_i64 pending; /* started: releases to come; before: see UNSTARTED */
  /* JOB_TAG, JOB_STARTED, the fork byte; relaxed: any thread may check.
   * Beside `pending` (a 16-byte pair never straddles a line): a start
   * touches one line. */
  ws_u64 magic;
  ws_i64 state;  /* STATE_OPEN | waiter | edges, or the status (above) */
  /* Before the start: the predecessors added (its thread's, as a plain
   * count: relaxed, one thread). From its run: holds on its completion,
   * the run's own and one per round in progress of a group begun directly
   * in it (job_unhold). */
  ws_u32 holds;
  uint32_t gen;   /* its pool's struct generation at the init (pool.c) */
  ws_ctx unit;   /* the job as a unit of work (cancel.h), nested in none */
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

/* j's magic less its tag: JOB_STARTED and the fork byte when j is a job. */
static uint64_t job_bits(const ws_job *j) {
  return ws_u64_load(&j->magic, ws_relaxed) ^ JOB_TAG(j);
}

static ws_job *job_valid(const pool_job_t *pj) {
  ws_job *j = (ws_job *)(uintptr_t)pj;
  return j && (job_bits(j) & ~(JOB_FORK_MASK | JOB_STARTED)) == 0 ? j : NULL;
}

ws_job *ws_job_unstarted(pool_job_t *pj) {
  ws_job *j = (ws_job *)pj;
  return j && (job_bits(j) & ~JOB_FORK_MASK) == 0 ? j : NULL;
}

/* A valid job initialised before a fork() this process is a child of:
 * nothing here runs or completes it (its pool's threads are the
 * parent's). ws_fork_gen changes only in the child's fork handler, while
 * the child has one thread. The byte alone wraps: a descendant 256 forks
 * down sees its own value there. Its pool's full generation (the init
 * refuses a pool of an earlier process, and only a pool_create of this
 * process rewrites it) tells that one apart too, unless this process took
 * the struct for a pool of its own since (its pool was destroyed here or
 * in a process between: wspool.h, pool_job_wait, says what is left). */
static bool job_forked(const ws_job *j) {
  return (job_bits(j) >> JOB_FORK_SHIFT) != (uint8_t)ws_fork_gen || ws_pool_forked(j->pool);
}

/* Relaxed: as the init's store (its calls come from one thread at a time). */
static void job_mark_started(ws_job *j) {
  ws_u64_store(&j->magic, ws_u64_load(&j->magic, ws_relaxed) | JOB_STARTED, ws_relaxed);
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
 * accounting); the last such job a running job released is the one it
 * runs next (`tail`, when allowed), and job_settle queues the others once
 * the releaser's own work is done. A predecessor's
 * completer that reserved j's pool (`reserved`: job_complete) pushes it
 * and is done with it. From any other thread (a start, a group's end) it
 * is queued at once, inside its pool's gate; `pending`, 0 now, holds 1
 * meanwhile, and j does not complete before job_settle clears it, once
 * the releaser is out of the pool. */
static void job_ready_outside(ws_job *j, rel_q *q, bool reserved);

/* j's pool is the one it was made for: a destroyed pool's struct is reused
 * by a later pool_create, which bumps `gen` before it opens the gate. So a
 * thread that entered the gate (acquire), or a worker of the pool now
 * there, reads the new value when j's pool is gone. */
static bool job_pool_current(const ws_job *j) {
  return ws_u32_load(&j->pool->gen, ws_relaxed) == j->gen;
}

static inline void job_ready(ws_job *j, ws_worker *w, rel_q *q, bool reserved) {
  /* Every predecessor let go of its edge before its release, and the
   * last release (an acquire) saw them all: the blocks are ours. */
  struct pool *p = j->pool;
  for (edge_block *b = j->u.more, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  if (w && w->pool == p && job_pool_current(j)) {
    ws_submit_count(w, 1);
    /* The last one released is the tail; the one it replaces is queued.
     * Not inside an isolated computation: job_settle_all queues those. */
    if (q->tail_ok && !ws_isolation()) {
      ws_job *prev = q->tail;
      q->tail = j;
      if (!prev) return;
      j = prev;
    }
    j->u.next = q->ready;
    q->ready = j;
    return;
  }
  job_ready_outside(j, q, reserved);
}

/* job_ready from a thread that is no worker of j's pool. */
static void job_ready_outside(ws_job *j, rel_q *q, bool reserved) {
  struct pool *p = j->pool;
  int rc;
  if (reserved) {
    /* Inside the gate since before the close, if any (ws_reserve). */
    if ((rc = ws_push_global(p, &j->hdr, WS_GQ_COUNTED | WS_GQ_FORCE)) == 0) return;
    goto refused;
  }
  /* A job of the parent, in a child of fork(): its pool is the parent's,
   * or a pool made here since in its struct. */
  rc = job_forked(j) ? EOWNERDEAD : ws_enter(p);
  if (rc == 0 && !job_pool_current(j)) {
    ws_leave(p);
    rc = ESHUTDOWN; /* its pool was destroyed; the struct is another's */
  }
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

/* A predecessor of j completed, or its group ended (`take` 1), or j's
 * start (`take` UNSTARTED - holds): takes `take` off j's count. */
static void job_release(ws_job *j, int status, int64_t take, ws_worker *w, rel_q *q,
                        bool reserved) {
  if (status) ws_ctx_fail(&j->unit, status); /* the first one sticks (EALREADY after) */
  /* Acquire: the releases of every earlier decrement (each after its
   * releaser let go of its edge), RMWs all, reach a read of the last.
   * Reading `take`, no release is left but this one and nothing else
   * writes the word until j is ready (design.md 9.2, "The count"): a plain
   * store, relaxed (j reaches its runner by a release push, or runs here).
   * Otherwise acq_rel: the decrement that reaches zero acquires as above,
   * and every other one releases its releaser's reads of its edge. */
  if (ws_i64_load(&j->pending, ws_acquire) == take)
    ws_i64_store(&j->pending, 0, ws_relaxed);
  else if (ws_i64_fetch_add(&j->pending, -take, ws_acq_rel) != take)
    return;
  job_ready(j, w, q, reserved);
}

/* Before the close (job_complete): records j's failure in successor
 * edge f's unit and reserves its pool when the completer is no worker of
 * it, noting that on f's `next` (the completer's alone: see there). */
static void edge_prepare(job_edge *f, int status, const ws_worker *w) {
  ws_job *s = f->succ;
  if (status) ws_ctx_fail(&s->unit, status);
  if ((w && w->pool == s->pool && job_pool_current(s)) || ws_reserve(s->pool) != 0) return;
  if (!job_pool_current(s)) {
    ws_unreserve(s->pool); /* another pool's: job_ready_outside refuses it */
    return;
  }
  f->next = (job_edge *)((uintptr_t)f->next | EDGE_RESERVED);
}

/* j ran (or was skipped) with `status`: close its list and publish the
 * status in one step, j's last touch (a waiter may free it then), then
 * release the successors, so that none completes before j (design.md
 * 9.2). Before that step, each successor on the list has its failure
 * recorded (a failed predecessor that completes later records its own
 * after) and, in a pool the completer is no worker of, that pool reserved
 * (ws_reserve), so a pool_wait_idle() or a pool_destroy() that saw j
 * complete covers it. The ready ones are queued by job_settle. */
static void job_complete(ws_job *j, int status, ws_worker *w, rel_q *q) {
  struct pool *p = j->pool;
  /* Queued from outside by a releaser that has not completed yet
   * (job_ready): wait for it (a few instructions, unless it was
   * preempted). Acquire: its clear is its last touch of j. */
  spin_until_clear(&j->pending, ~(int64_t)0);
  /* Until the close, edges are only pushed on top: those below an edge
   * already prepared stay as they are, and nothing but this completer
   * reads or writes their `next`s (a pusher writes its own edge's, before
   * its CAS). Acquire (the load and a failed CAS): the pushers' release
   * CASes, so the edges read are whole. */
  int64_t v = ws_i64_load(&j->state, ws_acquire);
  job_edge *e = NULL; /* prepared: this edge and those below it */
  do {
    job_edge *top = state_list(v);
    for (job_edge *f = top; f != e; f = edge_next(f)) edge_prepare(f, status, w);
    e = top;
    /* seq_cst: the latch's completer store (design.md 5.6), which an
     * outside waiter's registration (its CAS of the waiter bit) pairs with
     * (5.7); it releases j's writes to a waiter and to an after() that
     * finds the list closed (9.2). Fails on a push or a waiter's mark:
     * then again, from the new top. After it j may be gone: only the pool
     * and the successors (each alive until our decrement) are touched. */
  } while (!ws_i64_cas(&j->state, &v, (int64_t)status << STATUS_SHIFT, ws_seq_cst));
  /* Every wait for a job blocks (pool_job_wait), none helps: no worker
   * sleeps on this word, so only a registered waiter is woken. */
  if (v & STATE_WAITER) ws_latch_notify(p, WS_WAKE_OUTSIDE);
  /* Each successor's edge is its own memory, alive until our decrement
   * (the last of them makes it ready): read all we need of it first. */
  while (e) {
    job_edge *next = edge_next(e);
    bool reserved = (uintptr_t)e->next & EDGE_RESERVED;
    ws_job *s = e->succ;
    struct pool *sp = s->pool;
    job_release(s, 0, 1, w, q, reserved);
    if (reserved) ws_unreserve(sp); /* after its push */
    e = next;
  }
}

/* After the releaser completed: lets the held jobs complete, queues the
 * ready ones and completes the refused ones (and what those release),
 * until nothing is left. */
static void job_settle_all(ws_worker *w, rel_q *q) {
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

/* job_settle_all, when anything is left to do: often nothing (a start
 * that made nothing ready; a completion that released one job, its tail). */
static inline void job_settle(ws_worker *w, rel_q *q) {
  if (q->held || q->ready || q->dead) job_settle_all(w, q);
}

/* Drops one hold on j's completion (`holds`, from its run on): true when
 * it was the last, and the caller completes j. Reference counting: a hold
 * is taken only by a holder (the run, or what runs inside a round of a
 * group begun in j's function, which happens before that round's end),
 * so reading 1 means ours is the only one left and nobody else writes the
 * word (the start's shortcut in job_release): no RMW. Acquire (the load,
 * and the RMW that takes the count to 0): the release decrements of the
 * other holders, so what they did (the function's writes; a round's end,
 * which reads j's unit) happens before the completion publishes j. Else
 * acq_rel: release, ours before the last holder's acquire. */
static bool job_unhold(ws_job *j) {
  if (ws_u32_load(&j->holds, ws_acquire) == 1) return true;
  return ws_u32_fetch_add(&j->holds, (uint32_t)-1, ws_acq_rel) == 1;
}

static void job_exec(ws_task *t, ws_worker *w) {
  ws_job *j = (ws_job *)t;
  rel_q q = {.tail_ok = true};
  for (;;) {
    ws_scope_set_ctx(ws__scope, &j->unit);
    ws_submit_started(w, false); /* jobs do not count in a bound */
    bool last = true;
    if (ws_ctx_cancelled(&j->unit)) {
      ws_counter_add(&w->stats.skipped, 1);
      pool__tls.tasks--; /* ws_run() counts a run */
    } else {
      /* The run's hold: groups begun in the function add theirs, and the
       * last to let go completes j (a group's children may outlive the
       * function: their units are nested in j's, in its storage).
       * Relaxed: nobody else touches the word before the function runs. */
      ws_u32_store(&j->holds, 1, ws_relaxed);
      uint64_t t0 = ws_trace_t0(w);
      ws_prof_run_task(w, j->fn, j->arg);
      ws_trace_task(w, (ws_fnptr)j->fn, t0);
      last = job_unhold(j);
    }
    if (last) {
      job_complete(j, ws_ctx_result(&j->unit), w, &q);
      job_settle(w, &q);
    }
    ws_submit_finished(w); /* after the counts of what it released */
    j = q.tail;
    if (!j) return;
    q.tail = NULL;
    /* A worker beyond a shrunk size, or a surplus stand-in, stops after
     * the job it ran: the next one goes on its deque, where the others
     * take it, as job_settle_all's do. */
    if (ws_stepping_down(w) && ws_push(w, &j->hdr) == 0) return;
    /* Run next, here: as if popped from the deque. */
    ws_counter_add(&w->stats.local_pops, 1);
    pool__tls.tasks++;
  }
}

/* A group's end, or the start, let go of j from outside job_exec. */
static void release_here(ws_job *j, int status, int64_t take) {
  rel_q q = {.tail_ok = false};
  ws_worker *w = ws_self();
  job_release(j, status, take, w, &q, false);
  job_settle(w, &q);
}

/* Relaxed (a plain count): until the start only j's thread (one at a
 * time) writes or reads it; releases meanwhile go to `pending`, which
 * stays above 1 (UNSTARTED) until the start adds the holds in. */
void ws_job_hold(ws_job *j) {
  ws_u32_store(&j->holds, ws_u32_load(&j->holds, ws_relaxed) + 1, ws_relaxed);
}

void ws_job_release(ws_job *j, int status) { release_here(j, status, 1); }

static ws_job *job_of_unit(ws_ctx *u) { return (ws_job *)((char *)u - offsetof(ws_job, unit)); }

/* Relaxed: the caller is a holder (job_unhold), so the count is above 0
 * and stays so; the hold reaches the round's end through the child's
 * push (a release) and run. */
void ws_job_round_begin(ws_ctx *u) { ws_u32_fetch_add(&job_of_unit(u)->holds, 1, ws_relaxed); }

void ws_job_round_end(ws_ctx *u) {
  ws_job *j = job_of_unit(u);
  if (!job_unhold(j)) return;
  /* Its function returned: complete it here (a group child's worker, of
   * any pool, or the thread whose spawn was refused). */
  rel_q q = {.tail_ok = false};
  ws_worker *w = ws_self();
  job_complete(j, ws_ctx_result(&j->unit), w, &q);
  job_settle(w, &q);
}

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
  ws_i64_store(&j->pending, UNSTARTED, ws_relaxed);
  ws_i64_store(&j->state, STATE_OPEN, ws_relaxed);
  ws_u32_store(&j->holds, 0, ws_relaxed);
  ws_ctx_init(&j->unit, NULL);
  j->unit.job = true;
  /* Free: `succ` says so (`next` is written when the edge is pushed). */
  j->own[0].succ = NULL;
  j->own[1].succ = NULL;
  j->u.more = NULL;
  /* Relaxed: the caller holds p's handle since pool_create returned it (a
   * release, its gate's opening), or since it was destroyed; a struct taken
   * by a later pool since is told apart at its next entry. */
  j->gen = ws_u32_load(&p->gen, ws_relaxed);
  ws_u64_store(&j->magic, JOB_TAG(j) ^ (uint64_t)(uint8_t)ws_fork_gen << JOB_FORK_SHIFT,
               ws_relaxed);
  return 0;
}

/* A free edge of j (its thread only, before the start), or NULL. */
static job_edge *edge_new(ws_job *j) {
  for (int i = 0; i < 2; i++)
    if (!j->own[i].succ) return &j->own[i];
  edge_block *b = j->u.more;
  if (!b || b->used == EDGE_BLOCK) {
    edge_block *nb = malloc(sizeof(*nb));
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
  /* 2^32 - 1 predecessors: 64 GiB of edges. */
  if (ws_u32_load(&j->holds, ws_relaxed) == UINT32_MAX) return ENOMEM;
  job_edge *e = edge_new(j);
  if (!e) return ENOMEM;
  e->succ = j;
  /* Acquire: a closed word is pred's completion, its CAS (a release after
   * pred's writes, which j, run after this, must see); an open one is the
   * expected value of the CAS (acq_rel, whose failure acquires). */
  int64_t h = ws_i64_load(&pred->state, ws_acquire);
  if ((h & STATE_OPEN) && job_forked(pred)) {
    /* The parent's, in a child of fork(): it never completes here. */
    edge_undo(j, e);
    return EOWNERDEAD;
  }
  for (;;) {
    if (!(h & STATE_OPEN)) {
      /* pred is complete, its status final: the edge is satisfied now. */
      edge_undo(j, e);
      int status = (int)(h >> STATUS_SHIFT);
      if (status) ws_ctx_fail(&j->unit, status);
      return 0;
    }
    e->next = state_list(h);
    /* Release: the edge, and j's initialisation, before the completer
     * (which acquires) reads them. The flags stay as they are. */
    if (ws_i64_cas(&pred->state, &h, (int64_t)(uintptr_t)e | (h & STATE_FLAGS), ws_acq_rel)) {
      ws_job_hold(j); /* its release is pred's completer's */
      return 0;
    }
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

static int job_start(pool_job_t *pj) {
  ws_job *j = ws_job_unstarted(pj);
  if (!j) return EINVAL;
  job_mark_started(j);
  release_here(j, 0, UNSTARTED - ws_u32_load(&j->holds, ws_relaxed));
  return 0;
}

static int job_submit(pool_t *pool, pool_job_t *pj, pool_fn fn, void *arg) {
  int rc = pool_job_init(pj, pool, fn, arg);
  if (rc) return rc;
  ws_job *j = (ws_job *)pj;
  ws_worker *w = ws_self();
  if (!(w && w->pool == j->pool) && (rc = ws_enter(j->pool)) != 0) {
    /* Refused before anything ran: complete, so a wait returns it. */
    job_mark_started(j);
    complete_refused(j, rc);
    return rc;
  }
  job_start(pj);
  if (!(w && w->pool == j->pool)) ws_leave(j->pool);
  return 0;
}

/* From a profiled strand, a start's time (its pushes, a wake) is the
 * runtime's, as a submission's (pool.c). */
int pool_job_start(pool_job_t *pj) {
  uint64_t x = ws_prof_entry();
  return x ? ws_prof_skipped(x, job_start(pj)) : job_start(pj);
}

int pool_job_submit(pool_t *pool, pool_job_t *pj, pool_fn fn, void *arg) {
  uint64_t x = ws_prof_entry();
  return x ? ws_prof_skipped(x, job_submit(pool, pj, fn, arg)) : job_submit(pool, pj, fn, arg);
}

static int status_of(int64_t state) { return (int)(state >> STATUS_SHIFT); }

int pool_job_wait(pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  /* Acquire: the job's writes (its function's) before its completion. */
  int64_t v = ws_i64_load(&j->state, ws_acquire);
  if (!(v & STATE_OPEN)) return status_of(v);
  if (job_forked(j)) return EOWNERDEAD; /* the parent's: never completes here */
  /* From j's own function, or work nested in it (a frame it spawned, a
   * group begun in it, their children, a loop or isolated call inside):
   * j completes after that returns. */
  for (const ws_ctx *c = ws_ctx_current(); c; c = c->parent)
    if (c == &j->unit) return EDEADLK;
  struct pool *p = j->pool;
  ws_latch done = ws_latch_zero(&j->state, STATE_OPEN, STATE_WAITER);
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
  return status_of(ws_i64_load(&j->state, ws_acquire));
}

int pool_job_status(const pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  int64_t v = ws_i64_load(&j->state, ws_acquire);
  if (!(v & STATE_OPEN)) return status_of(v);
  return job_forked(j) ? EOWNERDEAD : EINPROGRESS;
}

int pool_job_cancel(pool_job_t *pj) {
  ws_job *j = job_valid(pj);
  if (!j) return EINVAL;
  /* The parent's open job: its unit is the parent's threads' to read. */
  if ((ws_i64_load(&j->state, ws_acquire) & STATE_OPEN) && job_forked(j)) return EOWNERDEAD;
  ws_ctx_cancel(&j->unit);
  return 0;
}
