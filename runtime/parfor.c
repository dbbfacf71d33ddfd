/* SPDX-License-Identifier: MIT */
/* The range partitioner: pool_parallel_for and pool_parallel_reduce
 * (docs/design.md 12, where the arguments are), after the work-stealing
 * range and partitioner of "Load-balancing partitioner with work
 * stealing", parts one and two.
 *
 * A range is a task of chunks (cs >= the user's grain items each). The
 * owner runs [low, mid) a chunk at a time, privately; [mid, high) is the
 * steal range, one word that thieves claim whole with one CAS. Only the
 * owner ever computes a mid, from its own exact low, so low stays private
 * and each CAS is correct on its own (12.2). A thief keeps one half of what
 * it took as a range of its own and pushes the other half. Thieves find a
 * running range through its steal handle, a second task header pushed on
 * the owner's deque; the range is reference-counted (owner + handles).
 *
 *     owner's private part        steal range
 *   [ low ............. mid ) [ mid ........ high )
 *
 * Distribution (part two): static first, one contiguous piece per worker.
 * Termination: a remaining-items count; the range that takes it to zero
 * sets `done`, the caller's latch (latch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "profile.h"

/* Chunk indices are 32-bit so mid and high share one CAS word; cs grows
 * for ranges of more than 2^31 chunks so no index ever overflows. */
#define PF_MAX_CHUNKS ((size_t)1 << 31)
/* Automatic grain: about this many chunks per worker. */
enum { PF_AUTO_CHUNKS_PER_WORKER = 1024 };

typedef struct pf_job {
  pool_range_fn body;
  pool_try_range_fn try_body; /* instead of body: pool_parallel_for_try */
  void *ctx;
  /* Reduce: its indices are blocks of `block` items, `items` in all (the
   * skipped_items statistic counts items); 0 for a plain loop. */
  size_t block, items;
  ws_ctx unit; /* the loop as a unit of work (cancel.h) */
  struct pool *pool;
  size_t cs;         /* items per chunk */
  ws_size remaining; /* items not yet run */
  ws_u32 done;       /* 1 once remaining reached 0 */
  bool outside;      /* the caller blocks on the pool's event */
  bool prof;         /* profiled (profile.h) */
  ws_u64 prof_item;  /* then: the longest chunk's span per item (packed) */
} pf_job;

typedef struct pf_range {
  ws_task start;  /* run as a new range (owner) */
  ws_task handle; /* steal from the running range */
  pf_job *job;
  size_t base;    /* first item */
  size_t n;       /* items */
  ws_u64 split;   /* mid << 32 | high, chunk indices */
  ws_u32 refs;
  ws_u32 handle_out; /* the handle is on a deque */
  ws_ptr owner;      /* the worker running it, or NULL (a hint for thieves) */
} pf_range;

static inline uint64_t pack(uint64_t mid, uint64_t high) { return mid << 32 | high; }
static inline size_t mid_of(uint64_t s) { return (size_t)(s >> 32); }
static inline size_t high_of(uint64_t s) { return (size_t)(s & 0xffffffffu); }

static inline size_t nchunks(size_t n, size_t cs) { return (n - 1) / cs + 1; }

/* Items [lo, hi) of chunk k of a range of n items. No overflow: for
 * k + 1 < nch, (k + 1) * cs < n. */
static inline void chunk_bounds(size_t n, size_t cs, size_t nch, size_t k, size_t *lo,
                                size_t *hi) {
  *lo = k * cs;
  *hi = k + 1 == nch ? n : (k + 1) * cs;
}

static void range_start_exec(ws_task *t, ws_worker *w);
static void range_handle_exec(ws_task *t, ws_worker *w);

static pf_range *range_new(pf_job *job, size_t base, size_t n) {
  pf_range *r = ws_mem_alloc(&job->pool->mem, sizeof(*r));
  if (!r) return NULL;
  r->start.exec = range_start_exec;
  r->handle.exec = range_handle_exec;
  r->job = job;
  r->base = base;
  r->n = n;
  ws_u64_store(&r->split, 0, ws_relaxed);
  ws_u32_store(&r->refs, 1, ws_relaxed);
  ws_u32_store(&r->handle_out, 0, ws_relaxed);
  ws_ptr_store(&r->owner, NULL, ws_relaxed);
  return r;
}

/* Drops a reference; w is a worker of the range's pool (the job itself
 * may be gone by the last release). */
static void range_release(pf_range *r, ws_worker *w) {
  /* acq_rel: the last holder sees every other holder's accesses. */
  uint32_t before = ws_u32_fetch_add(&r->refs, (uint32_t)-1, ws_acq_rel);
  WS_ASSERT(before >= 1);
  if (before == 1) ws_mem_free(&w->pool->mem, r, sizeof(*r));
}

static void job_progress(pf_job *job, size_t items) {
  struct pool *p = job->pool;
  bool outside = job->outside;
  /* acq_rel: the range that reaches zero has seen every body's effects
   * (release sequence on `remaining`) and passes them on through `done`. */
  size_t before = ws_size_fetch_add(&job->remaining, (size_t)0 - items, ws_acq_rel);
  WS_ASSERT(before >= items); /* every item runs once */
  if (before != items) return;
  /* The latch's last touch (latch.h): the job may be gone once `done` is
   * visible, so only the pool is touched after. */
  ws_u32_store(&job->done, 1, ws_seq_cst);
  ws_latch_notify(p, outside ? WS_WAKE_OUTSIDE : WS_WAKE_WORKER);
}

/* The user's items behind indices [lo, hi) of the loop. */
static size_t skipped_items(const pf_job *job, size_t lo, size_t hi) {
  if (!job->block) return hi - lo;
  /* Block lo starts inside the items, so lo * block does not overflow;
   * hi * block may (the last block is short), and past the last full
   * block the end is the items' end. */
  size_t end = hi <= job->items / job->block ? hi * job->block : job->items;
  return end - lo * job->block;
}

/* Runs the items [lo, hi) in the calling thread's current scope, which is
 * the loop's; or skips them, once the loop is cancelled (counted on the
 * worker w, if the caller is one). The check comes before every chunk, so
 * after a cancel at most the chunk each worker is starting still starts
 * (docs/design.md 5.8). */
static inline void run_chunk(pf_job *job, size_t lo, size_t hi, ws_worker *w) {
  if (ws_ctx_cancelled(&job->unit)) {
    if (w) ws_counter_add(&w->stats.skipped_items, skipped_items(job, lo, hi));
    return;
  }
  ws_strand old = {0};
  if (__builtin_expect(job->prof, 0)) old = ws_prof_task_begin(job->pool, w, 0);
  if (!job->try_body) {
    job->body(lo, hi, job->ctx);
  } else {
    int err = job->try_body(lo, hi, job->ctx);
    if (err) ws_ctx_fail(&job->unit, err > 0 ? err : EINVAL);
  }
  if (__builtin_expect(job->prof, 0)) {
    /* The items of a chunk are independent: the loop's span is the
     * longest chunk's per item (profile.h). */
    uint64_t end = ws_prof_task_end(old);
    ws_prof_max(&job->prof_item, ws_prof_pack(ws_prof_span_of(end) / (hi - lo), ws_prof_conts_of(end)));
  }
}

/* Runs chunks [from, to) of a range of n items at base, without exposing
 * anything (no deque, or no memory to split). */
static void run_chunks(pf_job *job, size_t base, size_t n, size_t from, size_t to) {
  size_t nch = nchunks(n, job->cs);
  ws_worker *w = ws_self();
  if (w && w->pool != job->pool) w = NULL;
  for (size_t k = from; k < to; k++) {
    size_t lo, hi;
    chunk_bounds(n, job->cs, nch, k, &lo, &hi);
    run_chunk(job, base + lo, base + hi, w);
  }
}

static void expose_handle(ws_worker *w, pf_range *r) {
  if (ws_u32_load(&r->handle_out, ws_relaxed)) return;
  ws_u32_fetch_add(&r->refs, 1, ws_relaxed); /* the handle's reference */
  ws_u32_store(&r->handle_out, 1, ws_relaxed);
  if (ws_push(w, &r->handle) != 0) {
    /* No room: the range just stays unstealable for now. */
    ws_u32_store(&r->handle_out, 0, ws_relaxed);
    ws_u32_fetch_add(&r->refs, (uint32_t)-1, ws_relaxed);
  }
}

/* Run range r as its owner, worker w (the calling thread's). Consumes the
 * caller's reference. */
static void range_run(ws_worker *w, pf_range *r) {
  pf_job *job = r->job;
  const size_t cs = job->cs, n = r->n, nch = nchunks(n, cs);
  size_t low = 0, mid = nch, items = 0;
  uint64_t t0 = ws_trace_t0(w);
  if (nch >= 2) {
    mid = nch - nch / 2; /* expose the upper half */
    ws_ptr_store(&r->owner, w, ws_relaxed);
  }
  /* Release: a thief that reads a steal range sees the range's fields. It
   * found the range through a deque push, which already orders them; the
   * release keeps that true for re-exposures too. */
  ws_u64_store(&r->split, pack(mid, nch), ws_release);
  if (mid < nch) expose_handle(w, r);

  for (;;) {
    while (low < mid) {
      size_t lo, hi;
      chunk_bounds(n, cs, nch, low, &lo, &hi);
      run_chunk(job, r->base + lo, r->base + hi, w);
      items += hi - lo;
      low++;
      uint64_t s = ws_u64_load(&r->split, ws_relaxed);
      if (mid_of(s) == high_of(s) && mid - low >= 2) {
        /* A thief emptied the steal range: expose the upper half of what
         * we still hold. Only the owner writes an empty steal range. */
        size_t newmid = low + (mid - low) / 2;
        ws_u64_store(&r->split, pack(newmid, mid), ws_release);
        mid = newmid;
        expose_handle(w, r);
      } else if (mid_of(s) != high_of(s)) {
        /* Work is exposed: make sure a handle to it is on a deque (we may
         * have consumed our own while helping further down this stack). */
        expose_handle(w, r);
      }
    }
    /* Private part done: claim the lower half of the steal range. */
    uint64_t s = ws_u64_load(&r->split, ws_acquire);
    size_t high = high_of(s);
    if (mid_of(s) != mid || mid >= high) break; /* all taken by thieves */
    size_t newmid = mid + (high - mid + 1) / 2;
    if (!ws_u64_cas(&r->split, &s, pack(newmid, high), ws_acq_rel)) break;
    mid = newmid;
  }
  ws_ptr_store(&r->owner, NULL, ws_relaxed);
  range_release(r, w);
  ws_trace_task(w, (ws_fnptr)job->body, t0);
  if (items) job_progress(job, items);
}

static void range_start_exec(ws_task *t, ws_worker *w) {
  pf_range *r = (pf_range *)((char *)t - offsetof(pf_range, start));
  ws_scope_set_ctx(ws__scope, &r->job->unit);
  range_run(w, r);
}

static void range_handle_exec(ws_task *t, ws_worker *w) {
  pf_range *r = (pf_range *)((char *)t - offsetof(pf_range, handle));
  ws_u32_store(&r->handle_out, 0, ws_relaxed);
  /* Relaxed: only our own store can make this equal to w. */
  if (ws_ptr_load(&r->owner, ws_relaxed) == w) {
    /* Our own running range, further up this stack: stealing from it would
     * only nest it deeper. Its owner re-exposes the handle when useful. */
    range_release(r, w);
    return;
  }
  pf_job *job = r->job;
  uint64_t s = ws_u64_load(&r->split, ws_acquire);
  size_t mid = mid_of(s), high = high_of(s);
  bool stolen = false;
  while (mid < high) {
    if (ws_u64_cas(&r->split, &s, pack(mid, mid), ws_acq_rel)) {
      stolen = true;
      break;
    }
    mid = mid_of(s);
    high = high_of(s);
  }
  if (!stolen) {
    range_release(r, w);
    return;
  }
  ws_scope_set_ctx(ws__scope, &job->unit); /* items of a live job are ours now */
  /* Items [lo, hi) of the victim are ours. Copy what we need, then let go of
   * the victim. */
  size_t nch = nchunks(r->n, job->cs), lo, hi, tmp;
  chunk_bounds(r->n, job->cs, nch, mid, &lo, &tmp);
  chunk_bounds(r->n, job->cs, nch, high - 1, &tmp, &hi);
  lo += r->base;
  hi += r->base;
  range_release(r, w);

  size_t count = high - mid;
  if (count >= 2) {
    /* Keep the lower half, push the upper half as a new range task. */
    size_t cut = lo + (count / 2) * job->cs;
    pf_range *upper = range_new(job, cut, hi - cut);
    if (upper && ws_push(w, &upper->start) == 0) {
      hi = cut;
    } else {
      if (upper) ws_mem_free(&w->pool->mem, upper, sizeof(*upper));
    }
  }
  pf_range *mine = range_new(job, lo, hi - lo);
  if (mine) {
    range_run(w, mine);
  } else {
    run_chunks(job, lo, hi - lo, 0, nchunks(hi - lo, job->cs));
    job_progress(job, hi - lo);
  }
}

static size_t auto_chunk(size_t n, unsigned workers) {
  size_t target = (size_t)workers * PF_AUTO_CHUNKS_PER_WORKER;
  size_t cs = n / target;
  return cs ? cs : 1;
}

static int parfor_run(struct pool *p, ws_worker *w, bool inside, size_t begin, size_t end,
                      size_t grain, pf_job *job);

/* The loop [begin, end) of job on pool, begin < end for *ran (if given):
 * whether it started (its body may have run; the unit's result is the
 * loop's), or was refused (no effect). */
static int parfor(pool_t *pool, size_t begin, size_t end, size_t grain, pf_job *job,
                  bool *ran) {
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_worker *w = ws_self();
  bool inside = w && w->pool == p;
  /* From outside the whole loop is inside the pool's gate (pool.c): the
   * pieces it runs itself end in job_progress, which notifies the pool.
   * An empty one too: a destroyed pool, or one of the parent after a
   * fork, refuses every call (wspool.h, \ref faults). */
  if (!inside && (rc = ws_enter(p)) != 0) return rc;
  if (begin == end) {
    if (!inside) ws_leave(p);
    return 0;
  }
  /* The loop is the calling thread's current unit while it runs pieces
   * here and waits (a wait's helping runs other tasks in scopes of their
   * own). */
  ws_scope sc;
  ws_ctx_init(&job->unit, ws_ctx_current());
  ws_scope_enter(&sc, &job->unit);
  job->prof = ws_prof_on(p);
  uint64_t at = job->prof ? ws_prof_pause(p) : 0;
  rc = parfor_run(p, w, inside, begin, end, grain, job);
  /* ESHUTDOWN: refused before anything was queued or ran. */
  if (ran) *ran = rc != ESHUTDOWN;
  if (job->prof) {
    /* The caller's strand goes on after the loop's span (a fork of every
     * chunk, one more continuation). */
    uint64_t item = ws_u64_load(&job->prof_item, ws_relaxed);
    ws_prof_resume(p, ws_prof_pack(ws_prof_span_of(at) + ws_prof_span_of(item),
                                   ws_prof_conts_of(at) + ws_prof_conts_of(item) + 1));
  }
  ws_scope_pop(&sc);
  if (!inside) ws_leave(p);
  return rc ? rc : ws_ctx_result(&job->unit);
}

int pool_parallel_for(pool_t *pool, size_t begin, size_t end, size_t grain, pool_range_fn body,
                      void *ctx) {
  if (begin > end || !body) return EINVAL;
  pf_job job = {.body = body, .ctx = ctx};
  return parfor(pool, begin, end, grain, &job, NULL);
}

int pool_parallel_for_try(pool_t *pool, size_t begin, size_t end, size_t grain,
                          pool_try_range_fn body, void *ctx) {
  if (begin > end || !body) return EINVAL;
  pf_job job = {.try_body = body, .ctx = ctx};
  return parfor(pool, begin, end, grain, &job, NULL);
}

static int parfor_run(struct pool *p, ws_worker *w, bool inside, size_t begin, size_t end,
                      size_t grain, pf_job *job) {
  size_t n = end - begin;
  job->pool = p;
  job->outside = !inside;
  size_t cs = grain ? grain : auto_chunk(n, p->nthreads);
  size_t min_cs = n / PF_MAX_CHUNKS + 1;
  job->cs = cs > min_cs ? cs : min_cs;
  ws_size_store(&job->remaining, n, ws_relaxed);
  ws_u32_store(&job->done, 0, ws_relaxed);

  /* Static split into one piece per worker (fewer if there are few chunks).
   * From a worker, pieces 1.. go on our deque first, last piece first,
   * then we run piece 0. From outside they go on the global queue, a FIFO:
   * piece 0 first, so that the front of the range starts first (a search
   * that stops at an early hit waits for the front). */
  size_t nch = nchunks(n, job->cs);
  size_t pieces = p->nthreads < nch ? p->nthreads : nch;
  bool started = false; /* a piece was queued or ran here */
  for (size_t k = 0; k < pieces; k++) {
    size_t i = inside ? pieces - 1 - k : k;
    size_t lo_ch = nch / pieces * i + (i < nch % pieces ? i : nch % pieces);
    size_t hi_ch = lo_ch + nch / pieces + (i < nch % pieces ? 1 : 0);
    size_t lo = lo_ch * job->cs, hi = hi_ch == nch ? n : hi_ch * job->cs;
    pf_range *r = range_new(job, begin + lo, hi - lo);
    if (inside && i == 0 && r) {
      range_run(w, r);
      continue;
    }
    if (r && inside && ws_push(w, &r->start) == 0) continue;
    if (r && !inside) {
      int rc = ws_push_global(p, &r->start, 0);
      if (rc == 0) {
        started = true;
        continue;
      }
      if (rc == ESHUTDOWN && !started) {
        ws_mem_free(&p->mem, r, sizeof(*r));
        return ESHUTDOWN; /* nothing ran, nothing queued */
      }
    }
    /* No memory or no room: run this piece here, exposing nothing. */
    if (r) ws_mem_free(&p->mem, r, sizeof(*r));
    started = true;
    run_chunks(job, begin + lo, hi - lo, 0, hi_ch - lo_ch);
    job_progress(job, hi - lo);
  }
  ws_latch done = ws_latch_value(&job->done, 1);
  ws_latch_wait(p, &done, NULL);
  return 0;
}

/* Reduce: fixed blocks, each accumulated from the identity, then combined
 * left to right in index order, so a combine that is associative but not
 * commutative is still right. */

enum { RED_DETERMINISTIC_BLOCKS = 1024, RED_BLOCKS_PER_WORKER = 64 };

typedef struct red_ctx {
  const pool_reducer_t *r;
  size_t begin, n, bs, nblocks;
  unsigned char *accs;
} red_ctx;

static void red_body(size_t b0, size_t b1, void *arg) {
  red_ctx *c = arg;
  for (size_t b = b0; b < b1; b++) {
    void *acc = c->accs + b * c->r->size;
    size_t lo = b * c->bs, hi = b + 1 == c->nblocks ? c->n : (b + 1) * c->bs;
    memcpy(acc, c->r->identity, c->r->size);
    c->r->body(c->begin + lo, c->begin + hi, acc, c->r->ctx);
  }
}

int pool_parallel_reduce(pool_t *pool, size_t begin, size_t end, size_t grain,
                         const pool_reducer_t *r, void *result) {
  if (begin > end || !r || !result || !r->body || !r->combine || !r->identity || !r->size)
    return EINVAL;
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  /* The accumulators come from the pool's allocator: from outside, inside
   * its gate, so that destroy cannot begin (and a new pool take the
   * struct, with other hooks) between the allocation and its free. The
   * gate also refuses a destroyed pool and one of the parent after a fork
   * (wspool.h, \ref errors): *result untouched. */
  ws_worker *w = ws_self();
  bool inside = w && w->pool == p;
  if (!inside && (rc = ws_enter(p)) != 0) return rc;
  size_t n = end - begin;
  size_t target = r->deterministic ? RED_DETERMINISTIC_BLOCKS
                                   : (size_t)p->nthreads * RED_BLOCKS_PER_WORKER;
  size_t bs = n / target + (n % target != 0);
  if (bs < grain) bs = grain;
  red_ctx c = {r, begin, n, bs, n ? nchunks(n, bs) : 0, NULL};
  if (n == 0) {
    memcpy(result, r->identity, r->size);
    rc = 0;
  } else if (c.nblocks > SIZE_MAX / r->size) {
    rc = ENOMEM;
  } else if ((c.accs = ws_mem_alloc(&p->mem, c.nblocks * r->size)) != NULL) {
    pf_job job = {.body = red_body, .ctx = &c, .block = bs, .items = n};
    bool ran = false;
    rc = parfor(p, 0, c.nblocks, 1, &job, &ran);
    /* Run (or failed or cancelled on the way: the identity, as the header
     * says); refused, *result untouched. */
    if (ran) memcpy(result, r->identity, r->size);
    if (rc == 0)
      for (size_t b = 0; b < c.nblocks; b++) r->combine(result, c.accs + b * r->size, r->ctx);
    ws_mem_free(&p->mem, c.accs, c.nblocks * r->size);
  } else {
    rc = ENOMEM;
  }
  if (!inside) ws_leave(p);
  return rc;
}
