/* SPDX-License-Identifier: MIT */
/* The submit wrapper (scheduler.h; docs/design.md 9): pool_submit
 * tasks as schedulable nodes, their completion accounting, and the pushes
 * of submissions onto a worker's deque or the global queue. */
#include <errno.h>

#include "split.h"

/* A pool_submit task as a schedulable node: how a submission from inside
 * the pool goes on the worker's deque, and how a worker takes a plain
 * fn(arg) off the global queue. */
typedef struct submit_task {
  ws_task hdr;
  pool_fn fn;
  void *arg;
} submit_task;

static void submit_exec(ws_task *t, ws_worker *w) {
  submit_task *st = (submit_task *)t;
  pool_fn fn = st->fn;
  void *arg = st->arg;
  ws_node_free(ws_node_of(st), &w->nodes);
  uint64_t t0 = ws_trace_t0(w);
  fn(arg);
  ws_trace_task(w, (ws_fnptr)fn, t0);
  ws_submit_finished(w);
}

ws_task *ws_submit_task(ws_worker *w, pool_fn fn, void *arg) {
  ws_node *n = ws_node_alloc(&w->nodes);
  if (!n) return NULL;
  submit_task *st = (submit_task *)n->payload;
  st->hdr.exec = submit_exec;
  st->fn = fn;
  st->arg = arg;
  return &st->hdr;
}

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
  uint64_t finished = 0;
  for (unsigned i = 0; i < p->nthreads; i++) finished += ws_u64_load(&p->workers[i]->finished, ws_seq_cst);
  uint64_t submitted = ws_u64_load(&p->gq.fns_pushed, ws_relaxed);
  for (unsigned i = 0; i < p->nthreads; i++) submitted += ws_u64_load(&p->workers[i]->submitted, ws_relaxed);
  return submitted == finished;
}

/* Owner only: count n submissions from worker w before they can run. */
static void count_submitted(ws_worker *w, int64_t n) {
  ws_u64_store(&w->submitted, ws_u64_load(&w->submitted, ws_relaxed) + (uint64_t)n, ws_relaxed);
}

/* A submission counted by w that did not happen after all: the count goes
 * back, and a waiter that saw it is told when w next runs out of work. */
static void uncount_submitted(ws_worker *w, int64_t n) {
  count_submitted(w, -n);
  w->announce_idle = true;
}

/* From a worker of the pool: one task onto its own deque, at the cost of a
 * node from the worker's cache and a push. */
int ws_submit_one_inside(ws_worker *w, pool_fn fn, void *arg) {
  ws_task *t = ws_submit_task(w, fn, arg);
  if (!t) return ENOMEM;
  count_submitted(w, 1);
  if (ws_push(w, t) != 0) {
    uncount_submitted(w, 1);
    ws_node_free(ws_node_of(t), &w->nodes);
    return ENOMEM;
  }
  return 0;
}

/* Gives back a list of nodes linked through `next` (submit_inside). */
static void free_nodes(ws_node *nodes, ws_worker *w) {
  while (nodes) {
    ws_node *next = nodes->next;
    ws_node_free(nodes, &w->nodes);
    nodes = next;
  }
}

/* From a worker of the pool: n tasks onto its own deque, all or none. The
 * nodes come first (from the worker's cache), then the deque makes room
 * for all of them and for the private frames ws_push_n publishes ahead of
 * them, so the pushes themselves cannot fail. */
int ws_submit_inside(ws_worker *w, pool_fn fn, void *const *args, size_t n) {
  enum { CHUNK = 64 };
  if (n == 1) return ws_submit_one_inside(w, fn, args ? args[0] : NULL);
  ws_node *nodes = NULL;
  for (size_t i = 0; i < n; i++) {
    ws_task *t = ws_submit_task(w, fn, args ? args[i] : NULL);
    if (!t) {
      free_nodes(nodes, w);
      return ENOMEM;
    }
    ws_node *nd = ws_node_of(t);
    nd->next = nodes; /* the list is newest first; pushed oldest first below */
    nodes = nd;
  }
  size_t priv = (size_t)(ws_top() - w->priv_lo);
  if (ws_deque_reserve(&w->dq, (int64_t)(n + priv)) != 0) {
    free_nodes(nodes, w);
    return ENOMEM;
  }
  count_submitted(w, (int64_t)n);
  ws_task *chunk[CHUNK];
  size_t left = n;
  while (left) {
    size_t k = left < CHUNK ? left : CHUNK;
    /* nodes runs newest first: fill the chunk from its end, so each push
     * keeps the submission order from bottom to top. */
    for (size_t i = k; i-- > 0;) {
      chunk[i] = (ws_task *)nodes->payload;
      nodes = nodes->next;
    }
    left -= k;
    int rc = ws_push_n(w, chunk, k);
    WS_ASSERT(rc == 0); /* room was reserved, private frames included */
    (void)rc;
  }
  return 0;
}

/* From outside: stored by value in the global queue, one lock for all n,
 * counted under it (fns_pushed). */
int ws_submit_outside(struct pool *p, pool_fn fn, void *const *args, size_t n) {
  int rc = ws_gqueue_push_fns(&p->gq, fn, args, n);
  if (rc == 0) ws_sleep_notify(&p->sleep);
  return rc;
}

int ws_push_global(struct pool *p, ws_task *t) {
  int rc = ws_gqueue_push_task(&p->gq, t);
  if (rc == 0) ws_sleep_notify(&p->sleep);
  return rc;
}
