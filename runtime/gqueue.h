/* SPDX-License-Identifier: MIT */
/* One lane of the pool's global queue: where work submitted from outside
 * the pool goes (Duffy's "global queue protected by a global lock"; the
 * pool has WS_LANES of them, docs/design.md 3.1). FIFO, a growable
 * ring under one mutex. Workers look here after their own deque and before
 * stealing. `size_hint` (0 when empty, 1 when it holds fewer than
 * `full_at` entries, 2 when at least) lets a worker skip the lock when the
 * queue is empty, and wait for a fuller one (worker.c); it is written under
 * the lock and read without it. */
#ifndef WS_GQUEUE_H
#define WS_GQUEUE_H

#include <pthread.h>
#include <stdbool.h>

#include "atomics.h"
#include "task.h"

/* An entry: a plain fn(arg) submitted from outside, stored by value so an
 * outside submit allocates nothing; or, with fn NULL, a runtime task in
 * `arg`. 16 bytes: every line of the ring moves from the producer's core to
 * a taker's and back, and a line of four entries instead of two and two
 * thirds moves a third fewer lines per task. */
typedef struct ws_gitem {
  ws_fn fn;
  void *arg;
} ws_gitem;

/* The runtime task of an entry, NULL for a plain fn(arg). */
static inline ws_task *ws_gitem_task(const ws_gitem *it) {
  return it->fn ? NULL : (ws_task *)it->arg;
}

struct ws_mem;

typedef struct ws_gqueue {
  pthread_mutex_t lock;
  struct ws_mem *mem; /* where rings come from (mem.h); set at init */
  ws_gitem *ring;
  size_t cap, head, count; /* under lock */
  bool closed;             /* under lock */
  /* Plain fn(arg) entries and counted tasks (jobs) ever pushed: the
   * count of outside submissions (submit.c, "Completion accounting").
   * Written under the lock, read without it. */
  ws_u64 fns_pushed;
  ws_u32 grown; /* 1 while the ring is worth trimming (gqueue.c): a hint */
  /* WS_GQ_FULL, or less in a pool whose bound keeps lanes shorter
   * (pool.c): set after init, before any use. */
  size_t full_at;
  WS_ALIGNED ws_i64 size_hint;
} ws_gqueue;

int ws_gqueue_init(ws_gqueue *q, struct ws_mem *mem);
/* `owned`: false for a queue inherited across fork(), whose lock may be
 * held by a thread of the parent: only the ring is freed. */
void ws_gqueue_destroy(ws_gqueue *q, bool owned);
/* How ws_gqueue_push_task pushes: COUNTED, it counts in fns_pushed, as a
 * submission (a job); FORCE, even when the queue is closed (a job whose
 * submission was reserved before the close: submit.c, ws_reserve). */
enum { WS_GQ_COUNTED = 1, WS_GQ_FORCE = 2 };
/* A runtime task: 0, ENOMEM, or ESHUTDOWN when the queue is closed (and
 * not FORCE). `flags`: WS_GQ_*. */
int ws_gqueue_push_task(ws_gqueue *q, ws_task *task, unsigned flags);
/* fn(args[i]) for i < n (fn(NULL) each when args is NULL), all or none:
 * 0, ENOMEM or ESHUTDOWN (when closed: these are always pool_submit's). */
int ws_gqueue_push_fns(ws_gqueue *q, ws_fn fn, void *const *args, size_t n);
/* Takes the oldest entries, `max` of them or all when fewer, into out[];
 * returns how many, 0 when empty. */
size_t ws_gqueue_pop_batch(ws_gqueue *q, ws_gitem *out, size_t max);
/* From now on pushes fail with ESHUTDOWN. */
void ws_gqueue_close(ws_gqueue *q);
/* Gives back a grown ring that is empty: the first size again. Does
 * nothing when the lock is held, entries remain, or memory is short. */
void ws_gqueue_trim(ws_gqueue *q);

/* Relaxed: a hint for when to try ws_gqueue_trim. */
static inline bool ws_gqueue_grown(ws_gqueue *q) { return ws_u32_load(&q->grown, ws_relaxed) != 0; }

static inline bool ws_gqueue_maybe_nonempty(ws_gqueue *q) {
  /* Relaxed: a miss is covered by the sleep protocol (the producer's
   * notify after its push against the sleeper's registration and barrier
   * before its last look: docs/design.md 5.2, 5.3). */
  return ws_i64_load(&q->size_hint, ws_relaxed) > 0;
}

/* Entries from which a lane's hint says "full": worth a visit at once
 * (full_at's default). */
enum { WS_GQ_FULL = 128 };

static inline bool ws_gqueue_maybe_full(ws_gqueue *q) {
  /* Relaxed: a hint; a worker that waits for it takes a lane that stays
   * short anyway a few yields later (worker.c). */
  return ws_i64_load(&q->size_hint, ws_relaxed) >= 2;
}

#endif /* WS_GQUEUE_H */
