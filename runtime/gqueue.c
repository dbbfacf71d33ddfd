/* SPDX-License-Identifier: MIT */
/* The global FIFO queue: a ring that doubles when full, under one mutex. */
#include "gqueue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "count.h"
#include "mem.h"

enum { GQ_INITIAL = 256 };
/* Rings from this many entries (256 KiB) on are worth giving back when the
 * pool goes idle (ws_gqueue_grown); smaller ones are kept: trimming them
 * would cost an idle pool a wake for a few pages. */
enum { GQ_TRIM_FROM = 16384 };

/* Without allocator hooks, grown rings (above the first size) are mapped
 * pages of their own, so that freeing one gives its memory back to the
 * system at once: from malloc, a ring freed by a worker returns to the
 * arena of the producer that grew it, whose trim threshold glibc raises as
 * large blocks come and go, and stays resident (design.md 3). With hooks,
 * every ring is the program's: its allocator decides what goes back. */
enum { RING_MAPPED = 2 * GQ_INITIAL * sizeof(ws_gitem) };

static bool ring_mapped(const ws_gqueue *q, size_t bytes) {
  return bytes >= RING_MAPPED && !q->mem->alloc_fn;
}

static ws_gitem *ring_alloc(ws_gqueue *q, size_t cap) {
  size_t bytes = cap * sizeof(ws_gitem);
  if (!ring_mapped(q, bytes)) return ws_mem_alloc(q->mem, bytes);
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  ws_mem_count(q->mem, bytes);
  return m;
}

static void ring_free(ws_gqueue *q, ws_gitem *ring, size_t cap) {
  size_t bytes = cap * sizeof(ws_gitem);
  if (!ring) return;
  if (!ring_mapped(q, bytes)) {
    ws_mem_free(q->mem, ring, bytes);
  } else {
    ws_mem_count(q->mem, (uint64_t)0 - bytes);
    munmap(ring, bytes);
  }
}

int ws_gqueue_init(ws_gqueue *q, ws_mem *mem) {
  memset(q, 0, sizeof(*q));
  q->mem = mem;
  q->ring = ring_alloc(q, GQ_INITIAL);
  if (!q->ring) return ENOMEM;
  q->cap = GQ_INITIAL;
  pthread_mutexattr_t attr;
  int rc = pthread_mutexattr_init(&attr);
  if (rc) {
    ring_free(q, q->ring, q->cap);
    return rc;
  }
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  /* glibc's adaptive mutex spins a little before it sleeps. Producers and
   * takers hold the lock for a few dozen instructions, so a collision is
   * better waited out than slept through: a default mutex puts the
   * producer to sleep in the kernel and costs a wake (docs/design.md 3). */
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  rc = pthread_mutex_init(&q->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc) {
    ring_free(q, q->ring, q->cap);
    return rc;
  }
  ws_i64_store(&q->size_hint, 0, ws_relaxed);
  ws_u64_store(&q->fns_pushed, 0, ws_relaxed);
  q->full_at = WS_GQ_FULL;
  return 0;
}

void ws_gqueue_destroy(ws_gqueue *q, bool owned) {
  if (owned) pthread_mutex_destroy(&q->lock);
  ring_free(q, q->ring, q->cap);
  q->ring = NULL;
}

/* Under the lock: the entries into `ring` of `cap` slots (at least count),
 * in order from its front; the old ring is freed. */
static void move_ring(ws_gqueue *q, ws_gitem *ring, size_t cap) {
  for (size_t i = 0; i < q->count; i++) ring[i] = q->ring[(q->head + i) % q->cap];
  ring_free(q, q->ring, q->cap);
  q->ring = ring;
  q->cap = cap;
  q->head = 0;
  ws_u32_store(&q->grown, cap >= GQ_TRIM_FROM, ws_relaxed);
}

/* Room for `more` entries: doubles the ring as often as needed. */
static int reserve(ws_gqueue *q, size_t more) {
  if (more > SIZE_MAX / 2 / sizeof(ws_gitem) - q->count) return ENOMEM; /* no wrap below */
  if (q->count + more <= q->cap) return 0;
  size_t cap = q->cap;
  while (cap < q->count + more) {
    if (cap > SIZE_MAX / 2 / sizeof(ws_gitem)) return ENOMEM;
    cap *= 2;
  }
  ws_gitem *ring = ring_alloc(q, cap);
  if (!ring) return ENOMEM;
  move_ring(q, ring, cap);
  return 0;
}

void ws_gqueue_trim(ws_gqueue *q) {
  if (pthread_mutex_trylock(&q->lock) != 0) return;
  ws_gitem *ring;
  if (q->count == 0 && q->cap > GQ_INITIAL && (ring = ring_alloc(q, GQ_INITIAL)) != NULL)
    move_ring(q, ring, GQ_INITIAL);
  pthread_mutex_unlock(&q->lock);
}

/* Under the lock: the hint for lock-free "is anything there" checks
 * (relaxed: see ws_gqueue_maybe_nonempty). Every worker reads its line in
 * every search, so it is written only when its answer changes: after every
 * locked operation it is 0 when count is 0, 1 below full_at, else 2. A
 * push that keeps the level leaves it alone, so a flood from one producer
 * pulls the line away from the readers twice per take, not once per task. */
static void publish_count(ws_gqueue *q) {
  int64_t now = q->count == 0 ? 0 : q->count < q->full_at ? 1 : 2;
  if (ws_i64_load(&q->size_hint, ws_relaxed) != now) ws_i64_store(&q->size_hint, now, ws_relaxed);
}

int ws_gqueue_push_task(ws_gqueue *q, ws_task *task, unsigned flags) {
  int rc = 0;
  ws_count_event(WS_CNT_LOCK);
  pthread_mutex_lock(&q->lock);
  if (q->closed && !(flags & WS_GQ_FORCE)) {
    rc = ESHUTDOWN;
  } else if ((rc = reserve(q, 1)) == 0) {
    q->ring[(q->head + q->count) % q->cap] = (ws_gitem){NULL, task};
    q->count++;
    if (flags & WS_GQ_COUNTED) ws_u64_store(&q->fns_pushed, ws_u64_load(&q->fns_pushed, ws_relaxed) + 1, ws_relaxed);
    publish_count(q);
  }
  pthread_mutex_unlock(&q->lock);
  return rc;
}

int ws_gqueue_push_fns(ws_gqueue *q, ws_fn fn, void *const *args, size_t n) {
  int rc = 0;
  ws_count_event(WS_CNT_LOCK);
  pthread_mutex_lock(&q->lock);
  if (q->closed) {
    rc = ESHUTDOWN;
  } else if ((rc = reserve(q, n)) == 0) {
    size_t pos = (q->head + q->count) % q->cap;
    for (size_t i = 0; i < n; i++) {
      q->ring[pos] = (ws_gitem){fn, args ? args[i] : NULL};
      if (++pos == q->cap) pos = 0;
    }
    q->count += n;
    /* Relaxed under the lock: a reader that must see this count (a waiter
     * that saw one of these tasks finish) is ordered after the unlock by
     * the taker's lock and the finisher's release (submit.c). */
    ws_u64_store(&q->fns_pushed, ws_u64_load(&q->fns_pushed, ws_relaxed) + n, ws_relaxed);
    publish_count(q);
  }
  pthread_mutex_unlock(&q->lock);
  return rc;
}

size_t ws_gqueue_pop_batch(ws_gqueue *q, ws_gitem *out, size_t max) {
  /* A taker waits for the lock as a producer does (design.md 3: one that
   * gave up on a held lock was slower with four producers, and no faster
   * anywhere: bench/ab/takers-trylock.patch). */
  ws_count_event(WS_CNT_LOCK);
  pthread_mutex_lock(&q->lock);
  size_t n = q->count < max ? q->count : max;
  for (size_t i = 0; i < n; i++) {
    out[i] = q->ring[q->head];
    if (++q->head == q->cap) q->head = 0;
  }
  q->count -= n;
  /* Emptied: start again at the front. A ring that a flood once grew
   * stays large, and a short queue walking all of it would find every
   * line cold; restarting keeps such a queue in a few hot lines. */
  if (q->count == 0) q->head = 0;
  publish_count(q);
  pthread_mutex_unlock(&q->lock);
  return n;
}

void ws_gqueue_close(ws_gqueue *q) {
  pthread_mutex_lock(&q->lock);
  q->closed = true;
  pthread_mutex_unlock(&q->lock);
}
