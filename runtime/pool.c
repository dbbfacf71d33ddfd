/* SPDX-License-Identifier: MIT */
/* Pool lifetime, submission, waiting for idle, the default pool, stats and
 * error strings. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void *ws_worker_main(void *arg);

enum {
  DEFAULT_STACK = 8u << 20,
  MIN_HELP_RESERVE = 64u << 10,
  DEQUE_LOG_SIZE = 8,
  PRIV_INITIAL = 256
};

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static struct pool *default_pool;
static int default_err;

static void free_worker(struct pool *p, ws_worker *w) {
  if (!w) return;
  ws_deque_destroy(&w->dq);
  if (w->priv_block != w->priv_embedded) free(w->priv_block);
  ws_nodes_destroy(&w->nodes);
  free(w->victims);
  ws_placement_dealloc(p, w->mem, w->mem_size);
}

static void free_pool(struct pool *p) {
  if (p->workers) {
    for (unsigned i = 0; i < p->nthreads; i++) free_worker(p, p->workers[i]);
    free(p->workers);
  }
  ws_placement_free(p);
  ws_gqueue_destroy(&p->gq);
  free(p);
}

/* One allocation per worker, on its NUMA node (ws_placement_alloc): the
 * worker struct, the first array of its deque and its private frame array,
 * the memory its owner touches on every task. What grows later is
 * allocated by the (bound) worker itself, so first touch keeps it local. */
static int new_worker(struct pool *p, unsigned i) {
  size_t head = (sizeof(ws_worker) + WS_CACHELINE - 1) / WS_CACHELINE * WS_CACHELINE;
  size_t ring = (ws_deque_array_bytes(DEQUE_LOG_SIZE) + WS_CACHELINE - 1) / WS_CACHELINE * WS_CACHELINE;
  size_t priv = (PRIV_INITIAL + 1) * sizeof(ws_task *); /* + the marker slot */
  size_t size = head + ring + priv;
  char *mem = ws_placement_alloc(p, i, size);
  if (!mem) return ENOMEM;
  ws_worker *w = (ws_worker *)mem;
  memset(w, 0, sizeof(*w));
  w->mem = mem;
  w->mem_size = size;
  w->pool = p;
  w->id = i;
  w->cpu = -1;
  w->numa = -1;
  w->rng = 0x9E3779B97F4A7C15ull * (i + 1) | 1;
  size_t stack = p->cfg.stack_size;
  w->help_reserve = stack / 4 > MIN_HELP_RESERVE ? stack / 4 : MIN_HELP_RESERVE;
  ws_nodes_init(&w->nodes);
  ws_deque_init_in(&w->dq, DEQUE_LOG_SIZE, mem + head);
  ws_ptr_store(&w->limitp, &w->limit_parked, ws_relaxed);
  w->priv_block = w->priv_embedded = (ws_task **)(mem + head + ring);
  ws_priv_init(w, w->priv_block, PRIV_INITIAL);
  p->workers[i] = w;
  return 0;
}

/* Stop and join the workers that started; used by destroy and by a failed
 * create. */
static void stop_workers(struct pool *p) {
  /* No thread starts after this: the workers wait for this many to have
   * stopped before any ends (worker.c). Read after they see `stop`. */
  p->nstarted = 0;
  for (unsigned i = 0; i < p->nthreads; i++)
    if (p->workers[i] && p->workers[i]->started) p->nstarted++;
  ws_u32_store(&p->stop, 1, ws_seq_cst);
  ws_sleep_wake_all(&p->sleep);
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    if (w && w->started) pthread_join(w->thread, NULL);
  }
}

int pool_create(pool_t **out, const pool_config_t *cfg_in) {
  if (!out) return EINVAL;
  pool_config_t cfg;
  if (cfg_in)
    cfg = *cfg_in;
  else
    pool_config_default(&cfg);
  if (cfg.threads > POOL_MAX_THREADS) return EINVAL;
  if (cfg.bind != POOL_BIND_NONE && cfg.bind != POOL_BIND_CORE && cfg.bind != POOL_BIND_SPREAD)
    return EINVAL;
  if (cfg.threads == 0) cfg.threads = ws_allowed_cpus();
  if (cfg.stack_size == 0) cfg.stack_size = DEFAULT_STACK;
  if (cfg.stack_size < (size_t)PTHREAD_STACK_MIN) cfg.stack_size = (size_t)PTHREAD_STACK_MIN;

  struct pool *p;
  if (posix_memalign((void **)&p, WS_CACHELINE, sizeof(*p)) != 0) return ENOMEM;
  memset(p, 0, sizeof(*p));
  p->cfg = cfg;
  p->nthreads = cfg.threads;
  ws_hooks_init(p);
  int rc = ws_gqueue_init(&p->gq);
  if (rc) {
    free(p);
    return rc;
  }
  ws_sleep_init(&p->sleep);
  ws_event_init(&p->ext);
  ws_i64_store(&p->pending, 0, ws_relaxed);
  ws_u32_store(&p->stop, 0, ws_relaxed);
  ws_u32_store(&p->stopped, 0, ws_relaxed);

  p->workers = calloc(p->nthreads, sizeof(ws_worker *));
  if (!p->workers) {
    free_pool(p);
    return ENOMEM;
  }
  rc = ws_placement_plan(p);
  if (rc) {
    free_pool(p);
    return rc;
  }
  for (unsigned i = 0; i < p->nthreads; i++) {
    if ((rc = new_worker(p, i)) != 0) {
      free_pool(p);
      return rc;
    }
  }
  for (unsigned i = 0; i < p->nthreads; i++)
    if ((rc = ws_placement_worker(p, p->workers[i])) != 0) {
      free_pool(p);
      return rc;
    }

  ws_trace_pool_created(p);

  pthread_attr_t attr;
  if ((rc = pthread_attr_init(&attr)) != 0) {
    ws_trace_pool_destroyed(p);
    free_pool(p);
    return rc == ENOMEM ? ENOMEM : EAGAIN;
  }
  pthread_attr_setstacksize(&attr, cfg.stack_size);
  bool warned = false;
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    if (pthread_create(&w->thread, &attr, ws_worker_main, w) != 0) {
      rc = EAGAIN;
      break;
    }
    w->started = true;
    if (w->cpu < 0) continue;
    int brc = ws_placement_bind(p, w);
    if (brc == 0) continue;
    if (cfg.bind_strict) {
      rc = ENOTSUP;
      break;
    }
    if (!warned)
      fprintf(stderr, "wspool: cannot bind workers here (%s); running unbound\n", strerror(brc));
    warned = true;
    w->cpu = -1; /* read by pool_worker_cpu(): after create returns, or in a hook */
  }
  ws_hooks_open(p, rc == 0); /* the workers may take work (hooks.h) */
  if (rc) {
    pthread_attr_destroy(&attr);
    stop_workers(p);
    ws_trace_pool_destroyed(p);
    free_pool(p);
    return rc;
  }
  pthread_attr_destroy(&attr);
  *out = p;
  return 0;
}

int pool_destroy(pool_t *pool) {
  ws_worker *self = ws_self();
  struct pool *p = ws_resolve(pool);
  if (!p) return EINVAL;
  if (self && self->pool == p) return EDEADLK;
  if (p->is_default) return EINVAL;
  ws_gqueue_close(&p->gq);
  /* Drain: tasks submitted before the close, and whatever they submit from
   * inside the pool meanwhile (pending only reaches 0 when none is left). */
  ws_block_until_zero(p, &p->pending);
  stop_workers(p);
  /* Every task has run now, so every outside thread blocked on this pool
   * (pool_sync, pool_group_wait, parallel_for, wait_idle) has its condition
   * met. Wake them and wait until the last has left the pool's event: it
   * lives in the memory we are about to free. */
  while (ws_u32_load(&p->ext.waiters, ws_acquire) != 0) {
    ws_u32_fetch_add(&p->ext.epoch, 1, ws_seq_cst);
    ws_futex_wake(&p->ext.epoch, INT_MAX);
    sched_yield();
  }
  ws_stats_report(p);
  ws_trace_pool_destroyed(p);
  free_pool(p);
  return 0;
}

static void default_create(void) {
  struct pool *p;
  default_err = pool_create(&p, NULL);
  if (default_err == 0) {
    p->is_default = true;
    default_pool = p;
  }
}

pool_t *pool_default(void) {
  pthread_once(&default_once, default_create);
  return default_pool;
}

struct pool *ws_resolve(struct pool *p) {
  if (p) return p;
  ws_worker *w = ws_self();
  if (w) return w->pool;
  return pool_default();
}

pool_t *pool_current(void) {
  ws_worker *w = ws_self();
  return w ? w->pool : NULL;
}

int pool_worker_id(void) {
  ws_worker *w = ws_self();
  return w ? (int)w->id : -1;
}

unsigned pool_threads(const pool_t *pool) {
  struct pool *p = ws_resolve((struct pool *)pool);
  return p ? p->nthreads : 0;
}

/* A pool_submit task as a schedulable node: how a submission from inside
 * the pool goes on the worker's deque, and how a worker takes a plain
 * fn(arg) off the global queue. */
typedef struct submit_task {
  ws_task hdr;
  pool_fn fn;
  void *arg;
  struct pool *pool;
} submit_task;

static void submit_exec(ws_task *t, ws_worker *w) {
  submit_task *st = (submit_task *)t;
  pool_fn fn = st->fn;
  void *arg = st->arg;
  struct pool *p = st->pool;
  ws_node_free(ws_node_of(st), w);
  uint64_t t0 = ws_trace_t0(w);
  fn(arg);
  ws_trace_task(w, (ws_fnptr)fn, t0);
  ws_pending_done(p);
}

ws_task *ws_submit_task(ws_worker *w, pool_fn fn, void *arg) {
  ws_node *n = ws_node_alloc(w);
  if (!n) return NULL;
  submit_task *st = (submit_task *)n->payload;
  st->hdr.exec = submit_exec;
  st->fn = fn;
  st->arg = arg;
  st->pool = w->pool;
  return &st->hdr;
}

int pool_submit(pool_t *pool, pool_fn fn, void *arg) {
  if (!fn) return EINVAL;
  struct pool *p = ws_resolve(pool);
  if (!p) return default_err ? default_err : EINVAL;
  ws_worker *w = ws_self();
  /* Relaxed: whoever runs the task got it through a deque or the queue lock,
   * so this increment happens before that task's decrement. */
  ws_i64_fetch_add(&p->pending, 1, ws_relaxed);
  int rc;
  if (w && w->pool == p) {
    ws_task *t = ws_submit_task(w, fn, arg);
    if (!t) {
      rc = ENOMEM;
    } else if ((rc = ws_push(w, t)) != 0) {
      ws_node_free(ws_node_of(t), w);
    }
  } else {
    ws_gitem it = {NULL, fn, arg};
    rc = ws_gqueue_push(&p->gq, &it, true);
    if (rc == 0) ws_sleep_notify(&p->sleep);
  }
  if (rc) ws_pending_done(p);
  return rc;
}

int ws_push_global(struct pool *p, ws_task *t, bool refuse_closed) {
  ws_gitem it = {t, NULL, NULL};
  int rc = ws_gqueue_push(&p->gq, &it, refuse_closed);
  if (rc == 0) ws_sleep_notify(&p->sleep);
  return rc;
}

int pool_wait_idle(pool_t *pool) {
  struct pool *p = ws_resolve(pool);
  if (!p) return EINVAL;
  ws_worker *w = ws_self();
  if (w && w->pool == p) return EDEADLK;
  ws_block_until_zero(p, &p->pending);
  return 0;
}

int pool_worker_stats(const pool_t *pool, unsigned worker, pool_worker_stats_t *out) {
  struct pool *p = ws_resolve((struct pool *)pool);
  if (!p || !out || worker >= p->nthreads) return EINVAL;
  ws_stats *s = &p->workers[worker]->stats;
  out->tasks = ws_u64_load(&s->tasks, ws_relaxed);
  out->local_pops = ws_u64_load(&s->local_pops, ws_relaxed);
  out->global_pops = ws_u64_load(&s->global_pops, ws_relaxed);
  out->steals = ws_u64_load(&s->steals, ws_relaxed);
  out->steals_remote = ws_u64_load(&s->steals_remote, ws_relaxed);
  out->steal_failures = ws_u64_load(&s->steal_failures, ws_relaxed);
  out->sleeps = ws_u64_load(&s->sleeps, ws_relaxed);
  return 0;
}

int pool_worker_cpu(const pool_t *pool, unsigned worker) {
  struct pool *p = ws_resolve((struct pool *)pool);
  if (!p || worker >= p->nthreads) return -1;
  return p->workers[worker]->cpu;
}

const char *pool_strerror(int err) {
  switch (err) {
  case 0: return "success";
  case EINVAL: return "invalid argument";
  case ENOMEM: return "out of memory";
  case EAGAIN: return "could not create a worker thread";
  case ESHUTDOWN: return "the pool is being destroyed";
  case EDEADLK: return "would deadlock: called from one of the pool's own workers";
  case ENOTSUP: return "worker binding is not supported here";
  case EBUSY: return "resource busy";
  default: return "unknown error";
  }
}
