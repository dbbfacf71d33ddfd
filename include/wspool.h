/* SPDX-License-Identifier: MIT */
/**
 * \file wspool.h
 * \brief wspool: a work-stealing thread pool runtime for C.
 *
 * One header is the whole public API. Everything named `pool_*` or `POOL_*`
 * is public; fields named `wsp_*` inside the complete types below are private
 * storage the runtime owns and must not be touched.
 *
 * \section errors Errors
 * Every function returning `int` returns 0 on success or a positive errno
 * value (EINVAL, ENOMEM, EAGAIN, ESHUTDOWN, EDEADLK, EOWNERDEAD, ...; see
 * \ref faults). The library never prints on a hot path, never calls exit()
 * or abort() on bad input, and a failed call has no effect unless its
 * documentation says otherwise.
 *
 * \section nullpool The NULL pool
 * Wherever a `pool_t *` is taken, NULL means: the calling worker's pool when
 * called from a worker thread, otherwise the process-wide default pool
 * (created on first use, thread-safe, lives until the process exits).
 * If creating it fails (EAGAIN, ENOMEM), the call returns that code
 * (pool_default(): NULL) and the next NULL-pool call tries again: every
 * NULL-pool call returning `int` reports its own attempt's error, the same
 * one pool_create() would give.
 *
 * \section faults Faults and fork()
 * <b>Resource failures.</b> Memory: every call that allocates returns
 * ENOMEM and has no effect (pool_create() frees what it had made); where
 * the documentation says so, work runs inline instead (pool_spawn() from a
 * worker, pool_parallel_for() pieces that cannot be queued), and returns 0.
 * Threads: pool_create() returns EAGAIN when any worker thread cannot be
 * created, after joining the ones it started. Binding: see pool_config_t
 * (a warning and an unbound pool, or ENOTSUP with bind_strict). The hwloc
 * topology is loaded once per process (per HWLOC_SYNTHETIC / HWLOC_XMLFILE
 * value) by the first bound pool_create() and shared; wspool checks every
 * hwloc result, but an allocation failure inside hwloc's own topology
 * loader (hwloc 2.9) can crash the process there, so only that first load
 * is not failure-safe. Later creates never enter the loader.
 *
 * <b>Destroy and concurrent outside callers.</b> Any call from a thread
 * that is not one of the pool's workers may run concurrently with
 * pool_destroy(). Each such call is either inside the pool (it entered
 * before destroy began): it completes normally, with the drain, and
 * destroy returns only after it has left; or it arrives once destroy began:
 * it returns ESHUTDOWN with no effect (pool_submit(), pool_submit_n(), pool_spawn(),
 * pool_join(), pool_group_spawn(), pool_parallel_for(),
 * pool_parallel_reduce(), pool_wait_idle(), pool_worker_stats();
 * pool_worker_cpu() returns -1), and touches nothing destroy frees. Waits
 * on work the pool already accepted (pool_sync(), pool_take(),
 * pool_group_wait()) are never refused: they return 0 once the drain ran
 * it. The few bytes a pool's handle points to are never given back to the
 * system (a later pool_create() reuses them), so a late call stays safe
 * until a new pool_create() returned: after that, using the old handle is
 * a bug.
 *
 * <b>fork().</b> The library installs fork handlers (pthread_atfork) when
 * the first pool is created. In the child only the forking thread exists,
 * so every pool created before the fork belongs to the parent: every call
 * on it returns EOWNERDEAD (pool_threads(): 0, pool_worker_cpu(): -1)
 * without blocking, and pool_destroy() frees its memory (it joins nothing)
 * and returns 0. The default pool is not inherited: the child's first
 * NULL-pool call creates a fresh one. A thread that forks from inside a
 * task is not a worker in the child (NULL means the default pool there);
 * such a child must not return from that task (exec or _exit instead).
 * WSPOOL_TRACE: the child records no trace and never writes the parent's
 * file; WSPOOL_STATS prints for the child's own pools only. None of this
 * can deadlock the child on a lock of the library.
 *
 * <b>Misuse and debug checks.</b> These are misuses, whose behaviour is
 * undefined: pool_spawn() into a frame that is still pending (spawned and
 * not yet synced or taken: the first task may be lost); a second
 * pool_sync() or pool_take() of a frame; pool_sync() or pool_take() from a
 * thread other than the one that spawned the frame; a group used before
 * pool_group_init(); pool_group_init() on a group whose children are
 * pending or that is being waited on; two pool_group_wait() calls on one
 * group at once. The normal build returns EINVAL where it can tell cheaply.
 * A library built with `-Ddebug_checks=true` detects each of them (it keeps
 * every frame out of the inline fast paths to see them all), and asserts
 * the runtime's own invariants: it prints a report naming the misuse and
 * the call stack to stderr and calls abort(). That build is the one
 * exception to "never calls abort()"; it is meant for testing.
 *
 * \section hooks Worker hooks and names
 * pool_config_t::on_worker_start runs once on each worker thread, after the
 * thread is bound (pool_worker_cpu() tells where) and before it takes any
 * work; pool_config_t::on_worker_stop runs once on each worker thread after
 * its last task, while pool_destroy() joins the workers. They are for
 * per-thread state: an MPI or GPU context, a random seed, a log tag. When
 * pool_create() fails neither runs on any worker; the default pool, never
 * destroyed, runs no stop hooks. Hooks return nothing, so they cannot fail:
 * a hook that can fail must record it for the caller to check.
 *
 * A hook may call pool_current(), pool_worker_id(), pool_threads(),
 * pool_worker_cpu() and pool_worker_stats() on its pool, and anything on
 * other pools or libraries, from this thread. It must not submit, spawn or
 * wait on its own pool (pool_submit(), pool_spawn(), pool_join(), groups,
 * pool_parallel_for(), pool_wait_idle(), pool_destroy()): a start hook runs
 * while pool_create() may not have returned, a stop hook while the pool
 * shuts down and no worker looks for work any more. pool_create() returns
 * once every start hook has returned (so what the hooks wrote is visible to
 * its caller): a start hook must not wait for anything the creating thread
 * does after pool_create().
 *
 * Worker threads are named "<name>-w<index>" (pthread_setname_np: what
 * `top -H`, `ps -L`, gdb, perf and /proc/self/task/N/comm show), cut to
 * Linux's 15 visible bytes by shortening the name, never the index. The
 * name is pool_config_t::name, or "wspool-p<N>" where N counts the pools
 * this process created (so "wspool-p0-w3").
 */
#ifndef WSPOOL_H
#define WSPOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** \cond WSPOOL_INTERNAL */
#if defined(WSPOOL_BUILDING) && defined(__GNUC__)
#define POOL_API __attribute__((visibility("default")))
#else
#define POOL_API
#endif
/** \endcond */

/** \defgroup version Version
 *  @{ */
#define WSPOOL_VERSION_MAJOR 0 /**< incompatible API changes */
#define WSPOOL_VERSION_MINOR 1 /**< compatible additions */
#define WSPOOL_VERSION_PATCH 0 /**< fixes */
/** @} */

/** \defgroup pool Pools, submission and waiting
 *  @{ */

/** Largest worker count pool_create() accepts. */
#define POOL_MAX_THREADS 4096u

/** An opaque pool of worker threads. */
typedef struct pool pool_t;

/** A task body: called once with the argument given at submission. */
typedef void (*pool_fn)(void *arg);

/** Where workers are bound (see docs/placement.md). */
typedef enum pool_bind {
  POOL_BIND_NONE,   /**< no binding; the OS places threads (default) */
  POOL_BIND_CORE,   /**< compact: one worker per physical core, filling one
                         cache/NUMA domain before the next; SMT siblings only
                         once every core has a worker */
  POOL_BIND_SPREAD  /**< round-robin over NUMA nodes, then packages, then cores */
} pool_bind_t;

/** Pool configuration. Fill with pool_config_default(), then override. */
typedef struct pool_config {
  /** Worker count; 0 = one per CPU of the process's allowed set
      (sched_getaffinity, so taskset and cgroup cpusets count). More workers
      than CPUs is allowed; above POOL_MAX_THREADS is EINVAL. */
  unsigned threads;
  /** Binding policy; default POOL_BIND_NONE. */
  pool_bind_t bind;
  /** Worker stack size in bytes; 0 = the default (8 MiB). The runtime keeps
      helping-while-waiting within this stack (see pool_sync()). */
  size_t stack_size;
  /** Nonzero: pool_create() fails with ENOTSUP when binding was asked for
      but is impossible here, instead of starting unbound with a warning. */
  int bind_strict;
  /** Called on each worker thread, after binding and before it takes work,
      with the pool, the worker's index and \p hook_ctx; NULL = none.
      See \ref hooks for what it may call. */
  void (*on_worker_start)(pool_t *pool, unsigned worker, void *ctx);
  /** Called on each worker thread after its last task, during
      pool_destroy(); NULL = none. See \ref hooks. */
  void (*on_worker_stop)(pool_t *pool, unsigned worker, void *ctx);
  /** Passed to both hooks. */
  void *hook_ctx;
  /** Thread-name prefix of the workers ("<name>-w<index>", see \ref hooks);
      copied by pool_create(); NULL or "" = "wspool-p<N>". */
  const char *name;
} pool_config_t;

/**
 * \brief Fill \p cfg with the defaults.
 *
 * Reads `WSPOOL_THREADS` (a count, 0 = automatic) and `WSPOOL_BIND`
 * (`none|core|spread`). A bad value is reported on stderr naming the variable
 * and the value, and the default is used. Fields set after this call win.
 * Does nothing when \p cfg is NULL.
 */
POOL_API void pool_config_default(pool_config_t *cfg);

/**
 * \brief Create a pool and start its workers.
 * \param out receives the pool; untouched on failure.
 * \param cfg configuration, or NULL for pool_config_default().
 * \return 0; EINVAL for a NULL \p out, a thread count above POOL_MAX_THREADS
 *         or a bad bind value; ENOMEM; EAGAIN when a thread cannot be created
 *         (threads already started are joined and nothing leaks); ENOTSUP
 *         when \p cfg->bind_strict is set and binding is impossible.
 */
POOL_API int pool_create(pool_t **out, const pool_config_t *cfg);

/**
 * \brief Drain and destroy a pool.
 *
 * Runs everything already submitted, including tasks that running tasks
 * submit during the drain, then joins the workers and frees the pool's
 * memory. Outside calls may run concurrently with it: destroy returns only
 * once every outside call that entered the pool before it began has left
 * it, and a call that arrives later fails with ESHUTDOWN without effect
 * (see \ref faults). Calling into a pool after pool_destroy() returned is a
 * bug.
 * \return 0; EDEADLK when called from one of the pool's own workers (the pool
 *         stays usable); EINVAL for the default pool, which lives until exit;
 *         ESHUTDOWN when another pool_destroy() of it is already running.
 */
POOL_API int pool_destroy(pool_t *pool);

/** \brief The process-wide default pool, created on first use (thread-safe).
 *  \return the pool, or NULL when it could not be created. */
POOL_API pool_t *pool_default(void);

/** \brief The calling worker's pool, NULL outside any pool. */
POOL_API pool_t *pool_current(void);

/**
 * \brief Run `fn(arg)` once on the pool, fire-and-forget.
 *
 * From a worker of that pool the task goes on the worker's own deque without
 * a lock; from any other thread it goes to the pool's global queue.
 * \return 0; EINVAL for a NULL \p fn; ESHUTDOWN when the pool is being
 *         destroyed and the caller is not one of its workers; ENOMEM.
 */
POOL_API int pool_submit(pool_t *pool, pool_fn fn, void *arg);

/**
 * \brief Run `fn(args[i])` once for each `i < n` on the pool, fire-and-forget:
 * pool_submit() for a batch, all or nothing.
 *
 * From outside the pool the batch costs one acquisition of the global
 * queue's lock; from a worker of that pool the n tasks go on the worker's
 * own deque, and thieves spread them. Either every task is accepted (and
 * runs exactly once) or none is. \p args NULL runs `fn(NULL)` n times.
 * \code
 * void *items[64];
 * for (int i = 0; i < 64; i++) items[i] = &work[i];
 * int rc = pool_submit_n(pool, process, items, 64);
 * \endcode
 * \return 0 (also for n == 0); EINVAL for a NULL \p fn; ESHUTDOWN when the
 *         pool is being destroyed and the caller is not one of its workers;
 *         ENOMEM, with nothing submitted.
 */
POOL_API int pool_submit_n(pool_t *pool, pool_fn fn, void *const *args, size_t n);

/**
 * \brief Wait until every task submitted so far with pool_submit(), and
 * everything those tasks submitted, has finished.
 * \return 0; EDEADLK when called from a worker of that pool; EINVAL when
 *         there is no pool; ESHUTDOWN when called once pool_destroy() began
 *         (a caller already waiting when it began gets 0 after the drain).
 */
POOL_API int pool_wait_idle(pool_t *pool);

/** \brief Worker count of \p pool (NULL: as in \ref nullpool); 0 if none. */
POOL_API unsigned pool_threads(const pool_t *pool);

/** \brief Index of the calling worker in its pool, -1 outside any pool. */
POOL_API int pool_worker_id(void);

/** \brief A readable message for an error code; never NULL. */
POOL_API const char *pool_strerror(int err);

/** @} */

/** \defgroup stats Statistics
 *  @{ */

/** Per-worker counters. They stay on: each is a private relaxed counter.
 *  A task is counted just after it finishes, and the frames its own
 *  pool_sync() ran with it, so right after pool_wait_idle() returns the
 *  totals may still be catching up for an instant. */
typedef struct pool_worker_stats {
  uint64_t tasks;          /**< tasks run: each task function the worker
                                called, pool_sync()'s inline runs included.
                                A frame pool_take() hands back (POOL_TAKEN)
                                is not counted: its function never runs, the
                                caller does the work as a plain call */
  uint64_t local_pops;     /**< tasks taken from the worker's own deque */
  uint64_t global_pops;    /**< tasks run straight from the pool's global
                                queue: the first of each batch the worker
                                takes (the rest go on its deque and count as
                                local pops or steals when they leave it) */
  uint64_t steals;         /**< tasks stolen from another worker */
  uint64_t steals_remote;  /**< of those, from a worker on another NUMA node */
  uint64_t steal_failures; /**< steal attempts that found nothing or lost a race */
  uint64_t sleeps;         /**< times the worker went to sleep */
  uint64_t global_taken;   /**< entries the worker took off the global
                                queue, whole batches: summed over the
                                workers, every outside submission once */
} pool_worker_stats_t;

/**
 * \brief Read worker \p worker's counters into \p out.
 * \return 0; EINVAL for a NULL \p out, no pool, or \p worker out of range;
 *         ESHUTDOWN from outside a pool being destroyed.
 */
POOL_API int pool_worker_stats(const pool_t *pool, unsigned worker, pool_worker_stats_t *out);

/** @} */

/** \defgroup forkjoin Fork/join
 *  @{ */

/**
 * A spawned task frame, owned by the caller (usually on its stack) from
 * pool_spawn() until pool_sync() returns. Spawning allocates nothing.
 */
typedef struct pool_task {
  void *wsp_private[8]; /**< the runtime's; never read or written by callers */
} pool_task_t;

/** Returned by pool_take() when the caller got the task back unstarted and
 *  must do its work itself. */
#define POOL_TAKEN (-1)

/**
 * \brief Spawn `fn(arg)` into \p task, to run possibly in parallel.
 *
 * From a worker the frame stays private to the worker (no lock, no
 * allocation, no fence) until a thief could use it, then goes on the
 * worker's deque; from another thread, on the pool's global queue.
 * Every successful spawn must be matched by one pool_sync() on the same
 * frame, from the same thread, before the frame's storage goes away.
 * \return 0; EINVAL for a NULL \p task or \p fn, or no pool; ESHUTDOWN for an
 *         outside spawn into a pool being destroyed. When the deque cannot
 *         grow, the task runs inline before pool_spawn() returns (0).
 */
POOL_API int pool_spawn(pool_t *pool, pool_task_t *task, pool_fn fn, void *arg);

/**
 * \brief Wait for a spawned task.
 *
 * If the task is still in the caller's deque it runs inline (the common,
 * LIFO case; any order is allowed). If it was stolen, the caller keeps
 * working while it waits: its own deque, the global queue, then stealing,
 * first from the thief that took it. A waiting worker runs other tasks on its own stack only while
 * more than a quarter of its stack (and at least 64 KiB) is left; past that
 * it waits without helping, so deep or wide trees cannot overflow it. When
 * it finds nothing to run for about 0.1 ms it sleeps until the task is done
 * or new work appears, so a long wait costs no CPU. Syncing in any order
 * costs about what LIFO costs.
 * From a thread outside the pool: blocks until a worker has run it (the
 * task runs in the pool, so what it spawns stays there too).
 * \return 0; EINVAL for a NULL \p task or a frame that was not spawned.
 */
POOL_API int pool_sync(pool_task_t *task);

/**
 * \brief Take a spawned task back to run it yourself, or wait for it.
 *
 * The fast alternative to pool_sync() for recursive code. If no thief has
 * started the task, it is taken back unrun and POOL_TAKEN is returned: the
 * frame is free again and the caller must now do the task's work itself,
 * typically by calling the function directly, which the compiler can inline
 * and which passes arguments and results in registers instead of through
 * `arg`. Otherwise it waits exactly like pool_sync() (helping, within the
 * same stack bound) and returns 0 once the task has run.
 * \code
 *   pool_spawn(NULL, &t, fib_task, &x);   // x = {n - 1}
 *   long y = fib(n - 2);
 *   if (pool_take(&t) == POOL_TAKEN) x.r = fib(n - 1);
 *   return x.r + y;
 * \endcode
 * From a thread outside the pool it always waits (a task on the global
 * queue cannot be taken back) and returns 0.
 * \return POOL_TAKEN; 0 when the task ran elsewhere; EINVAL for a NULL
 *         \p task or a frame that was not spawned.
 */
POOL_API int pool_take(pool_task_t *task);

/**
 * \brief Run `a(a_arg)` and `b(b_arg)`, possibly in parallel; return when
 * both have finished.
 *
 * From a worker of the pool, `a` runs on the caller and `b` is spawned. From
 * any other thread both run on the pool's workers while the caller blocks,
 * so it is also the way to run a computation "inside" a pool from main().
 * \return 0; EINVAL for a NULL function or no pool; ESHUTDOWN from outside a
 *         pool being destroyed (nothing ran).
 */
POOL_API int pool_join(pool_t *pool, pool_fn a, void *a_arg, pool_fn b, void *b_arg);

/** A task group: any number of children, wait for all. */
typedef struct pool_group {
  void *wsp_private[4]; /**< the runtime's; never read or written by callers */
} pool_group_t;

/** \brief Initialise a group on \p pool. \return 0; EINVAL for NULL \p g or no pool. */
POOL_API int pool_group_init(pool_group_t *g, pool_t *pool);

/**
 * \brief Spawn a child into the group. Child storage comes from per-worker
 * free lists, so the steady state does no malloc per spawn.
 * \return 0; EINVAL for NULL \p g or \p fn, or an uninitialised group;
 *         ENOMEM; ESHUTDOWN for an outside spawn into a pool being destroyed.
 */
POOL_API int pool_group_spawn(pool_group_t *g, pool_fn fn, void *arg);

/**
 * \brief Wait for every child spawned so far; helps like pool_sync().
 * The group may be reused afterwards.
 * \return 0; EINVAL for NULL \p g or an uninitialised group.
 */
POOL_API int pool_group_wait(pool_group_t *g);

/** @} */

/** \defgroup parfor Parallel loops
 *  @{ */

/** A loop body: handles the items [begin, end). */
typedef void (*pool_range_fn)(size_t begin, size_t end, void *ctx);

/**
 * \brief Call \p body on disjoint subranges covering [begin, end) exactly once.
 *
 * \p grain is the smallest chunk handed to \p body (0 = automatic). Returns
 * when all of it has run. Works from outside the pool and from inside tasks
 * (nested), on any pool. Ranges up to SIZE_MAX - 1 items.
 * \return 0 (also for begin == end, without calling \p body); EINVAL for
 *         begin > end, a NULL \p body, or no pool; ENOMEM; ESHUTDOWN from
 *         outside a pool being destroyed.
 */
POOL_API int pool_parallel_for(pool_t *pool, size_t begin, size_t end, size_t grain,
                               pool_range_fn body, void *ctx);

/** Accumulate the items [begin, end) into \p acc (which starts as the identity). */
typedef void (*pool_reduce_body_fn)(size_t begin, size_t end, void *acc, void *ctx);
/** Combine: `into = into (op) from`, where \p into holds the items before \p from's. */
typedef void (*pool_combine_fn)(void *into, const void *from, void *ctx);

/** A parallel reduction. The combine must be associative; it need not be
 *  commutative: partial results are always combined in index order. */
typedef struct pool_reducer {
  size_t size;              /**< bytes of one accumulator (> 0) */
  const void *identity;     /**< accumulator every partial result starts from */
  pool_reduce_body_fn body; /**< accumulates a subrange */
  pool_combine_fn combine;  /**< combines two adjacent partial results */
  void *ctx;                /**< passed to body and combine */
  /** Nonzero: the subranges and the combine tree depend only on the range and
      grain, never on the worker count or the schedule, so floating-point
      results are bit-for-bit reproducible on any pool. */
  int deterministic;
} pool_reducer_t;

/**
 * \brief Reduce [begin, end) into \p result (which receives the identity for
 * an empty range).
 * \return 0; EINVAL for begin > end, a NULL \p r, \p result, body, combine or
 *         identity, or a zero size; ENOMEM; ESHUTDOWN as pool_parallel_for().
 */
POOL_API int pool_parallel_reduce(pool_t *pool, size_t begin, size_t end, size_t grain,
                                  const pool_reducer_t *r, void *result);

/** @} */

/** \defgroup placement Placement
 *  @{ */

/** \brief OS index of the PU worker \p worker is bound to, -1 when unbound
 *  or out of range. */
POOL_API int pool_worker_cpu(const pool_t *pool, unsigned worker);

/** @} */

/** \cond WSPOOL_INLINE_ABI */
/*
 * Inline fast paths of pool_spawn(), pool_sync() and pool_take().
 *
 * The common case of a spawn from a worker is a few stores into the frame
 * and into the worker's private frame stack; the matching sync or take finds
 * the frame on top of that stack. Inlined into the caller this costs a
 * fraction of a call into the library, so the header carries it; anything
 * else (publication to thieves, outside threads, stolen frames, misuse)
 * calls the library's own pool_spawn/pool_sync/pool_take, which also handle
 * the common case when these are not inlined (no optimisation, a compiler
 * without GNU C, or POOL_NO_INLINE defined).
 *
 * ABI, not API. The thread-local `pool__tls` holds, on the pool's worker
 * threads:
 *  top    the worker's next free private slot: top[-1] is its newest
 *         private frame, or a marker that is never a frame;
 *  pool   the worker's pool;
 *  tasks  frames this thread's pool_sync() ran on the inline path since
 *         the runtime last added them to the worker's `tasks` statistic
 *         (it does after each task it schedules). A plain counter in the
 *         thread's own block;
 *  limit  a spawn stays private while top < limit. The owner opens it
 *         (sets the end of the stack) when its public deque holds work;
 *         the owner or a thief closes it (0) when that deque is empty, so
 *         the next spawn goes to the library and publishes. On a cache
 *         line of its own: thieves read and write it.
 * On every other thread pool is NULL, limit 0 and top[-1] a marker, so
 * both fast paths fall through to the library without a NULL test. All of
 * it is in the thread's own block, not in the worker, because a
 * recursion's spawns and syncs read and write `top` one after another
 * (reached through a pointer, each of those steps would wait for a
 * store-to-load forwarding), and so that a spawn tests `limit` with one
 * load at a known offset from the same TLS address, not two dependent
 * ones. The runtime checks the layout against its own (runtime/internal.h)
 * and reaches a worker's `limit` from other threads through a pointer it
 * keeps only while that thread lives. The relaxed accesses are GNU
 * __atomic builtins because this header cannot include the runtime's
 * atomics header.
 * A private frame has only fn and arg set: nobody but its owner can reach
 * it, and the library fills in the rest (owner, state, ...) if it ever
 * publishes it or meets it out of order in a sync. Taking it back off the
 * stack writes nothing to it: the library tells a second sync or take from
 * a published frame by the state it sets only on published frames.
 * These layouts are compiled into callers: after a release, changing them
 * changes the library's soname (the unreleased 0.1 series has changed them
 * without one).
 */
struct pool__frame { /* the layout of a pool_task_t */
  void *exec;
  pool_fn fn;
  void *arg;
  void *owner;
  void *pool;
  void *thief;
  unsigned state;
};
/* 128 bytes between what the owner writes and what thieves write: adjacent-
 * line prefetchers pair 64-byte lines (runtime/atomics.h, WS_CACHELINE). */
#if defined(__GNUC__)
#define POOL__LINE_ALIGNED __attribute__((__aligned__(128)))
#else
#define POOL__LINE_ALIGNED
#endif
struct pool__tls {
  void **top;
  void *pool;
  uint64_t tasks;
  char wsp_pad[128 - 2 * sizeof(void *) - sizeof(uint64_t)];
  uintptr_t limit;
  char wsp_pad2[128 - sizeof(uintptr_t)];
} POOL__LINE_ALIGNED;
#define POOL__FRAME_IDLE 0u /* a frame's state when it is free */

#if defined(__GNUC__) && defined(__ELF__)
/* The library's full versions, under names of their own (aliases of
 * pool_spawn, pool_sync and pool_take) so the inline versions below can call
 * them. Cold: off the fast path, so the compiler keeps them out of the
 * caller's hot code. */
POOL_API __attribute__((__cold__)) int pool__spawn_full(pool_t *pool, pool_task_t *task,
                                                        pool_fn fn, void *arg);
POOL_API __attribute__((__cold__)) int pool__sync_full(pool_task_t *task);
POOL_API __attribute__((__cold__)) int pool__take_full(pool_task_t *task);
#endif

#if defined(__GNUC__) && defined(__OPTIMIZE__) && defined(__ELF__) && !defined(WSPOOL_BUILDING) && \
    !defined(POOL_NO_INLINE)
extern __thread struct pool__tls pool__tls __attribute__((tls_model("initial-exec")));

#define POOL__INLINE extern __inline__ __attribute__((__gnu_inline__, __always_inline__))

/* The way out of an inline path into the library, on x86-64.
 *
 * A plain call there clobbers the caller-saved registers, so the compiler
 * keeps whatever lives across a spawn (in fib, `n`) in a callee-saved
 * register, and gcc then saves those registers on entry, before the
 * caller's own base-case test: every leaf of a recursion pays a full
 * prologue and epilogue (fib(32) on one worker: 16.9 ms against 12.8 ms).
 * Instead the asm below calls a trampoline of the library
 * (runtime/tramp.c) that preserves every general register but rax, and
 * tells the compiler that only the vector, x87 and flag registers and
 * memory are clobbered; the compiler then keeps such values in
 * caller-saved registers and places the prologue past the base-case test.
 * The call goes through the GOT, not a PLT stub: lazy binding in a PLT
 * stub may clobber r11, and the compiler is told nothing is (with
 * -fipa-ra it even keeps values in r11 across the caller's own calls to
 * functions that reach the library only this way). The asm steps over
 * the 128-byte red zone first, which the caller may be using if it is
 * otherwise a leaf; the trampoline's unwind information
 * puts the caller's stack pointer back above it, so backtraces taken
 * inside the library stay right. Targets with registers this list does not
 * name (APX, AMX), and x32, use the plain call. */
#if defined(__x86_64__) && !defined(__ILP32__) && !defined(__APX_F__) && !defined(__AMX_TILE__) && \
    !defined(POOL_NO_TRAMPOLINE)
#ifdef __AVX512F__
#define POOL__CLOBBER_AVX512                                                                   \
  , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", \
      "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k0", "k1", "k2", "k3", "k4", "k5", \
      "k6", "k7"
#else
#define POOL__CLOBBER_AVX512
#endif
#define POOL__CLOBBERS                                                                         \
  "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
      "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)",    \
      "st(4)", "st(5)", "st(6)", "st(7)", "mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6",       \
      "mm7" POOL__CLOBBER_AVX512
/* The trampolines (runtime/tramp.S). Each asm names its trampoline in its
 * text and also takes it as an operand it does not use ("X": no code), so
 * that a link-time optimiser, which cannot read asm text, sees the
 * reference: with -flto and the static library it would otherwise drop
 * the library code only the trampolines call. */
POOL_API void pool__spawn_tramp(void);
POOL_API void pool__sync_tramp(void);
POOL_API void pool__take_tramp(void);
#define POOL__TRAMP(name) \
  "lea -128(%%rsp), %%rsp\n\tcall *" #name "@GOTPCREL(%%rip)\n\tlea 128(%%rsp), %%rsp"
#define POOL__SLOW_TASK(name, full, task)                                                   \
  do {                                                                                     \
    int pool__rc;                                                                          \
    __asm__ __volatile__(POOL__TRAMP(name)                                                 \
                         : "=a"(pool__rc)                                                  \
                         : "D"(task), "X"(name)                                            \
                         : POOL__CLOBBERS);                                                \
    return pool__rc;                                                                       \
  } while (0)
#else
#define POOL__SLOW_TASK(name, full, task) return full(task)
#endif
#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#pragma GCC diagnostic ignored "-Wcast-align"
#endif

POOL__INLINE int pool_spawn(pool_t *pool, pool_task_t *task, pool_fn fn, void *arg) {
  if (__builtin_expect(task && fn && (!pool || (void *)pool == pool__tls.pool), 1)) {
    void **top = pool__tls.top;
    if (__builtin_expect((uintptr_t)top < __atomic_load_n(&pool__tls.limit, __ATOMIC_RELAXED),
                         1)) {
      struct pool__frame *f = (struct pool__frame *)(void *)task;
      f->fn = fn;
      f->arg = arg;
      *top = task;
      pool__tls.top = top + 1;
      return 0;
    }
  }
#ifdef POOL__CLOBBERS
  int rc;
  __asm__ __volatile__(POOL__TRAMP(pool__spawn_tramp)
                       : "=a"(rc)
                       : "D"(pool), "S"(task), "d"(fn), "c"(arg), "X"(pool__spawn_tramp)
                       : POOL__CLOBBERS);
  return rc;
#else
  return pool__spawn_full(pool, task, fn, arg);
#endif
}

/* Pops the frame if it is the caller's newest private one. Always inlined:
 * the library has no symbol of this name. */
POOL__INLINE int pool__pop_private(pool_task_t *task) {
  void **top = pool__tls.top;
  if (__builtin_expect(!task || top[-1] != (void *)task, 0)) return 0;
  /* Writes nothing to the frame: a second sync or take of it finds it
   * neither on the stack nor published, hence EINVAL (runtime/forkjoin.c). */
  pool__tls.top = top - 1;
  return 1;
}

POOL__INLINE int pool_sync(pool_task_t *task) {
  if (pool__pop_private(task)) {
    struct pool__frame *f = (struct pool__frame *)(void *)task;
    f->fn(f->arg);
    pool__tls.tasks++; /* this thread's own: a plain increment */
    return 0;
  }
  POOL__SLOW_TASK(pool__sync_tramp, pool__sync_full, task);
}

POOL__INLINE int pool_take(pool_task_t *task) {
  if (pool__pop_private(task)) return POOL_TAKEN;
  POOL__SLOW_TASK(pool__take_tramp, pool__take_full, task);
}

#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif
#endif
/** \endcond */

#ifdef __cplusplus
}
#endif

/* Typed tasks: POOL_TASK() and friends. */
#include "wspool_typed.h"

#endif /* WSPOOL_H */
