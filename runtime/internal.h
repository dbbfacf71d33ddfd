/* SPDX-License-Identifier: MIT */
/* Internal structures shared by the runtime's files. Nothing here is API. */
#ifndef WS_INTERNAL_H
#define WS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <wspool.h>

#include "atomics.h"
#include "deque.h"
#include "gqueue.h"
#include "hooks.h"
#include "nodes.h"
#include "sleep.h"
#include "task.h"
#include "trace.h"

#define WS_HIDDEN __attribute__((visibility("hidden")))

/* Debug checks (-Ddebug_checks=true, debug.c). WS_MISUSE reports a misuse
 * the header names and aborts; WS_ASSERT an invariant of the runtime. Both
 * compile to nothing in other builds (WS_DEBUG is a constant, so the
 * conditions are still type-checked). */
#ifdef WS_DEBUG_CHECKS
#define WS_DEBUG 1
__attribute__((noreturn, cold)) void ws_debug_fail(const char *what, const char *file, int line);
/* Objects in use, by address (debug.c): a group from its first pending
 * child until its count is back to 0. */
void ws_debug_busy_set(const void *obj, bool in_use);
bool ws_debug_busy(const void *obj);
#else
#define WS_DEBUG 0
static inline void ws_debug_fail(const char *what, const char *file, int line) {
  (void)what;
  (void)file;
  (void)line;
}
static inline void ws_debug_busy_set(const void *obj, bool in_use) {
  (void)obj;
  (void)in_use;
}
static inline bool ws_debug_busy(const void *obj) {
  (void)obj;
  return false;
}
#endif
#define WS_MISUSE_IF(cond, what)                                            \
  do {                                                                      \
    if (WS_DEBUG && (cond)) ws_debug_fail("misuse: " what, __FILE__, __LINE__); \
  } while (0)
#define WS_ASSERT(cond)                                                                 \
  do {                                                                                  \
    if (WS_DEBUG && !(cond)) ws_debug_fail("invariant broken: " #cond, __FILE__, __LINE__); \
  } while (0)

typedef struct ws_stats {
  ws_u64 tasks, local_pops, global_pops, steals, steals_remote, steal_failures, sleeps;
  ws_u64 global_taken;
} ws_stats;

typedef struct ws_worker {
  /* The `limit` of this worker's fast spawn path (forkjoin.c), which lives
   * in its thread's pool__tls: other workers close it through this
   * pointer. It points at `limit_parked` until the thread has set it up
   * and again before the thread ends; every worker of the pool has stopped
   * looking for work before any of their threads ends (worker.c), so no
   * thief writes into a thread's block after it is gone. */
  ws_ptr limitp; /* uintptr_t *, accessed with ws_abi_load/store */
  uintptr_t limit_parked;
  WS_ALIGNED ws_deque dq; /* its own cache lines */
  /* Lazy publication of spawned frames (forkjoin.c): [priv_lo, ws_top())
   * are frames newer than everything in `dq`, not yet visible to thieves.
   * priv_base[-1] is a marker slot; priv_end is one past the last slot.
   * Owner only. */
  ws_task **priv_lo, **priv_base, **priv_end;
  ws_task **priv_block;    /* the array's allocation: the marker slot first */
  ws_task **priv_embedded; /* the first array, inside the worker's block */
  WS_ALIGNED struct pool *pool;
  /* Completion accounting of pool_submit tasks (pool.c): submitted from
   * this worker onto its own deque, and finished on this worker. Written
   * by the owner only, read by waiters. */
  ws_u64 submitted, finished;
  /* A submitted task finished here since this worker last told outside
   * waiters (worker.c, nothing_found). Owner only. */
  bool announce_idle;
  unsigned id;
  int cpu;       /* bound PU (OS index) or -1 */
  int numa;      /* NUMA node of that PU, or -1 */
  uint64_t rng;  /* xorshift state for victim choice */
  /* Victims ordered nearest first; level_end[k] is one past the last victim
   * of distance level k. Random start within each level. */
  unsigned *victims;
  unsigned nvictims;
  unsigned level_end[4];
  unsigned nlevels;
  /* Lowest address of this worker's stack, as an integer (ws_may_help);
   * an estimate from the requested size when the thread's attributes
   * cannot be read (worker.c). */
  uintptr_t stack_lo;
  size_t help_reserve; /* help while waiting only with more stack than this */
  ws_node_cache nodes;
  ws_stats stats;
  ws_trace_buf *trace; /* NULL unless WSPOOL_TRACE is set */
  pthread_t thread;
  bool started;
  void *mem;           /* allocation backing this struct (see placement) */
  size_t mem_size;
} ws_worker;

/* The entry gate (pool.c, docs/design.md 10.1 "The entry gate"):
 * the count of outside calls inside the pool, and WS_GATE_CLOSED once
 * pool_destroy() began. */
#define WS_GATE_CLOSED 0x80000000u

struct pool {
  /* First, and never freed: destroy keeps the struct on a free list that
   * pool_create() reuses, so a call that reaches the gate after destroy
   * finished still meets a live word (and CLOSED). Not cleared on reuse
   * (pool_create only removes CLOSED). */
  WS_ALIGNED ws_u32 gate;
  unsigned fork_gen;            /* ws_fork_gen when created; kept on reuse */
  struct pool *next_free;       /* the free list of destroyed pools */
  WS_ALIGNED ws_gqueue gq;
  ws_sleep sleep;
  ws_event ext;                 /* outside waiters */
  /* pool_submit tasks finished by a thread that is not one of this pool's
   * workers (none does today; kept so the count stays exact if one ever
   * runs them). The rest of the accounting is per worker (pool.c). */
  WS_ALIGNED ws_u64 finished_outside;
  ws_u32 stop;                  /* workers exit once they find no work */
  ws_u32 stopped;               /* workers that left their loop (worker.c) */
  unsigned nstarted;            /* threads started; set before `stop` */
  unsigned nthreads;
  ws_worker **workers;
  pool_config_t cfg;
  bool is_default;
  struct ws_placement *placement;
  unsigned trace_pid; /* this pool's process track in the trace */
  ws_hooks hooks;     /* worker hooks and thread names (hooks.c) */
};

/* The calling thread's worker, NULL outside every pool. Initial-exec TLS:
 * one instruction on x86-64, and the library is linked, not dlopen'ed late. */
extern __thread ws_worker *ws__self __attribute__((tls_model("initial-exec")));

static inline ws_worker *ws_self(void) { return ws__self; }
/* Sets ws__self, and the header's pool__tls (forkjoin.c), for this
 * thread. */
void ws_set_self(ws_worker *w);

/* The thread's block of the header's inline ABI: `struct pool__tls`
 * (wspool.h, where each field is described), the one type the library and
 * every caller declare it with, so that link-time optimisation across the
 * two sees one object of one type. Every field but `limit` belongs to its
 * own thread and needs no atomics; `limit` is read and written with
 * ws_abi_load/ws_abi_store (atomics.h), as the header does.
 * top: one past the calling worker's newest private frame. Thread-local
 * rather than in ws_worker because every spawn and sync of a recursion
 * reads and writes it in turn: through a pointer that chain of loads and
 * stores waits for a store-to-load forwarding per step (docs/design.md,
 * section 6). */
extern __thread struct pool__tls pool__tls __attribute__((tls_model("initial-exec")));
static inline ws_task **ws_top(void) { return (ws_task **)pool__tls.top; }
static inline void ws_set_top(ws_task **top) { pool__tls.top = (void **)top; }

/* NULL pool -> the caller's pool, else the default pool (may be NULL). */
struct pool *ws_resolve(struct pool *p);
/* The same, and why there is no pool: *err is the default pool's creation
 * error (EAGAIN, ENOMEM, ...) when that is the reason, else EINVAL. */
struct pool *ws_resolve_err(struct pool *p, int *err);

/* Bumped in the child after fork(): pools created before belong to the
 * parent (their threads do not exist here). Written only by the atfork
 * child handler, while the child has one thread; read after. */
extern unsigned ws_fork_gen;
static inline bool ws_pool_forked(const struct pool *p) { return p->fork_gen != ws_fork_gen; }

/* Entry accounting for outside callers (pool.c). ws_enter: 0, ESHUTDOWN
 * once destroy began, EOWNERDEAD for a pool inherited across fork(); on 0
 * the caller must ws_leave() when it will touch the pool no more.
 * ws_enter_any counts without refusing: for waits on work the pool already
 * accepted (destroy runs it before it waits for the gate). */
int ws_enter(struct pool *p);
int ws_enter_any(struct pool *p);
void ws_leave(struct pool *p);

/* Tells sleepers about work a worker just pushed on its deque. Every push
 * is announced, not only pushes onto an empty deque: the owner's idea of
 * whether its deque was empty comes from a relaxed read of top, so a push
 * it thinks lands on a non-empty deque may land on one a thief has just
 * emptied. The announcement costs a compiler fence and one load of a
 * rarely written line while nobody sleeps (sleep.h: the sleeper pays the
 * barrier). */
static inline void ws_after_push(struct pool *p) { ws_sleep_notify(&p->sleep); }

/* Move the oldest `n` private frames to the public deque (forkjoin.c). */
void ws_publish(ws_worker *w, size_t n);
/* Points the private frame array at `block` (cap + 1 slots, the first the
 * marker), empty. */
void ws_priv_init(ws_worker *w, ws_task **block, size_t cap);

/* Closing the fast spawn path (forkjoin.c): the owner when its deque looks
 * empty, a thief that found it empty or took its last task. */
static inline void ws_fast_close(void) {
  if (ws_abi_load(&pool__tls.limit, ws_relaxed) != 0) ws_abi_store(&pool__tls.limit, 0, ws_relaxed);
}
void ws_ask_publish(ws_worker *victim);

/* The owner's pop: closes the fast path once the deque is empty, so the
 * next spawn publishes. */
static inline ws_task *ws_pop_own(ws_worker *w) {
  ws_task *t = ws_deque_pop(&w->dq);
  if (ws_deque_size_hint(&w->dq) <= 0) ws_fast_close();
  return t;
}

/* Push a task on w's deque and tell sleepers; w is the caller's worker.
 * ENOMEM if the deque can't grow.
 * Private frames are newer than every public task, so they are published
 * first: the deque keeps the order the owner created its work in. */
static inline int ws_push(ws_worker *w, ws_task *t) {
  if (ws_top() != w->priv_lo) ws_publish(w, (size_t)(ws_top() - w->priv_lo));
  int64_t before;
  int rc = ws_deque_push(&w->dq, t, &before);
  if (rc == 0) ws_after_push(w->pool);
  return rc;
}

/* ws_push for tasks[0..n), one announcement; tasks[n-1] is popped first.
 * ENOMEM (nothing pushed) unless ws_deque_reserve made room before. */
static inline int ws_push_n(ws_worker *w, ws_task *const *tasks, size_t n) {
  if (ws_top() != w->priv_lo) ws_publish(w, (size_t)(ws_top() - w->priv_lo));
  int rc = ws_deque_push_n(&w->dq, tasks, (int64_t)n);
  if (rc == 0) ws_after_push(w->pool);
  return rc;
}

/* A pool_submit task (fn, arg) for worker w's pool, from w's node cache;
 * NULL without memory. Running it counts it finished (ws_submit_finished);
 * whoever made it has counted it submitted. */
ws_task *ws_submit_task(ws_worker *w, pool_fn fn, void *arg);

/* Put a runtime task on the pool's global queue (outside threads). */
int ws_push_global(struct pool *p, ws_task *t, bool refuse_closed);

/* Trace a task run: t0 = ws_trace_t0(w); fn(arg); ws_trace_task(w, fn, t0). */
static inline uint64_t ws_trace_t0(const ws_worker *w) {
  return w && w->trace ? ws_trace_now() : 0;
}
static inline void ws_trace_task(ws_worker *w, ws_fnptr fn, uint64_t t0) {
  if (w && w->trace) ws_trace_record(w->trace, WS_EV_TASK, fn, t0, 0);
}

/* Runs a task on worker w, the calling thread's own. Frames the task's
 * pool_sync() ran on the fork/join fast path were counted in the
 * thread-local pool__tls.tasks (wspool.h); they join the worker's
 * statistic here, with the task itself. */
static inline void ws_run(ws_worker *w, ws_task *t) {
  t->exec(t, w);
  if (w) {
    uint64_t inlined = pool__tls.tasks;
    pool__tls.tasks = 0;
    ws_counter_add(&w->stats.tasks, 1 + inlined);
  }
}

/* One look for work: own deque, global queue, then one round of steals,
 * `hint` first when given. NULL when nothing was found. */
ws_task *ws_find_work(ws_worker *w, ws_worker *hint);

/* True while the worker may run other tasks on its stack while waiting.
 * Addresses compared as integers: C defines pointer subtraction only
 * within one object, and stack_lo is not one we own. */
static inline bool ws_may_help(const ws_worker *w) {
  char here;
  uintptr_t sp = (uintptr_t)&here;
  return sp > w->stack_lo && sp - w->stack_lo > w->help_reserve;
}

/* Wait, helping, until *word == value / (*count & mask) == 0 (acquire).
 * Worker threads only. `hint` is a worker to steal from first, or NULL. */
void ws_help_until_value(ws_worker *w, ws_u32 *word, uint32_t value, ws_worker *hint);
void ws_help_until_zero(ws_worker *w, ws_i64 *count, int64_t mask);
/* Outside threads: block on the pool's event until the condition holds.
 * The finisher must make it true with a seq_cst store/RMW and then call
 * ws_event_notify(&pool->ext) (for idleness: see ws_submit_finished). */
void ws_block_until_value(struct pool *p, ws_u32 *word, uint32_t value);
/* Until every pool_submit task counted so far has finished (pool.c). */
void ws_block_until_idle(struct pool *p);
/* True when every pool_submit task counted submitted has finished. */
bool ws_submits_idle(struct pool *p);

/* A pool_submit task finished on worker w (NULL: another thread). Release:
 * a waiter that acquires `finished` sees every count of submissions the
 * task made before it (pool.c). The worker tells outside waiters when it
 * next runs out of work (worker.c), not after every task. */
static inline void ws_submit_finished(ws_worker *w, struct pool *p) {
  if (w) {
    ws_u64_store(&w->finished, ws_u64_load(&w->finished, ws_relaxed) + 1, ws_release);
    w->announce_idle = true;
  } else {
    ws_u64_fetch_add(&p->finished_outside, 1, ws_seq_cst);
    ws_event_notify(&p->ext);
  }
}

/* Placement (placement.c; docs/design.md "Placement").
 * plan: decide each worker's PU and NUMA node (before workers exist, so
 *       their memory can be allocated on their node); ENOTSUP when binding
 *       was asked, is impossible and bind_strict is set.
 * worker: fill w->cpu (planned PU or -1), w->numa and the victim order.
 * bind: bind the started thread of w; 0 or an errno value. */
struct ws_placement;
/* CPUs in the calling thread's affinity (taskset, cgroup cpusets), at least 1. */
unsigned ws_allowed_cpus(void);
int ws_placement_plan(struct pool *p);
int ws_placement_worker(struct pool *p, ws_worker *w);
int ws_placement_bind(struct pool *p, ws_worker *w);
void ws_placement_free(struct pool *p);
void *ws_placement_alloc(struct pool *p, unsigned worker, size_t size);
void ws_placement_dealloc(struct pool *p, void *mem, size_t size);

/* WSPOOL_STATS=1: the per-worker table on stderr (stats.c). */
void ws_stats_report(struct pool *p);
/* Worker `worker`'s counters (index checked by the caller). */
void ws_read_stats(struct pool *p, unsigned worker, pool_worker_stats_t *out);

/* Registers the fork handlers (pool.c), once; ENOMEM if it cannot. */
int ws_fork_setup(void);
/* Fork handlers of placement.c and trace.c: 0 before fork() (take the
 * lock), 1 in the parent and 2 in the child after it. */
void ws_placement_atfork(int phase);
void ws_trace_atfork(int phase);

/* Environment (config.c). */
int ws_env_flag(const char *name);

#endif /* WS_INTERNAL_H */
