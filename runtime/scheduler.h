/* SPDX-License-Identifier: MIT */
/* Layer 1, the scheduler: the pool and worker structs and what every
 * scheduling path shares (the thread's worker, running a task, the search
 * for work and the waits of worker.c, the submit wrapper of submit.c). The
 * split deque that every push goes through is split.h. Includes only
 * layer 0 (and the public header); nothing here knows fork/join frames,
 * loops, placement or the pool's lifetime (layer 2, api.h). */
#ifndef WS_SCHEDULER_H
#define WS_SCHEDULER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <wspool.h>

#include "atomics.h"
#include "cancel.h"
#include "debug.h"
#include "deque.h"
#include "gqueue.h"
#include "hooks.h"
#include "mem.h"
#include "nodes.h"
#include "sleep.h"
#include "task.h"
#include "trace.h"

_Static_assert(_Generic((pool_fn)0, ws_fn: 1, default: 0), "pool_fn and ws_fn are one type");

typedef struct ws_stats {
  ws_u64 tasks, local_pops, global_pops, steals, steals_remote, steal_failures, sleeps;
  ws_u64 global_taken, skipped, skipped_items;
} ws_stats;

/* A worker, its fields grouped by who writes them. */
typedef struct ws_worker {
  /* ---- Written by other workers (thieves) as well as the owner ---- */
  /* The `limit` of this worker's fast spawn path (split.c), which lives
   * in its thread's pool__tls: thieves close it through this pointer. The
   * owner sets the pointer; it points at `limit_parked` until the thread
   * has set it up and again before the thread ends; every worker of the
   * pool has stopped looking for work before any of their threads ends
   * (worker.c), so no thief writes into a thread's block after it is gone. */
  ws_ptr limitp; /* uintptr_t *, accessed with ws_abi_load/store */
  uintptr_t limit_parked;
  WS_ALIGNED ws_deque dq; /* its own cache lines: top by thieves' CAS */

  /* ---- Written only by the owner (the worker's thread) ---- */
  /* Lazy publication of spawned frames (split.h): [priv_lo, ws_top())
   * are frames newer than everything in `dq`, not yet visible to thieves.
   * priv_base[-1] is a marker slot; priv_end is one past the last slot. */
  ws_task **priv_lo, **priv_base, **priv_end;
  ws_task **priv_block;    /* the array's allocation: the marker slot first */
  /* Frames published from the private stack so far: the logical position
   * of priv_lo, which scopes use to tell whose a frame is (cancel.h). */
  uint64_t priv_seq;
  ws_task **priv_embedded; /* the first array, inside the worker's block */
  /* The batch this worker's pool_submit calls append to, and how many
   * entries it holds (submit.c). */
  WS_ALIGNED uint32_t open_n;
  struct submit_batch *open_batch;
  /* A submitted task finished here since this worker last told outside
   * waiters (worker.c, nothing_found). */
  bool announce_idle;
  /* Bounded submission (submit.c): outside tasks started here and not yet
   * reported, and how many to report at once (set at build). */
  uint32_t bound_credit, bound_flush;
  unsigned lane_next; /* the global queue's lane to look at first */
  uint64_t rng;       /* xorshift state for victim choice */
  /* Lowest address of this worker's stack, as an integer (ws_may_help);
   * an estimate from the requested size when the thread's attributes
   * cannot be read (worker.c). Set as the thread starts. */
  uintptr_t stack_lo;
  size_t help_reserve; /* help while waiting only with more stack than this */
  /* The default idle poll's neighbour rule (worker.c, auto_poll): this
   * worker sleeps without polling until `quiet_until` (monotonic ns). An
   * idle wait to be judged: when it began (0: none), the pool's outside
   * submissions and this worker's stats.tasks then, and whether it is a
   * sleep (else a poll). */
  uint64_t quiet_until, waited_at, waited_pushed, waited_tasks;
  uint64_t strike_at; /* its last verdict that began no spell */
  bool waited_slept;
  bool quiet_sleep;  /* the last idle search did not poll: a quiet spell */

  /* ---- Set by pool_create before the thread starts; read-only after ---- */
  struct pool *pool;
  unsigned id;
  int cpu;  /* bound PU (OS index) or -1 */
  int numa; /* NUMA node of that PU, or -1 */
  /* Victims ordered nearest first; level_end[k] is one past the last victim
   * of distance level k. Random start within each level. Shared by the
   * workers of one place, and then holding them too (placement.c); a
   * stand-in's is its own and holds every worker. */
  unsigned *victims;
  unsigned nvictims; /* the array's length */
  bool victims_own;  /* this worker frees it */
  unsigned level_end[4];
  unsigned nlevels;
  ws_trace_buf *trace; /* NULL unless WSPOOL_TRACE is set (and at destroy) */
  pthread_t thread;
  bool started;
  void *mem; /* allocation backing this struct (see placement) */
  size_t mem_size;

  /* ---- Written by the owner, read by other threads ---- */
  /* Completion accounting of pool_submit tasks (submit.c): submitted from
   * this worker onto its own deque, and started and finished on this
   * worker; read by waiters (ws_submits_idle) and by pool_pending. */
  WS_ALIGNED ws_u64 submitted, starts, finished;
  ws_stats stats; /* read by pool_worker_stats */
  /* Bytes this thread took from the pool's allocator minus those it gave
   * back (mem.h), wrapping; summed by pool_memory. */
  ws_u64 mem_net;
  /* What the worker does (WS_DOING_*) and, waiting, for what: the latch's
   * kind, word and value, copied (the latch itself is on the waiter's
   * stack, gone when the wait ends). Read by pool_dump_state (and by a
   * test waiting for every nap to end, test/core/scale.c). */
  ws_u32 doing, wait_kind;
  ws_ptr wait_word;
  ws_u64 wait_value;
  /* The work/span profile (profile.h): ticks of strands run here, tasks
   * begun here, successful steals and their ticks. */
  ws_u64 prof_work, prof_tasks, prof_steals, prof_steal_ticks;

  /* ---- Blocking regions and stand-ins (docs/design.md 5.9) ---- */
  bool standin;         /* set before its thread starts; read-only after */
  unsigned block_depth; /* owner only: regions the running task is inside */
  /* A stand-in's futex word: 1 while parked, 0 while awake; written under
   * the pool's standin_lock, and by destroy once `standin_closing`. */
  ws_u32 park;
  /* pool_resize (pool.c, docs/design.md 10.4), the futex word of a worker
   * beyond the pool's size: 0 in use; 1 told to park (by the resizer); 2
   * parked (by the worker, which the resizer waits for). */
  ws_u32 off;

  /* ---- The owner's free list, and a stack other threads push onto ---- */
  ws_node_cache nodes;
} ws_worker;

/* NAP: asleep for at most a nap (design.md 5.3), or looking once more
 * after it; SLEEP: past its last look, asleep until woken. */
enum { WS_DOING_WORK, WS_DOING_NAP, WS_DOING_SLEEP, WS_DOING_WAIT, WS_DOING_PARKED /* a stand-in */ };

/* The entry gate (pool.c, api.h; docs/design.md 10.1 "The entry gate"):
 * the count of outside calls inside the pool, and WS_GATE_CLOSED once
 * pool_destroy() began. */
#define WS_GATE_CLOSED 0x80000000u

/* Outside threads are spread over WS_LANES lanes of the global queue, a
 * thread always in the same one (ws_lane), so outside producers on
 * different lanes share no line (docs/design.md 3.1). */
enum { WS_LANES = 4 };

struct pool {
  /* First, and never freed: destroy keeps the struct on a free list that
   * pool_create() reuses, so a call that reaches the gate after destroy
   * finished still meets a live word (and CLOSED). Not cleared on reuse
   * (pool_create only removes CLOSED). */
  WS_ALIGNED ws_u32 gate;
  unsigned fork_gen;            /* ws_fork_gen when created; kept on reuse */
  /* Every struct ever allocated, for pool_dump_state (dump.c), which reads
   * those marked `dumpable` (from creation until destroy frees). */
  struct pool *next_any;
  ws_u32 dumpable;
  /* Also kept on reuse: what a thread counted in the gate (ws_enter_any)
   * may touch after destroy returned, while the struct may be taken by a
   * new pool (a job of the old pool completing, a wait for one; job.c).
   * Each stays consistent across pools: the event's waiters count
   * themselves in and out, a late wake is spurious for the new pool, and
   * every reservation ends (`resv` and `resv_done` count up together). */
  ws_event ext; /* outside waiters */
  /* Submissions reserved and their reservations ended (ws_reserve, pool.c),
   * counted by ws_submits_idle on the submitted and the finished side. */
  ws_u64 resv, resv_done;
  /* Bumped at each reuse of the struct, before pool_create opens the gate:
   * a job made for an earlier pool of the struct tells it apart once it
   * entered (job.c, job_pool_current). */
  ws_u32 gen;
  struct pool *next_free; /* the free list of destroyed pools; zeroed from here on reuse */
  /* The allocator of everything the pool owns but this struct (mem.h),
   * from cfg at create; the net of threads that are not its workers. */
  ws_mem mem;
  ws_gqueue gq[WS_LANES]; /* the global queue, a part per lane */
  ws_sleep sleep;
  WS_ALIGNED ws_u32 stop;       /* workers exit once they find no work */
  ws_u32 stopped;               /* workers that left their loop (worker.c) */
  unsigned nstarted;            /* threads started; set before `stop` */
  unsigned nthreads;            /* workers built: cfg.max_threads */
  ws_worker **workers;
  /* The workers' stacks (pool.c, map_stacks): nthreads slots of
   * stack_slot bytes, each a guard of stack_guard bytes and a stack; NULL
   * when the C library's are used. */
  void *stacks;
  size_t stack_slot, stack_guard;
  /* asleep[i] != WS_BELL_AWAKE: worker i's deque is empty and stays so
   * until worker i stores AWAKE, which it does before it can push again;
   * thieves pass it over (worker.c; the argument is docs/design.md 5.10).
   * One word a worker, side by side, so that a look over thousands of
   * workers reads a few lines rather than each one's deque. In a pool of
   * more than WS_BELLS_MIN workers the word is also the worker's bell,
   * the futex word it sleeps on (sleep.h; design.md 5.4). */
  ws_u32 *asleep;
  /* Workers in use, [0, size): pool_resize (pool.c), under resize_lock;
   * read relaxed (pool_threads, the last-to-sleep hint). */
  ws_u32 size;
  /* Stand-ins (standin.c; docs/design.md 5.9): slots [0, nstandins) of the
   * array `standins` (ws_worker **, POOL_MAX_THREADS slots, allocated at
   * the first stand-in, never moved) hold built stand-in workers, of ids
   * nthreads + k. nstandins is release-stored once a slot is filled; it is
   * read by every steal round, so it sits here, beside `workers`, on a line
   * rarely written. */
  ws_u32 nstandins;
  ws_ptr standins;
  pool_config_t cfg;
  /* The work/span profile is on (profile.h): read at every profiled
   * decision (a publication, a loop, a submitted task's run, a steal),
   * written by a region's begin and end, so on this read-mostly line. */
  ws_u32 prof_on;
  bool is_default;
  struct ws_placement *placement;
  unsigned trace_pid; /* this pool's process track in the trace */
  ws_hooks hooks;     /* worker hooks and thread names (hooks.c) */
  /* Blocking regions (5.9), written at every region's begin and end: a
   * line of their own. `active` and stand-ins' `park` change only under
   * standin_lock; `standin_closing` is read and written only under it. */
  WS_ALIGNED ws_u32 blocked; /* threads of the pool inside an outermost region */
  ws_u32 active;             /* stand-ins awake (not parked) */
  ws_u32 standin_limit;      /* pool_set_standin_limit() */
  ws_u32 iso_asleep;         /* isolated waiters asleep outside a region (7.5) */
  bool standin_closing;      /* destroy: no stand-in starts or parks any more */
  pthread_mutex_t standin_lock;
  /* Bounded submission (submit.c, "Bounded submission"), used only when
   * cfg.max_queued > 0: outside tasks admitted and not yet reported
   * started, and the event a producer waits for room on. A line of their
   * own: every outside submission RMWs the count. */
  WS_ALIGNED ws_u64 bq_queued;
  ws_event room;
  pthread_mutex_t resize_lock; /* one pool_resize at a time */
  /* The work/span profile's region (profile.h, profile.c; `prof_on`
   * above): written by threads that end strands, outside threads and
   * separate computations, and by a region's begin and end. */
  struct {
    WS_ALIGNED ws_u64 comp;       /* packed: the longest separate computation */
    ws_u32 gen;                   /* regions begun: an end counts in its own only */
    ws_u64 out_work, out_tasks;   /* outside threads' strands */
    bool env;                     /* begun by WSPOOL_PROFILE, at create */
    ws_ptr root; /* the ws__strand of pool_profile_begin's thread, or NULL */
    uint64_t tick0, ns0;          /* the region's start, for the tick rate */
    uint64_t base[4];             /* work, tasks, steals, steal ticks at begin */
    bool have;                    /* `result` holds the last region's */
    pool_profile_t result;
  } prof;
};

/* The calling thread's worker, NULL outside every pool. Initial-exec TLS:
 * one instruction on x86-64, and the library is linked, not dlopen'ed late. */
extern __thread ws_worker *ws__self __attribute__((tls_model("initial-exec")));

static inline ws_worker *ws_self(void) { return ws__self; }
/* The thread's block of the header's inline ABI (wspool/inline.h, where
 * each field is described; docs/design.md 8.2), one type for the library
 * and every caller. Only `limit` is written by other threads (with
 * ws_abi_load/ws_abi_store); `top` is one past the calling worker's newest
 * private frame. */
extern __thread struct pool__tls pool__tls __attribute__((tls_model("initial-exec")));
static inline ws_task **ws_top(void) { return (ws_task **)pool__tls.top; }
static inline void ws_set_top(ws_task **top) { pool__tls.top = (void **)top; }

/* Tells sleepers about work a worker just pushed on its deque: every push,
 * since the owner cannot know that a thief has not just emptied the deque
 * (docs/design.md 5.1). While nobody sleeps: a compiler fence and a load. */
static inline void ws_after_push(struct pool *p) { ws_sleep_notify(&p->sleep); }

/* Trace a task run: t0 = ws_trace_t0(w); fn(arg); ws_trace_task(w, fn, t0). */
static inline uint64_t ws_trace_t0(const ws_worker *w) { return w->trace ? ws_trace_now() : 0; }
static inline void ws_trace_task(ws_worker *w, ws_fnptr fn, uint64_t t0) {
  if (w->trace) ws_trace_record(w->trace, WS_EV_TASK, fn, t0, 0);
}

/* The logical position of the calling thread's next private frame
 * (cancel.h): frames published so far plus those still private. 0 on a
 * thread that is no worker (it has no private frames). */
static inline uint64_t ws_priv_pos_of(const ws_worker *w) {
  return w->priv_seq + (uint64_t)(ws_top() - w->priv_lo);
}
static inline uint64_t ws_priv_pos(void) {
  ws_worker *w = ws__self;
  return w ? ws_priv_pos_of(w) : 0;
}

/* Isolation (pool_isolate; docs/design.md 7.5). Starts an isolated
 * computation's floor at scope s, the calling thread's innermost, when
 * that thread is a worker (split.c). */
void ws_scope_isolate(ws_scope *s);
/* The calling thread's innermost scope when it is inside an isolated
 * computation on a worker, else NULL: then its waits run only tasks from
 * s->floor up of its own deque, and what it submits goes to the global
 * queue. */
static inline ws_scope *ws_isolation(void) {
  ws_scope *s = ws__scope;
  return s && s->floor != WS_NO_FLOOR ? s : NULL;
}
/* Make c the unit of scope s, the thread's innermost: a task of an
 * isolated computation that starts on a thread not yet isolated starts a
 * floor there. */
static inline void ws_scope_set_ctx(ws_scope *s, ws_ctx *c) {
  s->ctx = c;
  if (__builtin_expect(c && c->iso && s->floor == WS_NO_FLOOR, 0)) ws_scope_isolate(s);
}

/* Enter unit c on the calling thread for the scope s (cancel.h). */
static inline void ws_scope_enter(ws_scope *s, ws_ctx *c) {
  ws_scope_push(s, NULL, ws_priv_pos());
  ws_scope_set_ctx(s, c);
}

/* Runs a task on worker w, the calling thread's own, in a scope of its
 * own whose unit the task's exec sets (ws__scope->ctx; none for a
 * submitted task). Frames the task's pool_sync() ran on the fork/join fast
 * path were counted in the thread-local pool__tls.tasks
 * (wspool/inline.h); they join the worker's statistic here, with the task
 * itself. */
static inline void ws_run(ws_worker *w, ws_task *t) {
  ws_scope s;
  unsigned depth = w->block_depth; /* debug builds: regions balance (5.9) */
  ws_scope_push(&s, NULL, ws_priv_pos_of(w));
  t->exec(t, w);
  ws_scope_pop(&s);
  WS_MISUSE_IF(w->block_depth != depth, "a task returned inside its pool_blocking_begin() region");
  uint64_t inlined = pool__tls.tasks;
  pool__tls.tasks = 0;
  ws_counter_add(&w->stats.tasks, 1 + inlined);
}

/* One look for work: own deque, global queue, then one round of steals,
 * `hint` first when given. NULL only when nothing was found and w's own
 * deque is empty: the sleep and exit paths rely on it (design.md 5.5). */
ws_task *ws_find_work(ws_worker *w, ws_worker *hint);
/* The same, of its own deque only (a waiter past its stack bound). */
ws_task *ws_find_own_work(ws_worker *w);
/* Do workers a and b sit on different NUMA nodes (both known)? */
static inline bool ws_across_nodes(const ws_worker *a, const ws_worker *b) {
  return a->numa != b->numa && a->numa >= 0 && b->numa >= 0;
}

/* A task taken from `from`'s deque (w's own: a pop) ran no task after all:
 * a submit batch's steal handle whose runner claimed the last entry first
 * (submit.c). The take is undone, the steal counted as a failed one, so
 * that the statistics count each submitted task once. */
static inline void ws_uncount_take(ws_worker *w, const ws_worker *from) {
  if (from == w) {
    ws_counter_add(&w->stats.local_pops, (uint64_t)-1);
    return;
  }
  ws_counter_add(&w->stats.steals, (uint64_t)-1);
  if (ws_across_nodes(w, from)) ws_counter_add(&w->stats.steals_remote, (uint64_t)-1);
  ws_counter_add(&w->stats.steal_failures, 1);
}

/* True while the worker may run other tasks on its stack while waiting.
 * Addresses compared as integers: C defines pointer subtraction only
 * within one object, and stack_lo is not one we own. */
static inline bool ws_may_help(const ws_worker *w) {
  char here;
  uintptr_t sp = (uintptr_t)&here;
  return sp > w->stack_lo && sp - w->stack_lo > w->help_reserve;
}

/* True when every pool_submit task counted submitted has finished. */
bool ws_submits_idle(struct pool *p);

/* The worker loop (worker.c): runs on w's thread, set up by pool.c, until
 * the pool stops and nothing is left to run. */
void ws_worker_loop(ws_worker *w);

/* A stand-in is surplus when more are awake than threads are blocked in
 * regions, or than the limit allows (docs/design.md 5.9). Relaxed: a hint,
 * checked again under the lock before it parks; a stale value keeps a
 * stand-in awake one task or one idle search longer. */
static inline bool ws_standin_surplus(struct pool *p) {
  uint32_t a = ws_u32_load(&p->active, ws_relaxed);
  return a > ws_u32_load(&p->blocked, ws_relaxed) || a > ws_u32_load(&p->standin_limit, ws_relaxed);
}
/* No thread of the pool is free to run what an isolated waiter may not
 * (design.md 7.5): of its workers in use and its stand-ins awake, every
 * one is in a region or asleep in an isolated wait. seq_cst, read by a
 * registered waiter (ws_wait_prepare) against a store of `size` or
 * `active`, or the increment of `blocked` by a region that starts no
 * stand-in, then ws_wait_notify, by pool_resize, a parking stand-in or
 * pool_blocking_begin: one of the two sees the other. The others only
 * raise the count of free threads (a region's end, a region that starts
 * a stand-in) or decide for themselves (a new isolated sleeper). A thread
 * blocked without a region, or waiting on another pool, counts as free. */
static inline bool ws_none_free(struct pool *p) {
  int64_t avail = (int64_t)ws_u32_load(&p->size, ws_seq_cst) + ws_u32_load(&p->active, ws_seq_cst) -
                  ws_u32_load(&p->blocked, ws_seq_cst) - ws_u32_load(&p->iso_asleep, ws_seq_cst);
  return avail <= 0;
}

/* True when w must go back to its loop after the task it ran instead of
 * running the next one in hand (a job's successor, a submit batch's next
 * entry): a worker beyond a shrunk size (pool_resize's promise, design.md
 * 10.4), or a stand-in no region needs any more (5.9). Relaxed `off`: its
 * own word, as the worker loop reads it between tasks. */
static inline bool ws_stepping_down(const ws_worker *w) {
  return ws_u32_load(&w->off, ws_relaxed) || (w->standin && ws_standin_surplus(w->pool));
}

/* Stand-in slots filled so far (docs/design.md 5.9); 0 for a pool that
 * never had one, at the cost of one relaxed load. Acquire when non-zero:
 * pairs with the release store after the slot was filled, so the slots
 * below the count, and the array pointer, are complete. */
static inline unsigned ws_standins_count(struct pool *p) {
  if (ws_u32_load(&p->nstandins, ws_relaxed) == 0) return 0;
  return ws_u32_load(&p->nstandins, ws_acquire);
}
/* Slot k < ws_standins_count(p): a slot is written once, before the count
 * covers it; the array pointer before the first (ordered by that acquire). */
static inline ws_worker *ws_standin_at(struct pool *p, unsigned k) {
  ws_worker **slots = ws_ptr_load(&p->standins, ws_relaxed);
  return slots[k];
}
/* The sum of one per-thread counter (ws_worker's ws_u64 `field`) over the
 * pool's workers, then its stand-ins, each read with order `o`: one walk
 * per field, so a caller that needs every read of one field before any of
 * another (ws_submits_idle, pool_pending: finished, then started, then
 * submitted) sums them in that order. A stand-in that appears between two
 * walks is read in the later ones only: it adds starts or submissions,
 * never a finish whose start or submission went unread. */
#define WS_THREADS_SUM(p, field, o) ws_threads_sum((p), offsetof(ws_worker, field), (o))
static inline uint64_t ws_threads_sum(struct pool *p, size_t off, ws_order o) {
  uint64_t n = 0;
  for (unsigned i = 0; i < p->nthreads; i++) n += ws_u64_load((ws_u64 *)((char *)p->workers[i] + off), o);
  for (unsigned k = 0, ns = ws_standins_count(p); k < ns; k++)
    n += ws_u64_load((ws_u64 *)((char *)ws_standin_at(p, k) + off), o);
  return n;
}

/* The calling thread's lane (WS_LANES), given out round-robin at its
 * first use, so that threads that start together get different lanes. */
extern __thread unsigned ws__lane; /* lane + 1; 0: none yet */
unsigned ws_lane_assign(void);
static inline unsigned ws_lane(void) {
  unsigned l = ws__lane;
  return l ? l - 1 : ws_lane_assign();
}

/* True when some lane of the global queue may hold work (a hint: see
 * ws_gqueue_maybe_nonempty). */
static inline bool ws_global_maybe_nonempty(struct pool *p) {
  for (unsigned l = 0; l < WS_LANES; l++)
    if (ws_gqueue_maybe_nonempty(&p->gq[l])) return true;
  return false;
}

/* The submit wrapper (submit.c). */
/* Most entries in one submit batch (submit.c): with its header, 1 KiB. */
enum { WS_BATCH_CAP = 62 };
/* A batch of the plain entries it[0..n), 1 <= n <= WS_BATCH_CAP (no
 * runtime task among them), taken off the global queue by worker w, from
 * its pool's allocator, not on any deque yet.
 * NULL without memory. Each entry counts finished when it ran
 * (ws_submit_finished); whoever made the entries has counted them
 * submitted. */
ws_task *ws_submit_batch_of(ws_worker *w, const ws_gitem *it, size_t n);

/* Put a runtime task on the pool's global queue, the caller's lane
 * (outside threads); `flags` as ws_gqueue_push_task's: WS_GQ_COUNTED, as
 * a submission (a job), which its run counts finished
 * (ws_submit_finished); WS_GQ_FORCE, reserved (ws_reserve). */
int ws_push_global(struct pool *p, ws_task *t, unsigned flags);

/* Owner only: count n submissions from worker w (its own pool's) before
 * they can run. */
static inline void ws_submit_count(ws_worker *w, int64_t n) {
  ws_u64_store(&w->submitted, ws_u64_load(&w->submitted, ws_relaxed) + (uint64_t)n, ws_relaxed);
}

/* pool_submit from a worker of the pool (w, the caller's): one task into
 * its open batch, on its own deque. 0 or ENOMEM. */
int ws_submit_one_inside(ws_worker *w, pool_fn fn, void *arg);
/* pool_submit_n from a worker of the pool (w, the caller's): n tasks onto
 * its own deque, all or none. 0 or ENOMEM. */
int ws_submit_inside(ws_worker *w, pool_fn fn, void *const *args, size_t n);
/* Runs a submitted fn(arg) on worker w where no deque task carries it (a
 * batch or a deque that could not get memory): counts it finished, run,
 * and taken in `taken` (one of w's stats.*_pops). */
void ws_submit_run_direct(ws_worker *w, pool_fn fn, void *arg, ws_u64 *taken, bool bounded);
/* Lets go of w's open batch (the worker is being freed). */
void ws_submit_drop_open(ws_worker *w);
/* pool_submit_n from outside (the caller holds the pool's gate): stored by
 * value in the global queue under one lock. 0, ENOMEM or ESHUTDOWN. */
typedef enum ws_admit { WS_ADMIT_WAIT, WS_ADMIT_TRY, WS_ADMIT_FORCE } ws_admit;
/* `mode`, on a pool with a bound: wait for room, fail with EAGAIN when
 * full, or count past it (a worker's own submission). Also E2BIG. */
int ws_submit_outside(struct pool *p, pool_fn fn, void *const *args, size_t n, ws_admit mode);
/* Bounded submission (submit.c): report the credit of outside tasks w
 * started, then wake producers waiting for room. */
void ws_bound_flush(ws_worker *w);

/* A submitted task (pool_submit, a job) starts on worker w; `bounded`:
 * it came from outside into a pool with a bound, and leaves its count now.
 * Owner only. Release: pool_pending, which acquires `starts`, then reads
 * the submission counts that happened before the task could start. */
static inline void ws_submit_started(ws_worker *w, bool bounded) {
  ws_u64_store(&w->starts, ws_u64_load(&w->starts, ws_relaxed) + 1, ws_release);
  if (__builtin_expect(bounded, 0) && ++w->bound_credit >= w->bound_flush) ws_bound_flush(w);
}

/* A pool_submit task finished on worker w (only workers run tasks).
 * Release: a waiter that acquires `finished` sees every count of
 * submissions the task made before it (submit.c). The worker tells outside
 * waiters when it next runs out of work (worker.c), not after every task. */
static inline void ws_submit_finished(ws_worker *w) {
  ws_u64_store(&w->finished, ws_u64_load(&w->finished, ws_relaxed) + 1, ws_release);
  w->announce_idle = true;
}

#endif /* WS_SCHEDULER_H */
