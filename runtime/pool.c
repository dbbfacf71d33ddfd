/* SPDX-License-Identifier: MIT */
/* Pool lifetime, submission, waiting for idle, the default pool, stats and
 * error strings. */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api.h"
#include "busy.h"
#include "chaos.h"
#include "count.h"
#include "profile.h"
#include "visitors.h"


enum {
  DEFAULT_STACK = 8u << 20,
  MIN_HELP_RESERVE = 64u << 10,
  DEQUE_LOG_SIZE = 8,
  PRIV_INITIAL = 256
};

unsigned ws_fork_gen;

/* Process-wide state, each under its own lock; the fork handlers take them
 * all, in this order (which every other path keeps too: a default pool is
 * created under default_lock and takes the others inside):
 *   default_lock   the default pool, its creation and retries
 *   global_lock    the free list of destroyed pools' structs, and whether
 *                  the fork handlers are registered
 *   then the visitors' registry lock (visitors.c), placement's topology
 *   lock, the trace lock (their files) and, in the portable futex
 *   fallback, its bucket locks (sleep.c). */
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set once created, with release (under default_lock); read with acquire
 * on the fast path. Reset in a forked child. */
static ws_ptr default_pool; /* struct pool * */
/* Default pools inherited across fork(): dead here, kept reachable. */
static struct pool *default_orphans;
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool *free_pools;
static bool atfork_registered;

void ws_worker_stack_bounds(ws_worker *w) {
  pthread_attr_t attr;
  void *lo = NULL;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &lo, &size) != 0) lo = NULL;
    pthread_attr_destroy(&attr);
  }
  if (lo) {
    w->stack_lo = (uintptr_t)lo;
  } else {
    /* Unknown: the thread was created with cfg.stack_size bytes and this
     * frame is near its top. Counting 64 KiB of it as already used errs on
     * the side of helping less, never of overflowing. */
    uintptr_t here = (uintptr_t)&attr, size_guess = w->pool->cfg.stack_size;
    w->stack_lo = here > size_guess ? here - size_guess + (64u << 10) : 0;
  }
}

/* A worker thread: its stack bounds, name and start hook, the worker loop,
 * the stop hook. */
static void *worker_main(void *arg) {
  ws_worker *w = arg;
  ws_set_self(w);
  ws_chaos_thread(w->id);
  ws_worker_stack_bounds(w);
  bool begun = ws_worker_begin(w); /* name, start hook (hooks.c) */
  ws_worker_loop(w);
  ws_worker_end(w, begun); /* stop hook (hooks.c) */
  ws_set_self(NULL);
  return NULL;
}

void ws_worker_free(struct pool *p, ws_worker *w) {
  if (!w) return;
  ws_submit_drop_open(w);
  ws_deque_destroy(&w->dq);
  ws_priv_free(w);
  ws_nodes_destroy(&w->nodes);
  if (w->victims_own) ws_mem_free(&p->mem, w->victims, w->nvictims * sizeof(unsigned));
  ws_count_block_remove(w->mem);
  ws_placement_dealloc(p, w->mem, w->mem_size);
}

/* A pool's struct goes back on the free list, never to malloc: a call that
 * reaches the gate after its pool was destroyed finds it closed. Called with
 * everything the struct pointed to freed. */
static void recycle_pool(struct pool *p) {
  pthread_mutex_lock(&global_lock);
  p->next_free = free_pools;
  free_pools = p;
  pthread_mutex_unlock(&global_lock);
}

/* A struct for a new pool: reused from the free list or allocated; every
 * field but the gate zeroed, the gate closed (pool_create opens it last). */
static struct pool *new_pool_struct(void) {
  pthread_mutex_lock(&global_lock);
  struct pool *p = free_pools;
  if (p) free_pools = p->next_free;
  pthread_mutex_unlock(&global_lock);
  if (!p) {
    if (posix_memalign((void **)&p, WS_CACHELINE, sizeof(*p)) != 0) return NULL;
    memset(p, 0, sizeof(*p));
    ws_u32_store(&p->gate, WS_GATE_CLOSED, ws_relaxed);
    ws_event_init(&p->ext);
    pthread_mutex_lock(&global_lock);
    ws_dump_add(p);
    pthread_mutex_unlock(&global_lock);
    return p;
  }
  /* A reused struct: a late caller of its old pool may be counting itself
   * in and out of the gate right now (it sees CLOSED and leaves), or be
   * waiting on the event, so the fields before next_free are left alone
   * (struct pool says why each stays consistent). */
  memset((char *)p + offsetof(struct pool, next_free), 0,
         sizeof(*p) - offsetof(struct pool, next_free));
  /* Relaxed: the gate's opening (a release) publishes it. */
  ws_u32_store(&p->gen, ws_u32_load(&p->gen, ws_relaxed) + 1, ws_relaxed);
  return p;
}

/* Free what the pool owns. `forked`: a pool inherited across fork(), whose
 * threads and locks belong to the parent (nothing is joined or unlocked). */
static void free_pool(struct pool *p, bool forked) {
  ws_u32_store(&p->dumpable, 0, ws_seq_cst);
  if (p->workers) {
    for (unsigned i = 0; i < p->nthreads; i++) ws_worker_free(p, p->workers[i]);
    ws_mem_free(&p->mem, p->workers, p->nthreads * sizeof(ws_worker *));
  }
  if (p->asleep) ws_mem_free(&p->mem, p->asleep, p->nthreads * sizeof(ws_u32));
  /* Stand-ins (docs/design.md 5.9): every thread joined, or none here
   * (forked). */
  ws_worker **slots = ws_ptr_load(&p->standins, ws_relaxed);
  for (unsigned k = 0, ns = ws_u32_load(&p->nstandins, ws_relaxed); k < ns; k++)
    ws_worker_free(p, slots[k]);
  if (slots) ws_mem_free(&p->mem, slots, POOL_MAX_THREADS * sizeof(ws_worker *));
  ws_ptr_store(&p->standins, NULL, ws_relaxed);
  ws_u32_store(&p->nstandins, 0, ws_relaxed);
  /* A forked child's copy may be held by a parent's thread: not destroyed
   * (the struct's reuse initialises it again). */
  if (!forked) pthread_mutex_destroy(&p->standin_lock);
  if (!forked) pthread_mutex_destroy(&p->resize_lock);
  ws_placement_free(p);
  for (unsigned l = 0; l < WS_LANES; l++) ws_gqueue_destroy(&p->gq[l], !forked);
  /* The workers' stacks, every one joined (map_stacks). A forked child
   * keeps its copy: its one thread may be running on one of them. */
  if (p->stacks && !forked) munmap(p->stacks, p->stack_slot * p->nthreads);
  recycle_pool(p);
}

/* One allocation per worker, on its NUMA node (ws_placement_alloc): the
 * worker struct, the first array of its deque and its private frame array,
 * the memory its owner touches on every task. What grows later is
 * allocated by the (bound) worker itself, so first touch keeps it local.
 * Stand-ins (ids from nthreads) are built here too, with no node. */
ws_worker *ws_worker_build(struct pool *p, unsigned i) {
  size_t head = (sizeof(ws_worker) + WS_CACHELINE - 1) / WS_CACHELINE * WS_CACHELINE;
  size_t ring = (ws_deque_array_bytes(DEQUE_LOG_SIZE) + WS_CACHELINE - 1) / WS_CACHELINE * WS_CACHELINE;
  size_t priv = (PRIV_INITIAL + 1) * sizeof(ws_task *); /* + the marker slot */
  size_t size = head + ring + priv;
  char *mem = ws_placement_alloc(p, i, size);
  if (!mem) return NULL;
  ws_worker *w = (ws_worker *)mem;
  memset(w, 0, sizeof(*w));
  w->mem = mem;
  w->mem_size = size;
  ws_count_block_add(mem, size);
  w->pool = p;
  w->id = i;
  w->cpu = -1;
  w->numa = -1;
  w->rng = 0x9E3779B97F4A7C15ull * (i + 1) | 1;
  size_t stack = p->cfg.stack_size;
  w->help_reserve = stack / 4 > MIN_HELP_RESERVE ? stack / 4 : MIN_HELP_RESERVE;
  /* The report credit of bounded submission (submit.c): with every worker
   * holding less than max_queued / (2 x workers), the unreported starts
   * stay below half the bound; a stand-in, of which any number may run,
   * reports each start. 32 at most: one RMW per 32 tasks costs nothing. */
  size_t credit = p->cfg.max_queued / (2 * (size_t)p->nthreads);
  w->bound_flush = i >= p->nthreads || credit < 1 ? 1 : credit > 32 ? 32 : (uint32_t)credit;
  ws_nodes_init(&w->nodes, &p->mem);
  ws_deque_init_in(&w->dq, DEQUE_LOG_SIZE, mem + head, &p->mem);
  ws_ptr_store(&w->limitp, &w->limit_parked, ws_relaxed);
  w->priv_block = w->priv_embedded = (ws_task **)(mem + head + ring);
  ws_priv_init(w, w->priv_block, PRIV_INITIAL);
  return w;
}

static int new_worker(struct pool *p, unsigned i) {
  p->workers[i] = ws_worker_build(p, i);
  return p->workers[i] ? 0 : ENOMEM;
}

/* Stop and join the workers and stand-ins that started; used by destroy
 * and by a failed create. */
static void stop_workers(struct pool *p) {
  /* No stand-in starts or parks after this (docs/design.md 5.9); the
   * count and slots read under the lock are final. */
  pthread_mutex_lock(&p->standin_lock);
  p->standin_closing = true;
  unsigned ns = ws_u32_load(&p->nstandins, ws_relaxed);
  ws_worker **slots = ws_ptr_load(&p->standins, ws_relaxed);
  pthread_mutex_unlock(&p->standin_lock);
  /* No thread starts after this: the workers wait for this many to have
   * stopped before any ends (worker.c). Read after they see `stop`. */
  p->nstarted = 0;
  for (unsigned i = 0; i < p->nthreads; i++)
    if (p->workers[i] && p->workers[i]->started) p->nstarted++;
  for (unsigned k = 0; k < ns; k++) p->nstarted += slots[k]->started;
  ws_u32_store(&p->stop, 1, ws_seq_cst);
  ws_sleep_wake_all(&p->sleep);
  /* Parked workers (pool_resize) leave through the loop's exit too; a
   * resizer waiting for one to park sees 0 and returns. seq_cst: release
   * as for the stand-ins below, and after `stop` in S for a shrink that
   * entered before the close and stores 1 after the workers left (the
   * Dekker pair in pool_resize, design.md 10.4). */
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    if (!w || !w->started) continue;
    /* At 0 nobody waits on the word, so no wake (a system call a worker
     * is too many with thousands): at 2 the parked worker does, at 1 a
     * shrinking pool_resize waiting for it to park (the worker then fails
     * its CAS on the 0 and does not park). */
    if (ws_u32_xchg(&w->off, 0, ws_seq_cst) != 0) ws_futex_wake(&w->off, INT_MAX);
  }
  /* Parked stand-ins go through the loop's exit, and its barrier, too.
   * Release: pairs with the parked thread's acquire load (worker.c); it
   * then sees `stop`, and `standin_closing` under the lock. */
  for (unsigned k = 0; k < ns; k++) {
    if (!slots[k]->started) continue;
    ws_u32_store(&slots[k]->park, 0, ws_release);
    ws_futex_wake(&slots[k]->park, 1);
  }
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    if (w && w->started) pthread_join(w->thread, NULL);
  }
  for (unsigned k = 0; k < ns; k++)
    if (slots[k]->started) pthread_join(slots[k]->thread, NULL);
}

/* The configuration a pool is created with: the caller's (NULL: the
 * defaults and environment), checked, with its automatic values filled in:
 * `threads` 0 is a worker per CPU of the origin set (NULL: unknown; the
 * online CPUs). 0 or EINVAL. */
static int resolve_config(const pool_config_t *cfg_in, pool_config_t *cfg,
                          const cpu_set_t *origin, size_t origin_size) {
  if (cfg_in)
    *cfg = *cfg_in;
  else
    pool_config_default(cfg);
  if (cfg->threads > POOL_MAX_THREADS || cfg->max_threads > POOL_MAX_THREADS) return EINVAL;
  if (cfg->idle_poll_us < POOL_IDLE_POLL_ADAPTIVE || cfg->idle_poll_us > POOL_IDLE_POLL_MAX)
    return EINVAL;
  if (cfg->bind != POOL_BIND_NONE && cfg->bind != POOL_BIND_CORE && cfg->bind != POOL_BIND_SPREAD)
    return EINVAL;
  unsigned allowed = ws_cpu_count(origin, origin_size);
  ws_usable_note(allowed); /* for the idle poll's neighbour rule (busy.h) */
  if (cfg->threads == 0) {
    cfg->threads = allowed;
    if (cfg->max_threads && cfg->threads > cfg->max_threads) cfg->threads = cfg->max_threads;
  }
  if (cfg->max_threads == 0) cfg->max_threads = cfg->threads;
  if (cfg->max_threads < cfg->threads) return EINVAL;
  if (cfg->stack_size == 0) cfg->stack_size = DEFAULT_STACK;
  if (cfg->stack_size < (size_t)PTHREAD_STACK_MIN) cfg->stack_size = (size_t)PTHREAD_STACK_MIN;
  /* Both allocator hooks or neither: memory from one cannot go to the
   * other's free. */
  if (!cfg->alloc_fn != !cfg->free_fn) return EINVAL;
  return 0;
}

/* Everything of a new pool but its threads: the queue, the sleep state,
 * the placement plan and each worker, on its NUMA node. On failure the
 * pool is freed. */
static int build_pool(struct pool *p, const pool_config_t *cfg, const cpu_set_t *origin,
                      size_t origin_size) {
  /* Written only when it changes (a struct made before a fork): a late
   * caller of the struct's previous pool may be reading it. */
  if (p->fork_gen != ws_fork_gen) p->fork_gen = ws_fork_gen;
  p->cfg = *cfg;
  p->nthreads = cfg->max_threads;
  ws_u32_store(&p->size, cfg->threads, ws_relaxed);
  pthread_mutex_init(&p->resize_lock, NULL);
  /* The struct was zeroed from next_free on: `shared` starts at 0. */
  p->mem.alloc_fn = cfg->alloc_fn;
  p->mem.free_fn = cfg->free_fn;
  p->mem.ctx = cfg->alloc_ctx;
  ws_hooks_init(p);
  int rc = 0;
  for (unsigned l = 0; l < WS_LANES; l++) {
    if ((rc = ws_gqueue_init(&p->gq[l], &p->mem)) != 0) {
      while (l-- > 0) ws_gqueue_destroy(&p->gq[l], true);
      recycle_pool(p);
      return rc;
    }
  }
  ws_sleep_init(&p->sleep);
  ws_event_init(&p->room);
  ws_u64_store(&p->bq_queued, 0, ws_relaxed);
  /* Under a bound a lane may never hold WS_GQ_FULL entries: it is worth a
   * worker's visit at once from half the bound (worker.c, take_global), or
   * the producer would wait while the workers wait for a full lane. */
  if (cfg->max_queued && cfg->max_queued / 2 < WS_GQ_FULL)
    for (unsigned l = 0; l < WS_LANES; l++)
      p->gq[l].full_at = cfg->max_queued / 2 > 0 ? cfg->max_queued / 2 : 1;
  /* Stand-ins (docs/design.md 5.9): none yet (the struct is zeroed), and
   * the limit from WSPOOL_STANDINS, else 4 per worker. */
  pthread_mutex_init(&p->standin_lock, NULL);
  long lim = ws_option_long(WS_OPT_STANDINS);
  if (lim < 0) lim = 4l * (long)p->nthreads;
  ws_u32_store(&p->standin_limit, (uint32_t)(lim < POOL_MAX_THREADS ? lim : POOL_MAX_THREADS),
               ws_relaxed);
  ws_u32_store(&p->stop, 0, ws_relaxed);
  ws_u32_store(&p->stopped, 0, ws_relaxed);
  p->workers = ws_mem_calloc(&p->mem, p->nthreads, sizeof(ws_worker *));
  /* A worker not started yet has an empty deque: its word is QUIET until
   * its first look (worker.c); in a large pool the words are bells too. */
  p->asleep = ws_mem_calloc(&p->mem, p->nthreads, sizeof(ws_u32));
  if (p->asleep) ws_sleep_bells(&p->sleep, p->asleep, p->nthreads);
  rc = p->workers && p->asleep ? ws_placement_plan(p, origin, origin_size) : ENOMEM;
  for (unsigned i = 0; rc == 0 && i < p->nthreads; i++) rc = new_worker(p, i);
  /* Workers beyond the size park before their first task (worker.c).
   * Relaxed: pthread_create orders it before the thread's first read. */
  for (unsigned i = cfg->threads; rc == 0 && i < p->nthreads; i++)
    ws_u32_store(&p->workers[i]->off, 1, ws_relaxed);
  for (unsigned i = 0; rc == 0 && i < p->nthreads; i++) rc = ws_placement_worker(p, p->workers[i]);
  if (rc) free_pool(p, false);
  return rc;
}

/* Adds the static TLS of a loaded module to *ctx (bytes). */
static int add_tls(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  for (unsigned k = 0; k < info->dlpi_phnum; k++)
    if (info->dlpi_phdr[k].p_type == PT_TLS)
      *(size_t *)ctx += info->dlpi_phdr[k].p_memsz + info->dlpi_phdr[k].p_align;
  return 0;
}

/* The static TLS of the modules loaded when the library was (bytes): the
 * C library sizes a thread's static TLS block at startup (modules opened
 * later get dynamic TLS, or the block's reserve), and puts it in a given
 * stack (map_stacks). Summed once, here, never in pool_create: a fork()
 * child of a parent with a thread inside dl_iterate_phdr (an exception's
 * unwinder, another pool's creation) inherits the loader's lock held, and
 * its first pool_create would wait for it forever (test/fault/fork.c,
 * fork_in_loader). */
static size_t static_tls;
__attribute__((constructor)) static void static_tls_init(void) {
  dl_iterate_phdr(add_tls, &static_tls);
}

/* The workers' stacks (docs/design.md 10.2): one mapping for the pool,
 * nthreads slots of a guard (the size a thread gets by default) below a
 * stack of cfg.stack_size rounded up to pages, mapped PROT_NONE and made
 * writable a stack at a time, as the C library maps each thread's: the
 * same commit charge, guard and size. What it saves is the C library's
 * per-thread work at the end: each joined thread's stack unmapped (a TLB
 * shootdown apiece), where free_pool unmaps them all at once. False, and
 * the C library's stacks for every worker, if it cannot be mapped, or if
 * the stack is small: a stack the C library is given also holds the
 * thread's static TLS, and the sanitizers want 128 KiB beyond theirs (they
 * enlarge a stack the C library allocates, never a given one). */
static bool map_stacks(struct pool *p, const pthread_attr_t *attr) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), guard = 0, tls = static_tls;
  if (pthread_attr_getguardsize(attr, &guard) != 0) guard = page;
  guard = (guard + page - 1) / page * page;
  size_t stack = (p->cfg.stack_size + page - 1) / page * page, slot = stack + guard;
  if (slot < stack || slot > SIZE_MAX / p->nthreads) return false;
  if (stack < tls + (256u << 10)) return false;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_STACK
  flags |= MAP_STACK; /* as the C library's: no huge pages (Linux 6.7 on) */
#endif
  void *m = mmap(NULL, slot * p->nthreads, PROT_NONE, flags, -1, 0);
  if (m == MAP_FAILED) return false;
#ifdef MADV_NOHUGEPAGE
  /* Older kernels: a few pages of each stack are touched, not 2 MiB. */
  madvise(m, slot * p->nthreads, MADV_NOHUGEPAGE);
#endif
  p->stacks = m;
  p->stack_slot = slot;
  p->stack_guard = guard;
  return true;
}

/* Worker i's stack in the pool's mapping, made writable; NULL when there
 * is no mapping or no memory (the C library's stack then). */
static void *worker_stack(struct pool *p, unsigned i) {
  if (!p->stacks) return NULL;
  char *lo = (char *)p->stacks + (size_t)i * p->stack_slot + p->stack_guard;
  size_t size = p->stack_slot - p->stack_guard;
  return mprotect(lo, size, PROT_READ | PROT_WRITE) == 0 ? lo : NULL;
}

/* Starts and binds the worker threads, then lets them take work (or, on
 * failure, stops those that started). 0, EAGAIN, ENOMEM or ENOTSUP. */
static int start_workers(struct pool *p) {
  pthread_attr_t attr, own;
  int rc = pthread_attr_init(&attr);
  if (rc) return rc == ENOMEM ? ENOMEM : EAGAIN;
  pthread_attr_setstacksize(&attr, p->cfg.stack_size);
  bool mapped = pthread_attr_init(&own) == 0;
  if (mapped && !map_stacks(p, &attr)) {
    pthread_attr_destroy(&own);
    mapped = false;
  }
  bool warned = false;
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    void *stack = mapped ? worker_stack(p, i) : NULL;
    bool in_map = stack && pthread_attr_setstack(&own, stack, p->stack_slot - p->stack_guard) == 0;
    /* EINVAL: the stack refused (a C library that wants more of it for
     * TLS); the C library's then. Any other error is the create's. */
    int crc = in_map ? pthread_create(&w->thread, &own, worker_main, w) : EINVAL;
    if (crc == EINVAL) crc = pthread_create(&w->thread, &attr, worker_main, w);
    if (crc != 0) {
      rc = EAGAIN;
      break;
    }
    w->started = true;
    int brc = ws_placement_bind(p, w); /* an unbound worker too (its CPUs) */
    if (brc == 0) continue;
    if (p->cfg.bind_strict) {
      rc = ENOTSUP;
      break;
    }
    if (!warned)
      fprintf(stderr, "wspool: cannot bind workers here (%s); running unbound\n", strerror(brc));
    warned = true;
    w->cpu = -1; /* read by pool_worker_cpu(): after create returns, or in a hook */
  }
  pthread_attr_destroy(&attr);
  if (mapped) pthread_attr_destroy(&own);
  ws_hooks_open(p, rc == 0); /* the workers may take work (hooks.h) */
  if (rc) stop_workers(p);
  return rc;
}

/* pool_create with the origin set (ws_origin_cpus; NULL: unknown). */
static int create(pool_t **out, const pool_config_t *cfg_in, const cpu_set_t *origin,
                  size_t origin_size) {
  pool_config_t cfg;
  int rc = resolve_config(cfg_in, &cfg, origin, origin_size);
  if (rc) return rc;
  if ((rc = ws_fork_setup()) != 0) return rc;
  ws_fence_global_init();
  if (WS_DEBUG) ws_dump_on_sigquit();
  /* Other builds neither read the seed nor warn about a bad one. */
  if (WS_CHAOS_BUILD) ws_chaos_init((uint64_t)ws_option_long(WS_OPT_CHAOS_SEED));
  struct pool *p = new_pool_struct();
  if (!p) return ENOMEM;
  if ((rc = build_pool(p, &cfg, origin, origin_size)) != 0) return rc;
  ws_trace_pool_created(p);
  if ((rc = start_workers(p)) != 0) {
    ws_trace_pool_destroyed(p);
    free_pool(p, false);
    return rc;
  }
  ws_prof_env_begin(p);
  /* Open the gate: remove CLOSED, keeping whatever late callers of the
   * struct's previous pool are counted (each leaves on its own). Release:
   * nothing to publish through the gate (callers get the pool through
   * *out), but it keeps every write above before the first entry. */
  ws_u32_store(&p->dumpable, 1, ws_release);
  ws_u32_fetch_add(&p->gate, (uint32_t)0 - WS_GATE_CLOSED, ws_release);
  *out = p;
  return 0;
}

int pool_create(pool_t **out, const pool_config_t *cfg_in) {
  if (!out) return EINVAL;
  size_t size = 0;
  cpu_set_t *origin = ws_origin_cpus(&size);
  /* NULL: no memory, or the affinity cannot be read (then unknown: every
   * online CPU counts, every allowed one is usable). */
  if (!origin && errno == ENOMEM) return ENOMEM;
  int rc = create(out, cfg_in, origin, size);
  if (origin) CPU_FREE(origin);
  return rc;
}

/* Entry accounting (docs/design.md, 10.1 "The entry gate").
 *
 * Every outside call that touches a pool's memory beyond the gate word is
 * counted in the gate for that whole time; destroy sets CLOSED and frees
 * nothing until the count is back to zero. The gate's RMWs are totally
 * ordered, so an entry either comes before destroy's close (destroy then
 * waits for its leave) or after it (it sees CLOSED and touches nothing
 * else). The struct holding the gate is never freed (see struct pool). */
int ws_enter(struct pool *p) {
  if (ws_pool_forked(p)) return EOWNERDEAD;
  /* Relaxed is enough for the decision (one location: its RMWs are totally
   * ordered). Acquire orders this caller's later reads of the pool after
   * pool_create's release that opened the gate; release, what it did
   * before (a reservation, ws_reserve) before a later close (destroy's
   * acq_rel CAS reads this RMW or a later one of its release sequence). */
  uint32_t v = ws_u32_fetch_add(&p->gate, 1, ws_acq_rel);
  if (v & WS_GATE_CLOSED) {
    ws_leave(p);
    return ESHUTDOWN;
  }
  return 0;
}

int ws_enter_any(struct pool *p) {
  if (ws_pool_forked(p)) return EOWNERDEAD;
  ws_u32_fetch_add(&p->gate, 1, ws_acquire); /* as in ws_enter */
  return 0;
}

void ws_leave(struct pool *p) {
  /* Release: everything this caller did to the pool happens before
   * destroy's acquire load that sees the count at zero. */
  uint32_t v = ws_u32_fetch_add(&p->gate, (uint32_t)-1, ws_release);
  WS_ASSERT((v & ~WS_GATE_CLOSED) != 0);
  /* The last one out of a closed pool wakes destroy. The word outlives the
   * pool, so touching it after the decrement is safe. */
  if (v == (WS_GATE_CLOSED | 1)) ws_futex_wake(&p->gate, INT_MAX);
}

/* A reservation (api.h; docs/design.md 9.2) counts first and enters after:
 * a destroy whose close follows the entry in the gate's order synchronises
 * with it (the entry's release half), so its drain reads the count; one
 * whose close came first refuses the entry, and the count is taken back. */
int ws_reserve(struct pool *p) {
  /* Relaxed: ordered by the entry's release below. */
  ws_u64_fetch_add(&p->resv, 1, ws_relaxed);
  int rc = ws_enter(p);
  if (rc) {
    ws_u64_fetch_add(&p->resv_done, 1, ws_release);
    ws_event_notify(&p->ext); /* a drain may have seen the count */
  }
  return rc;
}

void ws_unreserve(struct pool *p) {
  /* Release: pairs with ws_submits_idle's seq_cst load; whoever sees the
   * reservation end sees the push before it (fns_pushed). */
  ws_u64_fetch_add(&p->resv_done, 1, ws_release);
  /* Its fence orders the store above before the read of the waiter count,
   * as a worker's announcement does (worker.c, nothing_found). */
  ws_event_notify(&p->ext);
  ws_leave(p);
}

/* A pool inherited across fork(): its threads do not exist here and its
 * locks may be held by the parent's. Free the memory, join nothing. */
static void destroy_forked(struct pool *p) {
  /* Closed, as a reused struct must be. Callers of it here return
   * EOWNERDEAD before they touch the gate; the parent's are not here. */
  ws_u32_store(&p->gate, WS_GATE_CLOSED, ws_relaxed);
  ws_trace_pool_destroyed(p);
  free_pool(p, true);
}

int pool_destroy(pool_t *pool) {
  ws_worker *self = ws_self();
  int err;
  struct pool *p = ws_resolve_err(pool, &err);
  if (!p) return err;
  if (self && self->pool == p) return EDEADLK;
  if (p->is_default) return EINVAL;
  if (ws_pool_forked(p)) {
    /* Closed in the parent: a destroy there was under way (its memory
     * partly freed, or the struct free already); freeing again here would
     * free it twice. Relaxed: this thread's own copy of the word. */
    if (ws_u32_load(&p->gate, ws_relaxed) & WS_GATE_CLOSED) return ESHUTDOWN;
    destroy_forked(p);
    return 0;
  }
  /* Close the gate. acq_rel: acquire pairs with the release of every
   * leave before this point; the count this RMW leaves behind is what we
   * wait for. A second, concurrent destroy finds it closed. */
  uint32_t v = ws_u32_load(&p->gate, ws_relaxed);
  do {
    if (v & WS_GATE_CLOSED) return ESHUTDOWN;
  } while (!ws_u32_cas(&p->gate, &v, v | WS_GATE_CLOSED, ws_acq_rel));
  /* The visitors' side of the gate (visitors.h): after the close, before
   * anything is freed. */
  ws_heavy_fence();
  /* Producers waiting for room (submit.c, bound_wait) see the close and
   * leave with ESHUTDOWN: the notify's fence follows the close. */
  ws_event_notify(&p->room);
  for (unsigned l = 0; l < WS_LANES; l++) ws_gqueue_close(&p->gq[l]);
  /* Drain: tasks submitted before the close, and whatever they submit from
   * inside the pool meanwhile (the pool is idle only when none is left). */
  ws_latch idle = ws_latch_idle();
  ws_latch_block(p, &idle); /* not a worker of p: refused above */
  stop_workers(p);
  WS_ASSERT(ws_submits_idle(p));
  WS_ASSERT(!ws_global_maybe_nonempty(p));
  /* Every task has run now, so every outside caller still inside the pool
   * blocked in pool_sync, pool_group_wait, parallel_for or wait_idle has
   * its condition met, and its completer woke it (design.md 5.6, 5.7); one
   * wake more, for those the drain met, costs a fence. One between its push
   * and its notify leaves on its own. A pool_job_wait may stay much longer:
   * its job's predecessor may be of another pool and complete at any time,
   * and only that completion (ESHUTDOWN here, job.c) wakes it. So destroy
   * sleeps on the gate, woken by the emptying leave (ws_leave), however
   * many threads are registered on the event: waking them again and
   * yielding in a loop burned a core until the last predecessor ended. */
  ws_latch_notify(p, WS_WAKE_OUTSIDE);
  for (;;) {
    /* Acquire: the leaves' releases; what they did is done before we free. */
    v = ws_u32_load(&p->gate, ws_acquire);
    if (v == WS_GATE_CLOSED) break;
    /* Returns at once if a leave or a late entry changed the word since. */
    ws_futex_wait(&p->gate, v);
  }
  ws_visitors_wait(p);
  ws_prof_destroyed(p);
  ws_stats_report(p);
  ws_trace_pool_destroyed(p);
  free_pool(p, false);
  return 0;
}

/* The default pool: created on first use; a failed creation is retried by
 * the next call, and every call meanwhile reports its own attempt's error. */
static struct pool *default_get(int *err) {
  /* Acquire: pairs with the release store below; the pool is complete. */
  struct pool *p = ws_ptr_load(&default_pool, ws_acquire);
  if (p) return p;
  pthread_mutex_lock(&default_lock);
  p = ws_ptr_load(&default_pool, ws_relaxed);
  int rc = 0;
  if (!p) {
    rc = pool_create(&p, NULL);
    if (rc == 0) {
      p->is_default = true;
      ws_ptr_store(&default_pool, p, ws_release);
    } else {
      p = NULL;
    }
  }
  pthread_mutex_unlock(&default_lock);
  *err = rc;
  return p;
}

pool_t *pool_default(void) {
  int err;
  return default_get(&err);
}

struct pool *ws_resolve_err(struct pool *p, int *err) {
  *err = EINVAL;
  if (p) return p;
  ws_worker *w = ws_self();
  if (w) return w->pool;
  return default_get(err);
}

struct pool *ws_resolve(struct pool *p) {
  int err;
  return ws_resolve_err(p, &err);
}

/* fork(): the handlers take every process-wide lock, so the child gets
 * none held by a thread it does not have; the child then marks every pool
 * as the parent's (ws_fork_gen), forgets the default pool (the next use
 * makes a fresh one) and stops being a worker if the forking thread was
 * one. */
static void atfork_prepare(void) {
  pthread_mutex_lock(&default_lock);
  pthread_mutex_lock(&global_lock);
  ws_visitors_atfork(0);
  ws_placement_atfork(0);
  ws_trace_atfork(0);
  ws_futex_atfork(0);
}

static void atfork_parent(void) {
  ws_futex_atfork(1);
  ws_trace_atfork(1);
  ws_placement_atfork(1);
  ws_visitors_atfork(1);
  pthread_mutex_unlock(&global_lock);
  pthread_mutex_unlock(&default_lock);
}

static void atfork_child(void) {
  ws_fork_gen++;
  if (ws_self()) {
    ws_placement_unbind_forked(ws_self());
    ws_set_self(NULL);
  }
  /* A profile's strand is of the parent's pool: the child may begin its own. */
  ws__strand = (ws_strand){0};
  struct pool *d = ws_ptr_load(&default_pool, ws_relaxed);
  if (d) {
    d->next_free = default_orphans;
    default_orphans = d;
    ws_ptr_store(&default_pool, NULL, ws_relaxed);
  }
  /* Late callers counted in a free struct's gate were threads of the
   * parent: none is here to leave. */
  for (struct pool *p = free_pools; p; p = p->next_free)
    ws_u32_store(&p->gate, WS_GATE_CLOSED, ws_relaxed);
  ws_awake_forget();
  ws_futex_atfork(2);
  ws_trace_atfork(2);
  ws_placement_atfork(2);
  ws_visitors_atfork(2);
  pthread_mutex_unlock(&global_lock);
  pthread_mutex_unlock(&default_lock);
}

int ws_fork_setup(void) {
  int rc = 0;
  pthread_mutex_lock(&global_lock);
  if (!atfork_registered) {
    if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0)
      atfork_registered = true;
    else
      rc = ENOMEM;
  }
  pthread_mutex_unlock(&global_lock);
  return rc;
}

pool_t *pool_current(void) {
  ws_worker *w = ws_self();
  return w ? w->pool : NULL;
}

/* Workers 0 .. nthreads-1, then stand-ins (standin.c) from nthreads. */
int pool_worker_id(void) {
  ws_worker *w = ws_self();
  return w ? (int)w->id : -1;
}

unsigned pool_threads(const pool_t *pool) {
  struct pool *p = ws_resolve((struct pool *)pool);
  /* nthreads lives in the struct, which is never freed: no gate needed. */
  /* Relaxed: a count, which a concurrent resize may change anyway. */
  return p && !ws_pool_forked(p) ? ws_u32_load(&p->size, ws_relaxed) : 0;
}

/* Resizing (docs/design.md 10.4). A shrink tells each worker beyond the
 * new size to park (`off` = 1, seq_cst, before the wake: a worker about to
 * sleep reads it after its registration, worker.c), wakes the sleepers so
 * they look, then waits for each to say it parked (2, which it stores
 * only between tasks). A grow clears the word and wakes the worker. */
int pool_resize(pool_t *pool, unsigned threads) {
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_worker *self = ws_self();
  if (self && self->pool == p) return EDEADLK;
  if (ws_pool_forked(p)) return EOWNERDEAD;
  if (threads == 0 || threads > p->nthreads) return EINVAL;
  if ((rc = ws_enter(p)) != 0) return rc;
  pthread_mutex_lock(&p->resize_lock);
  unsigned old = ws_u32_load(&p->size, ws_relaxed); /* written under the lock */
  if (threads < old) {
    for (unsigned i = threads; i < old; i++) ws_u32_store(&p->workers[i]->off, 1, ws_seq_cst);
    ws_u32_store(&p->size, threads, ws_relaxed);
    ws_sleep_wake_all(&p->sleep);
    ws_wait_notify(&p->sleep); /* fewer threads free (ws_none_free) */
    for (unsigned i = threads; i < old; i++) {
      ws_u32 *off = &p->workers[i]->off;
      /* Acquire: pairs with the worker's acq_rel CAS to 2; its last task
       * happened before. 0: destroy stopped the pool meanwhile. A
       * stopping pool's workers may have left without parking: seq_cst,
       * Dekker with destroy's store of `stop` and its exchange of `off`
       * (design.md 10.4): we see `stop`, or its exchange sees our 1. */
      while (ws_u32_load(off, ws_acquire) == 1 && !ws_u32_load(&p->stop, ws_seq_cst))
        ws_futex_wait(off, 1);
    }
  } else {
    for (unsigned i = old; i < threads; i++) {
      /* Release: nothing to publish but the value; the worker rereads
       * everything it needs (its loop looks at the queues afresh). */
      ws_u32_store(&p->workers[i]->off, 0, ws_release);
      ws_futex_wake(&p->workers[i]->off, INT_MAX);
    }
    ws_u32_store(&p->size, threads, ws_relaxed);
  }
  pthread_mutex_unlock(&p->resize_lock);
  ws_leave(p);
  return 0;
}

/* The per-worker queries read a worker of a live pool: inside its gate
 * when called from outside it. */
static int query_enter(struct pool *p, bool *inside) {
  ws_worker *w = ws_self();
  *inside = w && w->pool == p;
  return *inside ? 0 : ws_enter(p);
}

int pool_worker_cpu(const pool_t *pool, unsigned worker) {
  struct pool *p = ws_resolve((struct pool *)pool);
  bool inside;
  if (!p || worker >= p->nthreads || query_enter(p, &inside) != 0) return -1;
  int cpu = p->workers[worker]->cpu;
  if (!inside) ws_leave(p);
  return cpu;
}

int pool_worker_stats(const pool_t *pool, unsigned worker, pool_worker_stats_t *out) {
  int rc;
  struct pool *p = ws_resolve_err((struct pool *)pool, &rc);
  if (!p) return rc;
  if (!out || worker >= p->nthreads) return EINVAL;
  bool inside;
  if ((rc = query_enter(p, &inside)) != 0) return rc;
  ws_read_stats(p, worker, out);
  if (!inside) ws_leave(p);
  return 0;
}

/* The nets of mem.h summed: `shared`, each worker's, each stand-in's
 * (relaxed: a statistic, see ws_mem_count). Bytes in flight between two
 * nets (a block allocated on one thread and freed on another while this
 * reads) may make the sum briefly low or high, even below 0 as an
 * integer: that reads as 0. */
int pool_memory(const pool_t *pool, size_t *bytes) {
  int rc;
  struct pool *p = ws_resolve_err((struct pool *)pool, &rc);
  if (!p) return rc;
  if (!bytes) return EINVAL;
  bool inside;
  if ((rc = query_enter(p, &inside)) != 0) return rc;
  /* Every worker built, those parked by pool_resize too. */
  uint64_t sum = ws_u64_load(&p->mem.shared, ws_relaxed) + WS_THREADS_SUM(p, mem_net, ws_relaxed);
  if (!inside) ws_leave(p);
  *bytes = (int64_t)sum < 0 ? 0 : (size_t)sum;
  return 0;
}

static int submit_outside(struct pool *p, pool_fn fn, void *const *args, size_t n, ws_admit mode);

/* Any submission: n tasks, waiting for room (a bound) or not. Out of
 * line: inlined, it made pool_submit's path into a worker's deque save
 * three registers. */
static __attribute__((noinline)) int submit(pool_t *pool, pool_fn fn, void *const *args, size_t n,
                                            ws_admit mode) {
  if (!fn) return EINVAL;
  ws_worker *w = ws_self();
  if (w && (!pool || pool == w->pool)) return n ? ws_submit_inside(w, fn, args, n) : 0;
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  return n ? submit_outside(p, fn, args, n, mode) : 0;
}

/* From a profiled strand, entered at x: a submission's time (a lane's
 * lock, a wake, a wait for room) is the runtime's, not the strand's
 * (design.md 15.1). Out of line: the submissions of no strand pay a
 * thread-local test. */
static __attribute__((noinline, cold)) int submit_profiled(uint64_t x, pool_t *pool, pool_fn fn,
                                                           void *const *args, size_t n,
                                                           ws_admit mode) {
  return ws_prof_skipped(x, submit(pool, fn, args, n, mode));
}

int pool_submit(pool_t *pool, pool_fn fn, void *arg) {
  uint64_t x = ws_prof_entry();
  if (__builtin_expect(x != 0, 0)) return submit_profiled(x, pool, fn, &arg, 1, WS_ADMIT_WAIT);
  ws_worker *w = ws_self();
  /* From a task of the pool, the common case: straight onto its deque. */
  if (fn && w && (!pool || pool == w->pool)) return ws_submit_one_inside(w, fn, arg);
  return submit(pool, fn, &arg, 1, WS_ADMIT_WAIT);
}

int pool_try_submit(pool_t *pool, pool_fn fn, void *arg) {
  uint64_t x = ws_prof_entry();
  if (__builtin_expect(x != 0, 0)) return submit_profiled(x, pool, fn, &arg, 1, WS_ADMIT_TRY);
  return submit(pool, fn, &arg, 1, WS_ADMIT_TRY);
}

int pool_submit_n(pool_t *pool, pool_fn fn, void *const *args, size_t n) {
  uint64_t x = ws_prof_entry();
  if (__builtin_expect(x != 0, 0)) return submit_profiled(x, pool, fn, args, n, WS_ADMIT_WAIT);
  return submit(pool, fn, args, n, WS_ADMIT_WAIT);
}

/* An outside submission enters as a visitor (visitors.h; docs/design.md
 * 10.1): a store to the thread's own slot and a compiler fence, instead of
 * two RMWs of the gate word, a line all producers share (design.md 18: 4
 * producers 10 % slower with the gate). A thread
 * whose slot cannot be listed counts itself in the gate instead. The whole
 * call is inside: the push and the notify touch the pool. */
static int submit_outside(struct pool *p, pool_fn fn, void *const *args, size_t n, ws_admit mode) {
  if (ws_pool_forked(p)) return EOWNERDEAD;
  if (!ws_visitor_list()) {
    int rc = ws_enter(p);
    if (rc == 0) {
      rc = ws_submit_outside(p, fn, args, n, mode);
      ws_leave(p);
    }
    return rc;
  }
  ws_visit_begin(p);
  /* Acquire: pairs with pool_create's release that opened the gate. */
  int rc = ws_u32_load(&p->gate, ws_acquire) & WS_GATE_CLOSED ? ESHUTDOWN : 0;
  if (rc == 0) rc = ws_submit_outside(p, fn, args, n, mode);
  ws_visit_end();
  return rc;
}

/* Read in the order that keeps both differences from going negative:
 * every finish before its task's start (same worker: `finished` is a
 * release after `starts`, acquired here first), every start before its
 * submission count (the count precedes the push the worker took the task
 * from, before its release store of `starts`, acquired here). */
int pool_pending(const pool_t *pool, size_t *queued, size_t *running) {
  int rc;
  struct pool *p = ws_resolve_err((struct pool *)pool, &rc);
  if (!p) return rc;
  bool inside;
  if ((rc = query_enter(p, &inside)) != 0) return rc;
  uint64_t fin = WS_THREADS_SUM(p, finished, ws_acquire);
  uint64_t sta = WS_THREADS_SUM(p, starts, ws_acquire);
  uint64_t sub = WS_THREADS_SUM(p, submitted, ws_relaxed);
  for (unsigned l = 0; l < WS_LANES; l++) sub += ws_u64_load(&p->gq[l].fns_pushed, ws_relaxed);
  if (!inside) ws_leave(p);
  if (queued) *queued = sub > sta ? (size_t)(sub - sta) : 0;
  if (running) *running = sta > fin ? (size_t)(sta - fin) : 0;
  return 0;
}

int pool_wait_idle(pool_t *pool) {
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_worker *w = ws_self();
  if (w && w->pool == p) return EDEADLK;
  if ((rc = ws_enter(p)) != 0) return rc;
  ws_latch idle = ws_latch_idle();
  uint64_t at = ws_prof_wait_begin(p);
  ws_latch_block(p, &idle); /* not a worker of p: refused above */
  ws_prof_wait_end(p, at);
  ws_leave(p);
  return 0;
}

/* The work/span profile's regions (the rest is profile.c's). */
int pool_profile_begin(pool_t *pool) {
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  ws_worker *w = ws_self();
  if (w && w->pool == p) return EDEADLK;
  if (ws_pool_forked(p)) return EOWNERDEAD;
  if (ws_prof_root_live()) return EBUSY;
  /* Inside the gate: the workers' array stays while it is read. */
  if ((rc = ws_enter(p)) != 0) return rc;
  uint32_t off = 0;
  /* Acquire: the last region's end happened before this one's counts. */
  if (!ws_u32_cas(&p->prof_on, &off, 2, ws_acquire)) {
    ws_leave(p);
    return EBUSY;
  }
  ws_prof_region_start(p, false);
  ws_ptr_store(&p->prof.root, &ws__strand, ws_relaxed);
  ws__strand = (ws_strand){p, NULL, 0, 0, ws_prof_now()};
  ws_leave(p);
  return 0;
}

int pool_profile_end(pool_t *pool, pool_profile_t *out) {
  uint64_t x = ws_prof_now(); /* the root strand ends at the call, not after the checks */
  int rc;
  struct pool *p = ws_resolve_err(pool, &rc);
  if (!p) return rc;
  if (!out) return EINVAL;
  if (ws_pool_forked(p)) return EOWNERDEAD;
  if (!ws_prof_root_live() || ws__strand.pool != p) return ENOENT;
  if ((rc = ws_enter(p)) != 0) {
    ws__strand = (ws_strand){0};
    return rc;
  }
  ws_prof_cut(x);
  uint64_t root = ws_prof_pack(ws__strand.span, ws__strand.conts);
  ws__strand = (ws_strand){0};
  ws_prof_region_finish(p, root, out);
  ws_leave(p);
  return 0;
}

const char *pool_strerror(int err) {
  switch (err) {
  case 0: return "success";
  case EINVAL: return "invalid argument";
  case ENOMEM: return "out of memory";
  case EAGAIN: return "try again: a worker thread could not be created, or the pool's queue is at its bound";
  case E2BIG: return "more tasks than the pool's queue bound";
  case ESHUTDOWN: return "the pool is being destroyed";
  case EDEADLK: return "would deadlock: called from the work it would wait for (a worker or stand-in of the pool, or the awaited group or job)";
  case ENOTSUP: return "worker binding is not supported here";
  case EBUSY: return "resource busy";
  case EOWNERDEAD: return "the pool belongs to the parent process (inherited across fork)";
  case ECANCELED: return "the work was cancelled";
  case EALREADY: return "the work had already failed or been cancelled";
  case EINPROGRESS: return "the job has not completed yet";
  case ENOENT: return "no such thing: nothing of the kind was begun here";
  default: return "unknown error";
  }
}
