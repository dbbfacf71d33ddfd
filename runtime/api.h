/* SPDX-License-Identifier: MIT */
/* Layer 2, the API: what the files behind the public calls share (pool
 * lifetime and its entry gate in pool.c, placement.c, stats.c, trace.c,
 * options.c). Includes the scheduler (layer 1); nothing below includes
 * this. */
#ifndef WS_API_H
#define WS_API_H

#include <sched.h>

#include "options.h"
#include "scheduler.h"
#include "latch.h"
#include "split.h"

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

/* A submission reserved ahead of a push (jobs released by another pool's
 * thread, job.c): until ws_unreserve, pool_wait_idle and destroy's drain
 * count it not finished, and the reserver is inside the gate and may push
 * with WS_GQ_FORCE (counted, so the task counts on its own). 0, or
 * ws_enter's error and nothing reserved. */
int ws_reserve(struct pool *p);
void ws_unreserve(struct pool *p);

/* Placement (placement.c; docs/design.md 13).
 * plan: decide each worker's PU and NUMA node (before workers exist, so
 *       their memory can be allocated on their node); ENOTSUP when binding
 *       was asked, is impossible and bind_strict is set.
 * worker: fill w->cpu (planned PU or -1), w->numa and the victim order.
 * bind: bind the started thread of w; 0 or an errno value. */
struct ws_placement;
/* The origin set of a pool the calling thread creates (docs/placement.md,
 * "Usable CPUs"): the thread's affinity (taskset, cgroup cpusets, the
 * program's sched_setaffinity); on a thread of a pool (worker, stand-in),
 * the origin set of that pool: its affinity is the library's doing (a
 * bound worker's one CPU). A set to CPU_FREE, *size bytes; NULL (errno)
 * when it cannot be read. */
cpu_set_t *ws_origin_cpus(size_t *size);
/* In a fork child whose forking thread was w, a thread of a bound pool:
 * the thread's affinity back to the pool's origin set (it is no worker
 * here; what it creates or execs gets the process's CPUs, not w's one). */
void ws_placement_unbind_forked(const ws_worker *w);
/* The CPUs in a set, at least 1; the online CPUs for a NULL set. */
unsigned ws_cpu_count(const cpu_set_t *set, size_t size);
/* `origin` (may be NULL: unknown) is copied; unbound workers run on it. */
int ws_placement_plan(struct pool *p, const cpu_set_t *origin, size_t size);
int ws_placement_worker(struct pool *p, ws_worker *w);
int ws_placement_bind(struct pool *p, ws_worker *w);
void ws_placement_free(struct pool *p);
void *ws_placement_alloc(struct pool *p, unsigned worker, size_t size);
void ws_placement_dealloc(struct pool *p, void *mem, size_t size);

/* WSPOOL_STATS=1: the per-worker table on stderr (stats.c). */
void ws_stats_report(struct pool *p);

/* The work/span profile (profile.c; the strand rules are profile.h's). */
struct ws_prof_rec;
/* The spawn side, entered at x (ws_prof_entry): false when the frame
 * stays unprofiled (no memory). */
bool ws_prof_spawn(struct pool *p, ws_worker *w, uint64_t x, void (**fn)(void *), void **arg);
/* The sync side, once the child has finished (the sync cut at its start,
 * ws_prof_pause): the caller's strand continues at the larger span, the
 * frame gets its own fn and arg back, the record is freed. */
void ws_prof_sync_end(struct ws_prof_rec *r, ws_worker *w, void (**fn)(void *), void **arg);
/* A region of p: start (the counters now; `on`), and finish with the root
 * strand's end (packed, 0 for none) into *out. */
void ws_prof_region_start(struct pool *p, bool env);
void ws_prof_region_finish(struct pool *p, uint64_t root, pool_profile_t *out);
/* WSPOOL_PROFILE: the pool's whole life as a region, begun at create; at
 * destroy its report goes to stderr (and the trace), and a region the
 * destroying thread left open is dropped. */
void ws_prof_env_begin(struct pool *p);
void ws_prof_destroyed(struct pool *p);
/* Worker `worker`'s counters (index checked by the caller). */
void ws_read_stats(struct pool *p, unsigned worker, pool_worker_stats_t *out);

/* A newly allocated pool struct joins the list pool_dump_state reads
 * (dump.c); structs are never freed, so the list only grows. */
void ws_dump_add(struct pool *p);
/* Debug builds: SIGQUIT writes pool_dump_state to stderr, then ends the
 * process as SIGQUIT does, unless the program set its own disposition. */
void ws_dump_on_sigquit(void);

/* Workers (pool.c), also for stand-ins (standin.c): a worker of id `id`
 * built but not started (NULL without memory); its memory freed; on its
 * own thread, before its loop, its stack's bounds (ws_may_help). */
ws_worker *ws_worker_build(struct pool *p, unsigned id);
void ws_worker_free(struct pool *p, ws_worker *w);
void ws_worker_stack_bounds(ws_worker *w);

/* The rest of ws_latch_wait for an isolated worker with nothing left in
 * its reach (standin.c; design.md 7.5). */
void ws_latch_wait_isolated(struct pool *p, const ws_latch *l, ws_worker *hint);
/* Returns once `l` holds (latch.h), with the completer's writes visible:
 * a worker of p helps, other threads block. An isolated worker with
 * nothing left in its reach sleeps, and once no other thread is free to
 * run what it may not, sleeps inside a blocking region, so that a
 * stand-in runs it (its computation's tasks on other deques or in the
 * global queue). */
static inline void ws_latch_wait(struct pool *p, const ws_latch *l, ws_worker *hint) {
  if (__builtin_expect(!ws_latch_help(p, l, hint), 0)) ws_latch_wait_isolated(p, l, hint);
}

/* Registers the fork handlers (pool.c), once; ENOMEM if it cannot. */
int ws_fork_setup(void);
/* Fork handlers of placement.c and trace.c: 0 before fork() (take the
 * lock), 1 in the parent and 2 in the child after it. */
void ws_placement_atfork(int phase);
void ws_trace_atfork(int phase);

/* Worker hooks and thread names (hooks.c; the state is hooks.h). */
/* pool_create(), before any worker starts: copies the configured name (or
 * makes "wspool-p<N>", N counting the pools of the process) and points
 * p->cfg.name at the copy. */
void ws_hooks_init(struct pool *p);
/* pool_create(), after the binding loop: lets the workers go on and, when
 * `ok`, waits for their start hooks; `ok` false when create is about to
 * fail (no hook will run). */
void ws_hooks_open(struct pool *p, bool ok);
/* On the worker thread, before its loop: names the thread, waits for the
 * start signal when a hook is set, runs the start hook. True when the stop hook
 * must run at the end. */
bool ws_worker_begin(struct ws_worker *w);
/* On the worker thread, after its last task: the stop hook, if `begun`. */
void ws_worker_end(struct ws_worker *w, bool begun);

/* Trace lifecycle (trace.c): a pool's process track and workers' buffers
 * when WSPOOL_TRACE is set. */
void ws_trace_pool_created(struct pool *p);
void ws_trace_pool_destroyed(struct pool *p);

#endif /* WS_API_H */
