/* SPDX-License-Identifier: MIT */
/* The work/span profile (pool_profile_begin/end, WSPOOL_PROFILE;
 * docs/design.md 15.1): per strand, the span so far, after Cilkview's
 * "spawn forks the clock, sync takes the max".
 *
 * A strand is the code a thread runs between two of the runtime's
 * boundaries (a spawn, a sync, a task's start and end). Each thread keeps
 * the strand it runs in `ws__strand`: the span of the longest path of
 * strands that ends at the running segment's start t0, and the number of
 * continuations on that path (each a place a steal would cost, for the
 * burdened span). A cut at time x ends the segment: x - t0 joins the work
 * (the thread's worker's counter, or the pool's for outside threads) and
 * the span. Time inside the runtime between a cut and the next segment's
 * start is neither (a wait, a steal, the profile's own bookkeeping).
 *
 * A spawn cuts and gives the child the span at that point; the child's
 * strand starts there on whatever thread runs it, and its end span is left
 * where the sync reads it; the sync's thread cuts, waits, and continues at
 * the larger of its own span and the child's. A loop's chunks each start
 * at 0; the loop's span is the longest chunk per item (the items of a
 * chunk are independent, and a chunk's size depends on the number of
 * workers), added to the caller's. Submitted tasks and jobs are separate
 * computations, from 0; group children start at their spawner's span; the
 * ends of both go to the pool's `comp` maximum, which the region's span
 * includes, when they began in that region (`gen`, ws_prof_comp): one
 * begun earlier adds its time to the work and its span to no region.
 *
 * Off, the cost is one relaxed load of `on` in the slow paths (spawn's
 * publication, sync off the inline path, a loop, a submitted task's run):
 * the inline paths carry nothing. On, every spawn goes through the library
 * (the fast path stays closed, as for a trace) and every frame is public. */
#ifndef WS_PROFILE_H
#define WS_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "scheduler.h"

/* Ticks: the TSC on x86-64 (calibrated against CLOCK_MONOTONIC over the
 * region), nanoseconds elsewhere. */
static inline uint64_t ws_prof_now(void) {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
}

/* A span and its continuation count in one word, for the maxima other
 * threads update and for a frame's record: ticks above, count (saturated)
 * in the low 16 bits. A larger word is a longer span. */
static inline uint64_t ws_prof_pack(uint64_t span, uint64_t conts) {
  return span << 16 | (conts < 0xffff ? conts : 0xffff);
}
static inline uint64_t ws_prof_span_of(uint64_t packed) { return packed >> 16; }
static inline uint64_t ws_prof_conts_of(uint64_t packed) { return packed & 0xffff; }

typedef struct ws_strand {
  struct pool *pool; /* the profiled pool the strand belongs to, or NULL */
  ws_worker *w;      /* the thread's worker there, or NULL (outside) */
  uint64_t span;     /* ticks on the longest path up to t0 */
  uint64_t conts;    /* continuations on that path */
  uint64_t t0;       /* the running segment's start */
} ws_strand;
extern __thread ws_strand ws__strand __attribute__((tls_model("initial-exec")));

/* Drops the calling thread's root strand if its region is over without
 * it (ended by a destroy on another thread): the pool struct outlives it
 * (design.md 10.1), so reading it is safe. True when one is still live. */
static inline bool ws_prof_root_live(void) {
  struct pool *p = ws__strand.pool;
  if (!p || ws__strand.w) return p != NULL;
  /* Relaxed: this thread's own earlier store is what a live region shows;
   * any other value means the region is not this thread's any more. */
  if (ws_u32_load(&p->prof_on, ws_relaxed) && ws_ptr_load(&p->prof.root, ws_relaxed) == &ws__strand)
    return true;
  ws__strand = (ws_strand){0};
  return false;
}

/* The pool of the calling thread's strand, NULL for none: a root strand
 * whose region is over is dropped first, so that nothing it measures goes
 * to the region of a later pool in the same struct. */
static inline struct pool *ws_prof_strand_pool(void) {
  return ws__strand.pool && ws_prof_root_live() ? ws__strand.pool : NULL;
}

/* Is the profile of p on? Relaxed: a switch read at each decision, which
 * begin and end make only while the region's work is not running. */
static inline bool ws_prof_on(struct pool *p) { return ws_u32_load(&p->prof_on, ws_relaxed) != 0; }

/* p's region count now. Relaxed: read at a strand's start and end, which
 * a region's begin and end (the thread that calls them) bracket. */
static inline uint32_t ws_prof_gen(struct pool *p) { return ws_u32_load(&p->prof.gen, ws_relaxed); }

/* Ends the calling thread's running segment at x (a strand of a profiled
 * pool must be running). */
static inline void ws_prof_cut(uint64_t x) {
  ws_strand *s = &ws__strand;
  uint64_t d = x - s->t0;
  s->span += d;
  s->t0 = x;
  if (s->w)
    ws_counter_add(&s->w->prof_work, d);
  else
    ws_u64_fetch_add(&s->pool->prof.out_work, d, ws_relaxed);
}

/* Raises the maximum at *m to v (packed). */
static inline void ws_prof_max(ws_u64 *m, uint64_t v) {
  uint64_t old = ws_u64_load(m, ws_relaxed);
  /* Relaxed: a statistic read after the region's work has finished, which
   * the waits that ended it order before the read. */
  while (old < v && !ws_u64_cas(m, &old, v, ws_relaxed)) {
  }
}

/* A task's strand on the calling thread, from span (packed) on: returns
 * the strand it suspends, which ws_prof_task_end puts back. w is the
 * calling thread's worker of p, or NULL. */
static inline ws_strand ws_prof_task_begin(struct pool *p, ws_worker *w, uint64_t packed) {
  ws_strand old = ws__strand;
  ws__strand = (ws_strand){p, w, ws_prof_span_of(packed), ws_prof_conts_of(packed), 0};
  if (w)
    ws_counter_add(&w->prof_tasks, 1);
  else
    ws_u64_fetch_add(&p->prof.out_tasks, 1, ws_relaxed);
  ws__strand.t0 = ws_prof_now();
  return old;
}
/* Ends it: its end span (packed), the suspended strand back. */
static inline uint64_t ws_prof_task_end(ws_strand old) {
  ws_prof_cut(ws_prof_now());
  uint64_t end = ws_prof_pack(ws__strand.span, ws__strand.conts);
  ws__strand = old;
  return end;
}

/* A computation's end (packed) into the region's span, if the region it
 * began in (gen) is still p's: one begun before the region is not its. */
static inline void ws_prof_comp(struct pool *p, uint32_t gen, uint64_t end) {
  if (gen == ws_prof_gen(p)) ws_prof_max(&p->prof.comp, end);
}

/* Runs fn(arg) on worker w as a separate computation of p (a submitted
 * task, a job), its span from 0 into the pool's maximum. */
static inline void ws_prof_run_apart(struct pool *p, ws_worker *w, void (*fn)(void *), void *arg) {
  uint32_t gen = ws_prof_gen(p);
  ws_strand old = ws_prof_task_begin(p, w, 0);
  fn(arg);
  ws_prof_comp(p, gen, ws_prof_task_end(old));
}

/* fn(arg), a submitted task or a job, on worker w of its pool. */
static inline void ws_prof_run_task(ws_worker *w, void (*fn)(void *), void *arg) {
  if (__builtin_expect(ws_prof_on(w->pool), 0))
    ws_prof_run_apart(w->pool, w, fn, arg);
  else
    fn(arg);
}

/* Where a blocking operation of the calling thread (a loop, a sync of a
 * frame spawned from outside) starts: the caller's strand cut, and its
 * span; or 0 when the thread runs no strand of p (then the operation is a
 * computation of its own, ws_prof_resume gives its end to `comp`). */
static inline uint64_t ws_prof_pause_at(struct pool *p, uint64_t x) {
  if (ws_prof_strand_pool() != p) return 0;
  ws_prof_cut(x);
  return ws_prof_pack(ws__strand.span, ws__strand.conts);
}
static inline uint64_t ws_prof_pause(struct pool *p) { return ws_prof_pause_at(p, ws_prof_now()); }
/* The time a spawn entered the runtime, when the calling thread runs a
 * strand (a TLS test otherwise): its cut is there, not after the checks
 * that come before the pool is known. */
static inline uint64_t ws_prof_entry(void) { return ws_prof_strand_pool() ? ws_prof_now() : 0; }
/* After it: the caller's strand continues at the larger of its own span
 * and `end` (packed). */
static inline void ws_prof_resume(struct pool *p, uint64_t end) {
  ws_strand *s = &ws__strand;
  if (s->pool != p) {
    ws_prof_max(&p->prof.comp, end);
    return;
  }
  if (ws_prof_span_of(end) > s->span) {
    s->span = ws_prof_span_of(end);
    s->conts = ws_prof_conts_of(end);
  }
  s->t0 = ws_prof_now();
}

/* A fork of the calling thread's strand (a spawn): the child's start
 * (packed), cut at x (ws_prof_entry), and the continuation goes on from
 * the cut with one more place a steal would cost. */
static inline uint64_t ws_prof_fork(struct pool *p, uint64_t x) {
  uint64_t at = ws_prof_pause_at(p, x);
  if (ws__strand.pool == p) ws__strand.conts++;
  return at;
}

/* Around a wait that is no work of the calling strand (pool_wait_idle,
 * pool_group_wait, pool_job_wait): its time counts in neither work nor
 * span. A thread-local test when the thread runs no strand of p. */
static inline uint64_t ws_prof_wait_begin(struct pool *p) {
  return ws_prof_strand_pool() == p ? ws_prof_pause(p) : 0;
}
static inline void ws_prof_wait_end(struct pool *p, uint64_t at) {
  if (ws__strand.pool == p) ws_prof_resume(p, at);
}
/* After runtime code that is no work of the calling strand but no wait
 * either (a spawn's publication and its wake): the strand goes on from
 * now, its span as it was. */
static inline void ws_prof_resume_own(struct pool *p) { ws_prof_wait_end(p, 0); }
/* After a call into the runtime that is no work of the calling strand and
 * no wait (a submission: its lock, its wake), entered at x (ws_prof_entry,
 * 0 when the thread ran no strand): the strand cut at x goes on from now,
 * its span as it was. Whatever pool the call was for, the time is the
 * runtime's; a strand ended meanwhile (its pool destroyed) is left alone. */
static inline void ws_prof_skip(uint64_t x) {
  if (__builtin_expect(x != 0, 0) && ws_prof_strand_pool()) {
    ws_prof_cut(x);
    ws__strand.t0 = ws_prof_now();
  }
}
/* ws_prof_skip(x), then rc: `return x ? ws_prof_skipped(x, call) : call;`
 * around a call whose arguments are evaluated before the skip. */
static inline int ws_prof_skipped(uint64_t x, int rc) {
  ws_prof_skip(x);
  return rc;
}

/* Frames (forkjoin.c). A profiled spawn replaces the frame's fn and arg
 * with ws_prof_child and a record of these, from the pool's node
 * allocator; the frame's own sync frees it (profile.c; api.h). */
typedef struct ws_prof_rec {
  void (*fn)(void *);
  void *arg;
  struct pool *pool;
  uint64_t at;  /* packed: the spawn's span, then the child's end span */
  uint32_t gen; /* the region of the spawn (ws_prof_comp) */
} ws_prof_rec;
/* A profiled frame's function (split.c): the record's fn(arg) as a strand. */
void ws_prof_child(void *rec);
/* The function a frame runs, for a trace: the profiled one's own. */
static inline ws_fnptr ws_prof_fn_of(void (*fn)(void *), void *arg) {
  return (ws_fnptr)(fn == ws_prof_child ? ((ws_prof_rec *)arg)->fn : fn);
}
/* A successful steal's cost, ticks, on worker w. */
static inline void ws_prof_steal(ws_worker *w, uint64_t t) {
  ws_counter_add(&w->prof_steals, 1);
  ws_counter_add(&w->prof_steal_ticks, ws_prof_now() - t);
}

#endif /* WS_PROFILE_H */
