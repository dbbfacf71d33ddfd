/* SPDX-License-Identifier: MIT */
/**
 * \file wspool.h
 * \brief wspool: a work-stealing thread pool runtime for C.
 *
 * \section overview Overview
 * A pool is a set of worker threads, each with a deque of its own; a worker
 * that runs out of work steals from the others. Work enters a pool as
 * fire-and-forget tasks (pool_submit(), waited for with pool_wait_idle()),
 * as fork/join (pool_spawn() into a frame the caller owns, then pool_sync()
 * or pool_take(); pool_join(); task groups), typed tasks (POOL_TASK()) or
 * parallel loops (pool_parallel_for(), pool_parallel_reduce()). Every
 * `pool_t *` may be NULL (\ref nullpool), so a program can use the default
 * pool without creating one:
 * \code
 * #include <stdio.h>
 * #include <wspool.h>
 *
 * typedef struct { int n; long r; } fib_t;
 *
 * static void fib(void *p) {
 *   fib_t *a = p;
 *   if (a->n < 2) { a->r = a->n; return; }
 *   fib_t x = {a->n - 1, 0}, y = {a->n - 2, 0};
 *   pool_task_t t;
 *   pool_spawn(NULL, &t, fib, &x);  // x may run on another worker
 *   fib(&y);
 *   pool_sync(&t);                  // runs x here unless it was stolen
 *   a->r = x.r + y.r;
 * }
 *
 * int main(void) {
 *   fib_t a = {30, 0}, b = {0, 0};
 *   int rc = pool_join(NULL, fib, &a, fib, &b);  // on the default pool
 *   if (rc) { fprintf(stderr, "wspool: %s\n", pool_strerror(rc)); return 1; }
 *   printf("fib(30) = %ld\n", a.r);
 *   return 0;
 * }
 * \endcode
 * Build with `cc app.c $(pkg-config --cflags --libs wspool)`, use wspool
 * as a meson subproject (`dependency('wspool')`), or from CMake:
 * `find_package(wspool)` and the imported target `wspool::wspool`.
 *
 * This header is the whole public API; a program includes only it. It
 * includes wspool_typed.h (typed tasks) and wspool/inline.h (the inline fast
 * paths of pool_spawn(), pool_sync() and pool_take(): ABI, not API).
 * Everything named `pool_*` or `POOL_*` is public; names with a double
 * underscore (`pool__*`, `POOL__*`) and fields named `wsp_*` inside the
 * complete types below are private to the library and must not be touched.
 * The headers compile without a warning in a program built with gcc or
 * clang as C99, C11, C17, C++17 or C++20 under -Wall -Wextra -Wpedantic
 * -Wstrict-aliasing=1 -Wdeclaration-after-statement -Wshadow -Wconversion
 * -Wcast-qual (test header_warnings), with or without optimisation.
 *
 * The reference is in groups: \ref pool, \ref forkjoin, \ref typed,
 * \ref parfor, \ref cancel, \ref jobs, \ref blocking, \ref stats, \ref placement and \ref version. The sections
 * below hold what applies to every group: \ref errors, \ref nullpool,
 * \ref faults, \ref hooks and \ref memory. docs/ holds the design, tuning, placement
 * and performance notes.
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
 * it returns ESHUTDOWN with no effect (pool_submit(), pool_submit_n(),
 * pool_try_submit(), pool_spawn(), pool_join(), pool_group_spawn(),
 * pool_parallel_for(), pool_parallel_reduce(), pool_wait_idle(),
 * pool_resize(), pool_pending(), pool_memory(), pool_worker_stats();
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
 * without blocking (so does every call but pool_group_init() on a group
 * initialised before the fork), and pool_destroy() frees its memory (it
 * joins nothing) and returns 0, or ESHUTDOWN and frees nothing if a destroy of it was
 * under way in the parent at the fork. The default pool is not inherited: the child's first
 * NULL-pool call creates a fresh one. pool_create() takes no lock of the C
 * library's loader, so a child can create pools even if another thread was
 * inside dl_iterate_phdr() at the fork (unwinding an exception, say). A thread that forks from inside a
 * task is not a worker in the child (NULL means the default pool there),
 * and a worker the pool bound to a CPU gets back the CPUs the pool was
 * created with, when it could read them (what the child creates or execs
 * is not pinned to one);
 * such a child must not return from that task (exec or _exit instead).
 * WSPOOL_TRACE: the child records no trace and never writes the parent's
 * file; WSPOOL_STATS prints for the child's own pools only. None of this
 * can deadlock the child on a lock of the library.
 *
 * <b>Misuse and debug checks.</b> These are misuses, whose behaviour is
 * undefined: pool_spawn() into a frame that is still pending (spawned and
 * not yet synced or taken: the first task may be lost); a second
 * pool_sync() or pool_take() of a frame; pool_sync() or pool_take() from a
 * thread other than the one that spawned the frame, or in another unit of
 * work (see pool_spawn()); a group used before
 * pool_group_init(); pool_group_init() on a group whose children are
 * pending or that is being waited on; two pool_group_wait() calls on one
 * group at once; pool_blocking_end() without a matching
 * pool_blocking_begin(). The normal build returns EINVAL where it can tell
 * cheaply.
 * A library built with `-Ddebug_checks=true` detects each of them (it keeps
 * every frame out of the inline fast paths to see them all), and asserts
 * the runtime's own invariants: it prints a report naming the misuse and
 * the call stack to stderr and calls abort(). That build is the one
 * exception to "never calls abort()"; it is meant for testing. It also
 * notes, on stderr and without stopping, a pool_sync() or pool_take() (a
 * typed task's sync included) whose frame was not the newest pending spawn
 * of its thread: newer frames run first and the sync leaves the inline
 * fast path, which is allowed but slower in recursive code. Each note
 * names the call site (the caller's function and offset, for addr2line)
 * and the two frames above it, once per site, for the first 10 sites of
 * the process; then one line says further sites are not reported. With
 * the inline paths (optimised callers) the site is the sync's own call;
 * without them a typed task's sync is a function of its own, and the
 * frame above it names the caller. Other builds keep no such check.
 *
 * \section idlepoll Idle workers and the program's other threads
 * A worker that runs out of work looks again, yielding its CPU between
 * looks, for pool_config_t::idle_poll_us, then sleeps on a futex until work
 * is submitted (no CPU while asleep; one timer, 1 ms after it fell asleep,
 * once it has run a task or been woken: docs/design.md 5.3). By default
 * (POOL_IDLE_POLL_AUTO) it polls 64 rounds, each after a sched_yield()
 * (about 100 us on a free CPU), and stops early beside busy threads: a
 * yield that takes 100 us or more ran another thread on its CPU, and
 * polling on would leave the worker queued behind that thread when its
 * next task arrives. Unless tasks came meanwhile at a flood's rate (one
 * per 30 us or more: a producer of the program, to which the yield handed
 * the CPU), or the process's pools have more workers awake than there are
 * CPUs (the yield may have run one of them), the worker sleeps; after a
 * second such yield within 20 ms it sleeps as soon as it runs out of work,
 * for a quiet spell of 10 ms, each spell twice the last up to 1 s, ended
 * for a worker by a flood, and started over once a poll's yields all
 * come back at once. A woken worker is run promptly
 * by the scheduler, so a small job arriving later waits about as long as
 * it would for a thread on a condition variable, and the program's other
 * threads keep their CPUs. With POOL_IDLE_POLL_ADAPTIVE it polls about
 * 100 us, except while the threads runnable on the machine, not counting
 * the pool's own awake workers, fill every online CPU (the kernel's count
 * in /proc/loadavg, read at most every 10 ms per process): then it looks
 * again for a few microseconds without yielding and sleeps. It cannot
 * tell the program's own producers from other work: beside an outside
 * thread flooding the pool it makes workers sleep and be woken per gap. A
 * program that feeds a pool small jobs now and then and wants no poll at
 * all may ask for POOL_IDLE_POLL_NONE; one that owns its CPUs and wants
 * the lowest wake latency, for a longer poll. `WSPOOL_IDLE_POLL`
 * sets the value pool_config_default() fills in.
 * \code
 * pool_config_t cfg;
 * pool_config_default(&cfg);
 * cfg.threads = 1;
 * cfg.idle_poll_us = POOL_IDLE_POLL_NONE;  // an I/O helper: never poll
 * pool_t *io;
 * int rc = pool_create(&io, &cfg);   // EINVAL outside [-2, POOL_IDLE_POLL_MAX]
 * \endcode
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
 * Every worker thread pool_create() starts runs them, those parked beyond
 * the pool's size too (pool_resize()). Stand-in threads (\ref blocking) run
 * the hooks too, with the indexes that follow the workers' (M + k for the
 * k-th stand-in, M the pool's largest size, pool_config_t::max_threads or
 * else threads; also what pool_worker_id() returns on it): the start hook when the stand-in is
 * first needed, long after pool_create() returned; the stop hook in
 * pool_destroy(), as for a worker.
 *
 * Worker threads are named "<name>-w<index>" (pthread_setname_np: what
 * `top -H`, `ps -L`, gdb, perf and /proc/self/task/N/comm show), cut to
 * Linux's 15 visible bytes by shortening the name, never the index. The
 * name is pool_config_t::name, or "wspool-p<N>" where N counts the pools
 * this process created (so "wspool-p0-w3"). Stand-ins are named
 * "<name>-s<k>" (the k-th stand-in of the pool, from 0).
 *
 * \section bounded Bounded submission (backpressure)
 * A pool created with pool_config_t::max_queued = B > 0 lets threads
 * outside the pool have at most B submitted tasks waiting to start; a task
 * stops counting once it starts. A producer faster than the workers then
 * waits instead of growing the queue without end (as with zstd's pool,
 * GLib's GThreadPool or Java's bounded executors):
 * - pool_submit() and pool_submit_n() from outside wait (yielding, then
 *   blocked, no CPU taken) until their tasks fit; pool_submit_n() of more
 *   than B tasks fails with E2BIG. pool_destroy() beginning meanwhile
 *   ends the wait with ESHUTDOWN and nothing submitted.
 * - pool_try_submit() fails with EAGAIN instead of waiting.
 * - <b>From a worker of the pool nothing waits and nothing counts</b>:
 *   a task's own submissions go on its worker's deque as on any pool. A
 *   worker waiting for room in its own pool could wait for itself; the
 *   bound limits what the outside adds, not what tasks spawn. Except
 *   inside pool_isolate(): those submissions go to the global queue
 *   and count there as outside ones do, without waiting, so
 *   they can hold the queue full and make outside producers wait.
 * - A worker of another pool is an outside thread here: it waits like one
 *   (its own pool runs without it meanwhile).
 * - Jobs (\ref jobs) do not count.
 *
 * The bound is exact for admission: an outside submission is accepted only
 * while fewer than B counted tasks wait. A worker reports the tasks it
 * started in small batches (at most B / (2 x workers), and whenever it
 * runs out of work), so a waiting producer may see room a few tasks late,
 * never early. pool_pending() reads the counts. On a pool of one worker,
 * tasks still start in submission order (pool_submit()). Without a bound
 * (the default) none of this costs anything.
 * \code
 * pool_config_t cfg;
 * pool_config_default(&cfg);
 * cfg.threads = 4;
 * cfg.max_queued = 64;    // a producer may run 64 tasks ahead
 * pool_t *pool;
 * if (pool_create(&pool, &cfg) == 0) {
 *   for (size_t i = 0; i < nblocks; i++)
 *     pool_submit(pool, compress_block, &blocks[i]); // waits when 64 wait
 *   pool_destroy(pool);
 * }
 * \endcode
 *
 * \section memory Memory: allocator hooks and pool_memory()
 * A program that accounts its memory gives a pool its allocator in
 * pool_config_t::alloc_fn, pool_config_t::free_fn and
 * pool_config_t::alloc_ctx, and reads what the pool holds with
 * pool_memory(). The hooks get every allocation the library makes for
 * that pool while it exists: worker blocks, deques and their growth,
 * private frame stacks, submit batches, the global queue's rings, group
 * children and their node caches, parallel_for ranges and reduce
 * accumulators, stand-ins, the placement plan and its temporaries; pool_destroy() gives all of it back through `free_fn`, as
 * does pool_destroy() of a pool inherited across fork(), in the child (but
 * for the submit batches of tasks that were running or queued at the fork:
 * the parent's threads held them, and the child cannot find them).
 * Not through the hooks, and not counted by pool_memory():
 * - the pool's control struct (the few KiB `pool_t *` points to), from
 *   posix_memalign: never freed, a later pool_create() reuses it (\ref
 *   faults);
 * - process-wide state no pool owns: the hwloc topology (loaded once per
 *   process) and every allocation inside hwloc; the lists of
 *   WSPOOL_TRACE, its per-worker trace buffers and the file's; the busy
 *   set of a `-Ddebug_checks=true` build;
 * - thread stacks (of pool_config_t::stack_size, mapped by the library with
 *   mmap), the C library's thread control blocks, the chunks of a thread's
 *   frame stack (pool_frame_push(), typed tasks' NAME_push), and the CPU sets of sched_getaffinity() and
 *   binding (CPU_ALLOC, freed before the call returns), including the
 *   one pool_create() reads before the pool exists (its CPU count, for
 *   `threads = 0` and the idle poll; the pool keeps a copy, through the
 *   hooks);
 * - the objects of the C++ layer (wspool.hpp), from operator new;
 * - a job's edge blocks (its third predecessor on, 512 bytes for 31
 *   edges), from malloc: they live until its last predecessor completes,
 *   which may be in another pool, after the job's own pool was destroyed.
 *
 * With hooks, worker blocks are the hooks' memory, cache-line aligned
 * inside an over-allocation (128 bytes more), so a bound pool
 * loses NUMA-local worker memory (its workers are still bound and steal
 * nearest first); and the global queue's large rings come from the hooks
 * too, so what a burst grew goes back to the hooks when the pool is idle
 * (not straight to the system, as without hooks). Without hooks nothing
 * changes: the library calls malloc, posix_memalign and mmap as before,
 * and pool_memory() counts those blocks. The cost either way is one
 * predictable branch per allocation and a count on a line the calling
 * thread owns (a worker's) or an atomic add (any other thread).
 * \code
 * typedef struct { _Atomic size_t live; } acct_t;
 * typedef struct { size_t size; _Alignas(16) char data[]; } hdr_t;
 * static void *acct_alloc(void *ctx, size_t size) {
 *   hdr_t *h = malloc(sizeof(hdr_t) + size);
 *   if (!h) return NULL;
 *   h->size = size;
 *   atomic_fetch_add(&((acct_t *)ctx)->live, size);
 *   return h->data;
 * }
 * static void acct_free(void *ctx, void *p) {
 *   hdr_t *h = (hdr_t *)((char *)p - offsetof(hdr_t, data));
 *   atomic_fetch_sub(&((acct_t *)ctx)->live, h->size);
 *   free(h);
 * }
 * ...
 * acct_t acct = {0};
 * pool_config_t cfg;
 * pool_config_default(&cfg);
 * cfg.alloc_fn = acct_alloc;
 * cfg.free_fn = acct_free;
 * cfg.alloc_ctx = &acct;
 * pool_t *pool;
 * if (pool_create(&pool, &cfg) == 0) {
 *   // ... work; acct.live == what pool_memory() says once idle
 *   pool_destroy(pool);  // acct.live == 0 here
 * }
 * \endcode
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
  POOL_BIND_NONE,   /**< no binding; the OS places threads on the CPUs
                         `threads` = 0 counts (default) */
  POOL_BIND_CORE,   /**< compact: one worker per physical core, filling one
                         cache/NUMA domain before the next; SMT siblings only
                         once every core has a worker */
  POOL_BIND_SPREAD  /**< round-robin over NUMA nodes, then packages, then cores */
} pool_bind_t;

/** Pool configuration. Fill with pool_config_default(), then override. */
typedef struct pool_config {
  /** Worker count. <b>0 is not an error: it means one worker per CPU</b>
      the creating thread may run on (sched_getaffinity, so taskset, cgroup
      cpusets and the program's sched_setaffinity count; from a task, a
      hook or a job, the CPUs its pool was created with, not the one CPU of
      a bound worker: docs/placement.md, "Usable CPUs"), which the workers
      of POOL_BIND_NONE run on; a program whose own setting of 0 means
      something else must check before it calls pool_create(). More workers
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
  /** The most tasks that threads outside the pool may have waiting: \ref
      bounded "bounded submission". 0 (the default) = no bound. */
  size_t max_queued;
  /** The largest size pool_resize() may give the pool; 0 (the default) =
      \p threads, a pool of fixed size. pool_create() starts this many
      worker threads and parks those beyond \p threads (each costs its
      thread and a few pages, no CPU). With \p threads = 0 the automatic
      count is capped at it. Below \p threads, or above POOL_MAX_THREADS,
      is EINVAL. */
  unsigned max_threads;
  /** How long a worker that ran out of work keeps looking for more (with
      sched_yield() between looks) before it sleeps, in microseconds.
      Polling turns a wake-up into a look (lower latency for work that
      arrives soon) at the cost of CPU other threads may want.
      - POOL_IDLE_POLL_AUTO (0, the default and what a zeroed config
        holds): 64 looks, each after a yield (about 100 us), none for a
        while once a yield shows other threads want the CPU and no flood
        of tasks comes (\ref idlepoll).
      - POOL_IDLE_POLL_ADAPTIVE (-2): about 100 us, and none while other
        runnable threads (of this process or any other) fill every CPU: a
        worker then sleeps after a few microseconds and leaves its CPU to
        them (\ref idlepoll).
      - POOL_IDLE_POLL_NONE (-1): sleep at once, always.
      - 1 to POOL_IDLE_POLL_MAX: poll that long, whatever else runs.
      Any other value: pool_create() fails with EINVAL. */
  int idle_poll_us;
  /** Allocator hooks (\ref memory), in the shape of zstd's customMem:
      every allocation the library makes for this pool (but the exceptions
      listed there) is `alloc_fn(alloc_ctx, size)` and is given back with
      `free_fn(alloc_ctx, ptr)`. Both NULL (the default) = the C library;
      exactly one NULL = EINVAL from pool_create(). `alloc_fn` returns
      memory aligned for any object, as malloc does, or NULL (the call
      that needed it then fails with ENOMEM, or runs its work inline where
      documented). Both are called from any thread of the process, also
      concurrently, until pool_destroy() returns; they must not call into
      this pool. */
  void *(*alloc_fn)(void *ctx, size_t size);
  /** Gives back a block of `alloc_fn`; never called with NULL. */
  void (*free_fn)(void *ctx, void *ptr);
  /** Passed to both allocator hooks. */
  void *alloc_ctx;
} pool_config_t;

/** pool_config_t::idle_poll_us: the default poll (64 yielding looks). */
#define POOL_IDLE_POLL_AUTO 0
/** pool_config_t::idle_poll_us: never poll; sleep as soon as idle. */
#define POOL_IDLE_POLL_NONE (-1)
/** pool_config_t::idle_poll_us: poll, unless other threads fill the CPUs. */
#define POOL_IDLE_POLL_ADAPTIVE (-2)
/** pool_config_t::idle_poll_us: the longest poll accepted (1 s). */
#define POOL_IDLE_POLL_MAX 1000000

/**
 * \brief Fill \p cfg with the defaults.
 *
 * Reads `WSPOOL_THREADS` (a count, 0 = automatic), `WSPOOL_BIND`
 * (`none|core|spread`) and `WSPOOL_IDLE_POLL` (microseconds of
 * pool_config_t::idle_poll_us, 0 = POOL_IDLE_POLL_NONE; unset =
 * POOL_IDLE_POLL_AUTO). A bad value is reported on stderr naming the variable
 * and the value, and the default is used. Fields set after this call win.
 * Does nothing when \p cfg is NULL.
 * \param cfg the configuration to fill.
 */
POOL_API void pool_config_default(pool_config_t *cfg);

/**
 * \brief Create a pool and start its workers.
 * \param out receives the pool; untouched on failure.
 * \param cfg configuration, or NULL for pool_config_default().
 * \return 0; EINVAL for a NULL \p out, a thread count above POOL_MAX_THREADS,
 *         a bad bind value, an idle_poll_us outside [-2, POOL_IDLE_POLL_MAX],
 *         or exactly one of `alloc_fn` and `free_fn` set; ENOMEM; EAGAIN
 *         when a thread cannot be created
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
 * \param pool the pool to destroy.
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
 * a lock; from any other thread it goes to the pool's global queue. On a
 * pool with a bound (\ref bounded), a thread outside the pool waits here
 * while the bound's worth of its tasks wait to start.
 *
 * <b>Order.</b> Tasks that one thread outside the pool submits (with
 * pool_submit() and pool_submit_n(), whose tasks count in array order)
 * start in the order it submitted them on a pool of one worker: such a
 * pool is a FIFO executor for that thread (tasks of different threads
 * interleave in any order). With more workers they leave the queue in that
 * order but may start in any order and run at once. Tasks submitted from
 * inside tasks have no order.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param fn the task's function.
 * \param arg its argument.
 * \return 0; EINVAL for a NULL \p fn; ESHUTDOWN when the pool is being
 *         destroyed (also when destroy begins while the caller waits for
 *         room) and the caller is not one of its workers; ENOMEM.
 */
POOL_API int pool_submit(pool_t *pool, pool_fn fn, void *arg);

/**
 * \brief pool_submit() that never waits for room: fails at once when the
 * pool's bound is reached.
 *
 * On a pool without a bound, and from a worker of the pool, the same as
 * pool_submit(). See \ref bounded.
 * \code
 * if (pool_try_submit(pool, compress_block, blk) == EAGAIN)
 *   compress_block(blk); // the queue is full: do it here
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param fn the task's function.
 * \param arg its argument.
 * \return 0; EAGAIN when `max_queued` tasks from outside wait to start
 *         (nothing was submitted); otherwise as pool_submit().
 */
POOL_API int pool_try_submit(pool_t *pool, pool_fn fn, void *arg);

/**
 * \brief Run `fn(args[i])` once for each `i < n` on the pool, fire-and-forget:
 * pool_submit() for a batch, all or nothing.
 *
 * From outside the pool the batch costs one acquisition of the lock of
 * the calling thread's lane of the global queue; from a worker of that pool
 * the n tasks go on the worker's own deque, and thieves spread them. Either every task is accepted (and
 * runs exactly once) or none is. \p args NULL runs `fn(NULL)` n times.
 * From outside, into a pool of more than 8 workers, the calling thread
 * wakes up to n sleeping workers itself before it returns (a system call
 * each), so that a burst reaches every worker at once.
 * \code
 * void *items[64];
 * for (int i = 0; i < 64; i++) items[i] = &work[i];
 * int rc = pool_submit_n(pool, process, items, 64);
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param fn the function of every task.
 * \param args the n arguments, or NULL.
 * \param n how many tasks.
 * On a pool with a bound (\ref bounded) an outside caller waits until all
 * n fit under it.
 * \return 0 (also for n == 0); EINVAL for a NULL \p fn; ESHUTDOWN when the
 *         pool is being destroyed and the caller is not one of its workers;
 *         E2BIG, from outside a pool whose `max_queued` is below n;
 *         ENOMEM. On every error nothing was submitted.
 */
POOL_API int pool_submit_n(pool_t *pool, pool_fn fn, void *const *args, size_t n);

/**
 * \brief How many submitted tasks wait to start and how many run, now.
 *
 * Counts the tasks of pool_submit(), pool_submit_n() and pool_try_submit()
 * from every thread, and started jobs (\ref jobs): \p queued, accepted and
 * not started; \p running, started and not finished. Read without stopping
 * the pool, finishes first, then starts, then submissions: \p running
 * counts the tasks started by some moment of the call that had not
 * finished at an earlier one, and \p queued those accepted by a moment
 * that had not started at an earlier one. So each errs only upwards, by
 * what moved during the call: a caller preempted in it may see more
 * running than there are threads. Costs a read of a few counters per
 * worker and per lane, no lock and no write.
 * \code
 * size_t queued, running;
 * if (pool_pending(pool, &queued, &running) == 0 && queued > 1000)
 *   slow_down();
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param queued receives the waiting count, or NULL.
 * \param running receives the running count, or NULL.
 * \return 0; EINVAL when there is no pool; ESHUTDOWN once pool_destroy()
 *         began (from a thread that is not one of its workers); EOWNERDEAD
 *         in a child of fork().
 */
POOL_API int pool_pending(const pool_t *pool, size_t *queued, size_t *running);

/**
 * \brief Wait until every task submitted so far with pool_submit(), and
 * everything those tasks submitted, has finished. Submitted: pool_submit()
 * and its kin, and started jobs that became ready (\ref jobs); a group's
 * children and spawned frames are waited for by their group's wait and
 * their sync, not here.
 * \param pool the pool, or NULL (\ref nullpool).
 * \return 0; EDEADLK when called from a worker of that pool; EINVAL when
 *         there is no pool; ESHUTDOWN when called once pool_destroy() began
 *         (a caller already waiting when it began gets 0 after the drain).
 */
POOL_API int pool_wait_idle(pool_t *pool);

/**
 * \brief Change how many workers take tasks, while the pool runs.
 *
 * \p threads workers, those of index below it, take tasks once the call
 * returns; the others park. <b>A shrink returns once every worker beyond
 * the new size has finished the task it was running</b> (a task is never
 * interrupted: one that blocks for a second makes the call wait that
 * second), so from the return on, at most \p threads workers run tasks,
 * plus the stand-ins of tasks blocked in pool_blocking_begin() regions
 * (\ref blocking), which do not count. Queued work is not lost or moved:
 * what a parked worker left on its deque is stolen by the others. A grow
 * wakes parked workers at once. Calls on one pool are serialised; each
 * acts as if alone. pool_threads() returns the new size.
 * \code
 * pool_config_t cfg;
 * pool_config_default(&cfg);
 * cfg.threads = 2;
 * cfg.max_threads = 16;     // may grow to 16
 * pool_t *pool;
 * if (pool_create(&pool, &cfg) == 0) {
 *   pool_resize(pool, 8);   // eight workers from now on
 *   pool_resize(pool, 1);   // back to one, once the other seven are done
 *   pool_destroy(pool);
 * }
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param threads the new size, from 1 to the pool's max_threads.
 * \return 0; EINVAL for 0 or above max_threads (pool_config_t), or no
 *         pool; EDEADLK from a worker or stand-in of that pool (it could
 *         wait for itself); ESHUTDOWN once pool_destroy() began; EOWNERDEAD
 *         in a child of fork().
 */
POOL_API int pool_resize(pool_t *pool, unsigned threads);

/**
 * \brief How many bytes the pool holds from its allocator now (\ref
 * memory): the allocator hooks', or the C library's without them.
 *
 * What the library asked for: with hooks, exactly the sum of the sizes of
 * the blocks `alloc_fn` returned and `free_fn` has not taken back yet;
 * without them, the sizes given to malloc, posix_memalign and mmap (not
 * the C library's own overhead). The exceptions listed in \ref memory are
 * not counted. Each thread counts its own allocations on a line of its
 * own, and this call sums the counts: no lock, no write. While the pool
 * works the sum is a snapshot of moving counts (a block allocated on one
 * thread and freed on another may be seen on one side only). It is exact
 * whenever no allocation or free is under way: in an idle pool, once its
 * workers have let go of what the last tasks used (a worker may give back
 * a batch's block an instant after pool_wait_idle() returned).
 * \code
 * size_t bytes;
 * if (pool_memory(pool, &bytes) == 0)
 *   printf("pool: %zu KiB\n", bytes >> 10);
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param bytes receives the count.
 * \return 0; EINVAL for a NULL \p bytes or when there is no pool;
 *         ESHUTDOWN once pool_destroy() began (from a thread that is not
 *         one of its workers); EOWNERDEAD in a child of fork().
 */
POOL_API int pool_memory(const pool_t *pool, size_t *bytes);

/** \brief Worker count of \p pool (NULL: as in \ref nullpool): its size now,
 *  as pool_resize() last set it; 0 if none. */
POOL_API unsigned pool_threads(const pool_t *pool);

/** \brief Index of the calling worker in its pool, -1 outside any pool.
 *  Workers are 0 to pool_threads() - 1 (up to M - 1 as a pool grows, M
 *  its largest size: pool_config_t::max_threads, else its worker count);
 *  a stand-in thread (\ref blocking) is M + k, k counting the pool's
 *  stand-ins from 0. */
POOL_API int pool_worker_id(void);

/** \brief A readable message for an error code; never NULL.
 *  \param err a value one of the functions above returned. */
POOL_API const char *pool_strerror(int err);

/** @} */

/** \defgroup forkjoin Fork/join
 *  @{ */

/**
 * A spawned task frame, owned by the caller (usually on its stack) from
 * pool_spawn() until pool_sync() returns. Spawning allocates nothing.
 */
/** \cond WSPOOL_INLINE_ABI */
/* The part of a frame the inline fast paths (wspool/inline.h) read and
 * write, by member access, so that callers' code needs no cast between
 * types (strict aliasing). */
struct pool__frame {
  void *exec;     /* the library's: how it runs the frame once published */
  pool_fn fn;     /* the task's function, written by every spawn */
  void *arg;      /* its argument, written by every spawn */
  void *owner;    /* the library's: the spawning worker */
  void *pool;     /* the library's: the pool the frame went to */
  void *thief;    /* the library's: the worker that stole it (a hint) */
  unsigned state; /* the library's: POOL__FRAME_IDLE, or spawned or done */
};
/** \endcond */
typedef struct pool_task {
  struct pool__frame wsp_frame; /**< the runtime's; never read or written by callers */
  void *wsp_private[1];         /**< the runtime's; never read or written by callers */
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
 * frame, from the same thread, before the frame's storage goes away, and
 * in the same unit of work (\ref cancel): a frame spawned by a group's
 * child, a join's half or a loop's body is synced before that returns, and
 * not from inside a join, loop or child started after the spawn.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param task the frame, owned by the caller until pool_sync() returns.
 * \param fn the task's function.
 * \param arg its argument.
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
 * first from the thief that took it. A waiting worker runs other tasks on
 * its own stack only while more than a quarter of its stack (and at least
 * 64 KiB) is left; past that it waits without helping, so deep or wide
 * trees cannot overflow it. When it finds nothing to run for a short while
 * (docs/tuning.md) it sleeps until the task is done or new work appears, so
 * a long wait uses no CPU. Frames may be synced in any order; what each
 * order costs is in docs/performance.md.
 * From a thread outside the pool: blocks until a worker has run it (the
 * task runs in the pool, so what it spawns stays there too).
 * \param task a frame the calling thread spawned.
 * \return 0; EINVAL for a NULL \p task or a frame that was not spawned.
 */
POOL_API int pool_sync(pool_task_t *task);

/**
 * \brief Take a spawned task back to run it yourself, or wait for it.
 *
 * The alternative to pool_sync() for recursive code. If no thief has
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
 * \param task a frame the calling thread spawned.
 * \return POOL_TAKEN; 0 when the task ran elsewhere; EINVAL for a NULL
 *         \p task or a frame that was not spawned.
 */
POOL_API int pool_take(pool_task_t *task);

/**
 * \brief Storage for a frame on the calling thread's frame stack.
 *
 * For code that spawns as many children as it finds (a loop over
 * candidates) without an array of frames on its C stack: typed tasks'
 * NAME_push() and NAME_pop() (\ref typed) keep their frames here, and
 * pool_spawn() frames may live here too. Each thread has a stack of its
 * own, in chunks that never move while they hold frames (a pending
 * frame's address sits in the deques), taken with malloc and given back
 * once empty (one kept) and at the thread's exit. Frames are popped in the
 * reverse order of their pushes, by the thread that pushed them and before
 * the task that pushed them returns; what a task pushes in between is its
 * own business as long as it pops it all. Inline (wspool/inline.h, as
 * pool_spawn()): a push that fits the newest chunk (16 KiB) and a pop that
 * leaves it non-empty are a few loads and stores, no call.
 * \code
 *   void *mem;
 *   if (pool_frame_push(sizeof(pool_task_t), _Alignof(pool_task_t), &mem) == 0) {
 *     pool_task_t *t = mem;
 *     if (pool_spawn(NULL, t, fn, arg) == 0) pool_sync(t);
 *     pool_frame_pop(mem);
 *   }
 * \endcode
 * \param size the frame's size in bytes.
 * \param align its alignment: a power of two, at most 16.
 * \param out receives the frame's address, aligned to 16 bytes (untouched
 *        on failure).
 * \return 0; EINVAL for a NULL \p out, a size of 0 or an alignment that is
 *         not a power of two of at most 16; ENOMEM.
 */
POOL_API int pool_frame_push(size_t size, size_t align, void **out);

/** \brief The calling thread's newest frame of pool_frame_push(), or NULL
 *  when it has none. */
POOL_API void *pool_frame_top(void);

/**
 * \brief Give back the calling thread's newest frame of pool_frame_push().
 * \param frame that frame, after its sync.
 * \return 0; EINVAL (nothing changes) when \p frame is not the newest.
 */
POOL_API int pool_frame_pop(void *frame);

/**
 * \brief Run `a(a_arg)` and `b(b_arg)`, possibly in parallel; return when
 * both have finished.
 *
 * From a worker of the pool, `a` runs on the caller and `b` is spawned. From
 * any other thread both run on the pool's workers while the caller blocks,
 * so it is also the way to run a computation "inside" a pool from main().
 * \param pool the pool, or NULL (\ref nullpool).
 * \param a the first function.
 * \param a_arg its argument.
 * \param b the second function.
 * \param b_arg its argument.
 * A join is a unit of work (\ref cancel): a half that calls pool_fail()
 * cancels the other half if it has not started.
 * \return 0; the first failure of a half (pool_fail()); ECANCELED when work
 *         the join is nested in was cancelled (a half may have been skipped);
 *         EINVAL for a NULL function or no pool; ESHUTDOWN from outside a
 *         pool being destroyed (nothing ran).
 */
POOL_API int pool_join(pool_t *pool, pool_fn a, void *a_arg, pool_fn b, void *b_arg);

/** A task group: any number of children, wait for all. */
typedef struct pool_group {
  void *wsp_private[8]; /**< the runtime's; never read or written by callers */
} pool_group_t;

/**
 * \brief Initialise a group on \p pool.
 *
 * The group is nested in the work current where this is called (\ref
 * cancel): cancelling that work cancels the group. Such a group must not be
 * used after that work ended (the task that initialised it returned);
 * initialise it again instead. Its children must not outlive that work
 * either (their units are nested in it), which a continuation
 * (pool_job_after_group()) allows: a job's function is the one such work
 * that waits for them (it completes after the group's round ended, \ref
 * jobs); elsewhere (a group's child, a loop's body, a join's half,
 * pool_isolate()), wait for the group before that work returns. A group
 * initialised outside every task or in a pool_submit() task is nested in
 * nothing.
 * \param g the group, owned by the caller.
 * \param pool the pool its children go to, or NULL (\ref nullpool).
 * \return 0; EINVAL for NULL \p g or no pool; EOWNERDEAD for a pool
 *         inherited across fork().
 */
POOL_API int pool_group_init(pool_group_t *g, pool_t *pool);

/**
 * \brief Spawn a child into the group. Child storage comes from per-worker
 * free lists, so the steady state does no malloc per spawn.
 * \param g the group.
 * \param fn the child's function.
 * \param arg its argument.
 * \return 0; EINVAL for NULL \p g or \p fn, or an uninitialised group;
 *         ENOMEM; ESHUTDOWN for an outside spawn into a pool being destroyed;
 *         EOWNERDEAD in a child of fork() for a group initialised before
 *         the fork (its pool is the parent's).
 */
POOL_API int pool_group_spawn(pool_group_t *g, pool_fn fn, void *arg);

/**
 * \brief pool_group_spawn() for a child that owns its argument: when the
 * child is skipped (\ref cancel), `drop(arg)` runs instead of `fn(arg)`, on
 * the worker that skips it, so that what `arg` holds can be freed. Exactly
 * one of the two runs, once, unless the spawn fails (then neither: the
 * caller still owns `arg`).
 * \code
 *   struct job *j = malloc(sizeof *j);   // freed by run_job or by free
 *   if (pool_group_spawn_drop(&g, run_job, j, free) != 0) free(j);
 * \endcode
 * \param g the group.
 * \param fn the child's function.
 * \param arg its argument.
 * \param drop called with \p arg instead of \p fn if the child is skipped,
 *        or NULL (then this is pool_group_spawn()).
 * \return as pool_group_spawn().
 */
POOL_API int pool_group_spawn_drop(pool_group_t *g, pool_fn fn, void *arg, pool_fn drop);

/**
 * \brief Wait for every child spawned so far; helps like pool_sync().
 * The group may be reused afterwards: the wait clears its cancellation and
 * its failure (\ref cancel).
 * \param g the group.
 * \return 0 when every child ran and none failed; the code of the group's
 *         first failure (pool_fail()); ECANCELED when the group or work it
 *         is nested in was cancelled (children may have been skipped);
 *         EINVAL for NULL \p g or an uninitialised group; EBUSY while the
 *         group has a continuation (pool_job_after_group()); EDEADLK from
 *         the group's own work (a child, or a frame, loop or isolated
 *         computation inside one), which the wait would wait for;
 *         EOWNERDEAD in a child of fork() for a group initialised before
 *         the fork, children pending or not (the round never ends here).
 */
POOL_API int pool_group_wait(pool_group_t *g);

/**
 * \brief Cancel the group: children that have not started are skipped
 * (never run, but for one a worker was just starting: \ref cancel),
 * running ones finish, and so does everything nested in them
 * (\ref cancel). Thread-safe and idempotent: any thread, inside or outside
 * the pool, may call it any number of times, concurrently with spawns and
 * with the wait. Lasts until pool_group_wait() returns (which returns
 * ECANCELED) or pool_group_init(); a cancel (or a failure) racing with
 * the end of that wait is reported by it or stays for the next round.
 * \param g the group.
 * \return 0; EINVAL for NULL \p g or an uninitialised group; EOWNERDEAD
 *         in a child of fork() for a group initialised before the fork (no
 *         effect).
 */
POOL_API int pool_group_cancel(pool_group_t *g);

/** @} */

/** \defgroup typed Typed tasks
 *  \brief Fork/join with typed arguments and a typed result: POOL_TASK()
 *  declares the frame and the spawn and sync functions of a task
 *  (wspool_typed.h, which wspool.h includes). */

/** \defgroup parfor Parallel loops
 *  @{ */

/** A loop body: handles the items [begin, end). */
typedef void (*pool_range_fn)(size_t begin, size_t end, void *ctx);

/**
 * \brief Call \p body on disjoint subranges covering [begin, end) exactly once.
 *
 * Every subrange handed to \p body has at least \p grain items (0 =
 * automatic), but the one that ends at \p end, which may be shorter. Returns
 * when all of it has run. Works from outside the pool and from inside tasks
 * (nested), on any pool. Ranges up to SIZE_MAX - 1 items.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param begin the first item.
 * \param end one past the last item.
 * \param grain the smallest chunk, or 0.
 * \param body called on each subrange, with \p ctx.
 * \param ctx passed to \p body.
 * The loop is a unit of work (\ref cancel): a body that calls pool_fail()
 * stops the subranges not yet started, and so does a cancellation of the
 * work the loop is nested in.
 * \return 0 (also for begin == end, without calling \p body); the first
 *         failure (pool_fail() in a body); ECANCELED when work the loop is
 *         nested in was cancelled (subranges may have been skipped); EINVAL
 *         for begin > end, a NULL \p body, or no pool; ENOMEM; ESHUTDOWN from
 *         outside a pool being destroyed, and EOWNERDEAD for a pool of the
 *         parent in a child of fork() (\ref faults), an empty range too.
 */
POOL_API int pool_parallel_for(pool_t *pool, size_t begin, size_t end, size_t grain,
                               pool_range_fn body, void *ctx);

/** A loop body that can fail: returns 0, or an error code (> 0) that stops
 *  the loop as pool_fail() would. */
typedef int (*pool_try_range_fn)(size_t begin, size_t end, void *ctx);

/**
 * \brief pool_parallel_for() whose body can fail.
 *
 * The first subrange to return non-zero stops the subranges not yet
 * started (on each worker at most the one it is starting may still start)
 * and its value is what this returns; running ones finish.
 * \code
 *   static int parse(size_t lo, size_t hi, void *ctx) {
 *     for (size_t i = lo; i < hi; i++)
 *       if (!valid(ctx, i)) return EILSEQ;  // stops the loop
 *     return 0;
 *   }
 *   int rc = pool_parallel_for_try(NULL, 0, n, 0, parse, doc);  // 0 or EILSEQ
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param begin the first item.
 * \param end one past the last item.
 * \param grain the smallest chunk, or 0.
 * \param body called on each subrange, with \p ctx.
 * \param ctx passed to \p body.
 * \return as pool_parallel_for(); a negative return of \p body counts as
 *         EINVAL.
 */
POOL_API int pool_parallel_for_try(pool_t *pool, size_t begin, size_t end, size_t grain,
                                   pool_try_range_fn body, void *ctx);

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
 * \param pool the pool, or NULL (\ref nullpool).
 * \param begin the first item.
 * \param end one past the last item.
 * \param grain the smallest chunk, or 0 (automatic).
 * \param r the reduction.
 * \param result receives the result, r->size bytes.
 * A body may fail with pool_fail(), as in pool_parallel_for(); then nothing
 * is combined and \p result holds the identity (so after ECANCELED). A
 * call refused before it ran (EINVAL, ENOMEM, ESHUTDOWN, EOWNERDEAD)
 * leaves \p result as it was.
 * \return 0; the first failure; ECANCELED; EINVAL for begin > end, a NULL
 *         \p r, \p result, body, combine or identity, or a zero size; ENOMEM
 *         (the per-block accumulators); ESHUTDOWN and EOWNERDEAD as
 *         pool_parallel_for().
 */
POOL_API int pool_parallel_reduce(pool_t *pool, size_t begin, size_t end, size_t grain,
                                  const pool_reducer_t *r, void *result);

/** @} */

/** \defgroup cancel Cancellation and errors
 *
 * A task may stop work that is no longer wanted, and may fail with an
 * errno-style code that reaches whoever waits for its work.
 *
 * <b>Units of work.</b> A group (between pool_group_init() or its last
 * wait and the next pool_group_wait()), a pool_join(), a
 * pool_parallel_for() / pool_parallel_for_try() / pool_parallel_reduce()
 * call, a job (\ref jobs, nested in no other unit) and a pool_isolate()
 * call. Each can be cancelled, records at most one failure, and reports
 * either at its wait.
 *
 * <b>The current work.</b> Code running as a group's child, a join's half,
 * a loop's body, a job's function or pool_isolate()'s belongs to that unit. A frame spawned with pool_spawn()
 * (and a POOL_TASK) belongs to the unit its spawner belonged to, wherever it
 * runs. A pool_submit()ted task belongs to none (it is nobody's child), nor
 * does code of a thread outside every task (main()).
 *
 * <b>Where cancellation reaches.</b> A unit started while some work is
 * current (a group initialised, a join or a loop called, inside a task) is
 * nested in it, across pools too. Cancelling a unit cancels every unit
 * nested in it, transitively, and nothing else: not the work it is nested
 * in, not its siblings, not tasks it pool_submit()ted. In a cancelled unit
 * the runtime skips what has not started: a group's child (calling its
 * drop function, pool_group_spawn_drop()), a join's half, a loop's
 * subrange (counted in pool_worker_stats_t::skipped and
 * pool_worker_stats_t::skipped_items). "Not started" is decided by the
 * worker just before it starts the work: a cancel racing that check may
 * still see, on each worker, the one piece of work it was starting begin
 * after the cancel returned; that work runs cancelled (pool_cancelled()
 * is 1 in it) and its unit still ends with ECANCELED. It never stops
 * what runs, and never skips a frame (pool_spawn(), POOL_TASK): its
 * caller's pool_sync() uses what it computes, so it always runs, and a
 * long task polls pool_cancelled() instead.
 *
 * <b>Failure.</b> pool_fail(code) records `code` as the failure of the
 * current unit if it is the first, and cancels the unit. Its wait
 * (pool_group_wait(), pool_join(), the loop call) returns the first
 * failure; or ECANCELED if the unit, or work it is nested in, was
 * cancelled; or 0. A unit cancelled first keeps no later failure.
 * \code
 *   static void look(void *arg) {         // a child of group g
 *     struct part *pt = arg;
 *     for (size_t i = pt->lo; i < pt->hi; i++) {
 *       if ((i & 1023) == 0 && pool_cancelled()) return;  // someone found it
 *       if (pt->data[i] == pt->key) {
 *         pt->found = i;
 *         pool_fail(EEXIST);             // first hit wins, the rest stop
 *         return;
 *       }
 *     }
 *   }
 *   ...
 *   for (int k = 0; k < nparts; k++) pool_group_spawn(&g, look, &parts[k]);
 *   if (pool_group_wait(&g) == EEXIST) ...  // found
 * \endcode
 * The C++ layer (wspool.hpp) carries exceptions the same way: the first
 * exception leaving a task fails its unit and is rethrown by the wait.
 * examples/search.c is a whole program.
 *  @{ */

/**
 * \brief Has the calling task's work been cancelled?
 *
 * True when the current unit (see above) or any unit it is nested in was
 * cancelled or failed. No fence and no lock: three loads while nothing in
 * the process was cancelled since this unit last looked; after a cancel
 * anywhere, one walk up the nesting, which then notes the answer in the
 * units it passed. A call that happens after pool_group_cancel() returned
 * (ordered by a lock, a join, or an acquire read of something written
 * after it) sees it.
 * \return 1 if cancelled, else 0 (also outside every unit).
 */
POOL_API int pool_cancelled(void);

/**
 * \brief Fail the calling task's work with \p err.
 *
 * Records \p err as the current unit's failure if none was recorded and
 * neither the unit nor work it is nested in was cancelled, and cancels the
 * unit either way. The task
 * goes on running (return from it to stop). pool_fail(ECANCELED) is how a
 * task cancels its own unit without an error.
 * \param err the failure, a positive errno-style value.
 * \return 0 when \p err is the unit's failure; EALREADY when the unit had
 *         failed, or it or work it is nested in had been cancelled, before
 *         (\p err is dropped); EINVAL for
 *         \p err <= 0; ENOENT when no unit is current (a submitted task, a
 *         thread outside every task): nothing is recorded.
 */
POOL_API int pool_fail(int err);

/** @} */

/** \defgroup jobs Jobs: completion handles, continuations and dependencies
 *
 * A job is a submitted task you can wait for alone, and a node of a
 * dependency graph: it runs once every job it was put after (its
 * predecessors) has completed. Its storage, a pool_job_t, is the
 * caller's, like a frame's; a job allocates nothing unless it has more than
 * two predecessors, and waiting for it needs no thread: a job put after
 * another is a continuation, run by the worker that completes the last
 * predecessor.
 * \code
 *   pool_job_t decode, transform, write;
 *   pool_job_init(&decode, NULL, decode_fn, item);
 *   pool_job_init(&transform, NULL, transform_fn, item);
 *   pool_job_init(&write, NULL, write_fn, item);
 *   pool_job_after(&transform, &decode);    // decode -> transform -> write
 *   pool_job_after(&write, &transform);
 *   pool_job_start(&write);                 // each runs once its
 *   pool_job_start(&transform);             // predecessors completed
 *   pool_job_start(&decode);
 *   int rc = pool_job_wait(&write);         // 0, or the first failure
 * \endcode
 *
 * <b>Life of a job.</b> pool_job_init() prepares it; pool_job_after() and
 * pool_job_after_group() add predecessors until pool_job_start(); it runs
 * once started and every predecessor completed (so, while it runs, every
 * predecessor's status is final and its storage free); it is complete
 * after its function returned (or it was skipped) and every group begun in
 * it (pool_group_init() called by the function itself, or by a frame it
 * spawned) has no child pending: a group given a continuation
 * (pool_job_after_group()) may outlive the function, and its children's
 * units are nested in the job's. Groups begun deeper (in a group child, a
 * loop's body, a join's half, pool_isolate()) are not waited for: they
 * must have finished before that work ends (pool_group_init()). Every job
 * initialised must be started (a job never started holds back every job
 * put after it; so does a dependency cycle, whose jobs never run and whose
 * waits never return: nothing detects one), and
 * its storage must stay valid until it is complete: until pool_job_wait()
 * returned, or pool_job_status() returned something other than
 * EINPROGRESS; then it may be freed or initialised again. Calls on one
 * job before its start (after, start) come from one thread at a time; its
 * predecessors may meanwhile run and complete on any thread.
 *
 * <b>Outcome.</b> A job is a unit of work (\ref cancel) of its own, nested
 * in none (like a pool_submit() task): pool_fail() inside it is its
 * failure, pool_cancelled() polls it, pool_job_cancel() cancels it. Its
 * status is 0, its failure, or ECANCELED. A job whose predecessor did not
 * succeed is skipped (its function never runs) and takes that status (the
 * first recorded: a predecessor records its failure on its successors just
 * before it completes, so of two that fail at about the same time either
 * may be the one), so a failure travels down the graph and the last job
 * reports it. A job whose pool is destroyed before
 * it could run (its last predecessor completed after pool_destroy()
 * began) is skipped with status ESHUTDOWN. A job made ready by a thread
 * that is not a worker of its pool (its start, or its last predecessor's
 * completion, from outside) when the pool's global queue cannot grow is
 * skipped with status ENOMEM (pool_job_start() still returns 0); one made
 * ready on a worker is run there instead.
 *
 * <b>Where it runs.</b> Started or released from a worker of its pool, a
 * job goes on that worker's deque (the worker that completes a job runs
 * one released successor next, directly); otherwise on the pool's global
 * queue. Ready jobs (started, every predecessor complete) count as
 * submitted tasks: pool_wait_idle() waits for them, and pool_destroy()
 * runs them before it returns; so do both for a started job whose last
 * predecessor already reported complete when they were called, in any
 * pool. Dependencies may cross pools.
 *
 * examples/pipeline.c (a bounded pipeline) and examples/wavefront.c (a
 * dependency graph) are whole programs.
 *  @{ */

/** A job: caller-owned storage, from pool_job_init() until it is complete. */
typedef struct pool_job {
  void *wsp_private[16]; /**< the runtime's; never read or written by callers */
} pool_job_t;

/**
 * \brief Prepare \p job to run `fn(arg)` on \p pool once started and once
 * every predecessor added before the start has completed.
 * \param job the job's storage, owned by the caller (not a job that is
 *        started and not complete: that is a misuse nothing detects, which
 *        loses the running job's state and may run its successors early or
 *        never).
 * \param pool the pool, or NULL (\ref nullpool).
 * \param fn the job's function.
 * \param arg its argument.
 * \return 0; EINVAL for a NULL \p job or \p fn, or no pool; EOWNERDEAD for
 *         a pool inherited across fork().
 */
POOL_API int pool_job_init(pool_job_t *job, pool_t *pool, pool_fn fn, void *arg);

/**
 * \brief Run \p job only after \p pred has completed (an edge pred -> job).
 *
 * \p pred may be in any state: not started (then \p pred must be started
 * for \p job ever to run), running, or complete (then the edge is
 * satisfied at once; if \p pred did not succeed, \p job will be skipped
 * with its status). The same pair twice is two edges, both satisfied by
 * one completion. The first two predecessors of a job need no memory.
 * Edges must not form a cycle (a job after itself through others): it is
 * not detected, and no job of it, nor any job after one, ever runs.
 * \param job an initialised job not yet started.
 * \param pred an initialised job, other than \p job, valid during the call.
 * \return 0; EINVAL for NULL or uninitialised jobs, \p pred == \p job, or
 *         \p job already started; ENOMEM (no edge is added); EOWNERDEAD
 *         in a child of fork() for a \p pred initialised before the fork and
 *         not complete then (it never completes here; no edge is added).
 */
POOL_API int pool_job_after(pool_job_t *job, pool_job_t *pred);

/**
 * \brief Run \p job only after every child of \p g has finished: a
 * continuation of the group, which nobody waits for.
 *
 * Counts the children spawned before the group's count next falls to
 * zero: once every child spawned so far (and any spawned into it
 * meanwhile) has finished, \p job is released with the group's result
 * (pool_group_wait()'s value: 0, the first failure, or ECANCELED; non-zero
 * skips \p job with that status), and the group's round ends as a
 * pool_group_wait() would end it: the group may then be spawned into
 * again, or initialised again. A group with no child pending releases
 * \p job at once. Until \p job is released the group must not be waited
 * for, given another continuation, initialised again or freed. A group
 * begun in a job's function keeps that job from completing until the
 * round ends; one begun in other work must end its round before that work
 * does (pool_group_init()).
 * \param job an initialised job not yet started.
 * \param g an initialised group of the same pool or another.
 * \return 0; EINVAL for NULL or uninitialised arguments or \p job already
 *         started; EBUSY when \p g already has a continuation pending;
 *         EOWNERDEAD in a child of fork() for \p g initialised before the
 *         fork (its round never ends here; no edge is added).
 */
POOL_API int pool_job_after_group(pool_job_t *job, pool_group_t *g);

/**
 * \brief Start \p job: it runs as soon as all its predecessors completed
 * (at once when it has none). Thread-safe against its predecessors'
 * completions; the job must not be started twice.
 * \param job an initialised job.
 * \return 0; EINVAL for NULL, uninitialised or already started \p job.
 *         A job whose pool is being destroyed is not refused: it completes
 *         with status ESHUTDOWN (see above); started in a child of fork(),
 *         a job initialised before the fork completes with EOWNERDEAD.
 */
POOL_API int pool_job_start(pool_job_t *job);

/**
 * \brief pool_job_init() and pool_job_start(): submit `fn(arg)` and get a
 * handle to wait on.
 * \code
 *   pool_job_t j;
 *   if (pool_job_submit(NULL, &j, compress, &block) == 0)
 *     rc = pool_job_wait(&j);     // this task alone
 * \endcode
 * \param pool the pool, or NULL (\ref nullpool).
 * \param job the job's storage.
 * \param fn the job's function.
 * \param arg its argument.
 * \return as pool_job_init(); ESHUTDOWN (nothing started) from outside a
 *         pool being destroyed.
 */
POOL_API int pool_job_submit(pool_t *pool, pool_job_t *job, pool_fn fn, void *arg);

/**
 * \brief Wait until \p job is complete; return its status.
 *
 * Any thread blocks. A task (on a worker of any pool) does not run other
 * tasks meanwhile, as pool_sync() does: one of them could wait, in turn,
 * for a job whose waiter is suspended below it on the same stack, a
 * deadlock no order of jobs rules out. It waits in a blocking region
 * instead (pool_blocking_begin()): a stand-in thread runs the pool's work
 * meanwhile. Each waiting task holds its thread, so more task waits at
 * once (nested or side by side) than pool_standin_limit() stand-ins can
 * cover stall the pool. Inside tasks, prefer a continuation
 * (pool_job_after()) to a wait. Any number of threads may wait for one job,
 * and its storage must outlive every wait. The job must have been started
 * (or must be, by another thread): waiting for a job nobody starts never
 * returns. A wait from the job's own work (its function, or a frame, group
 * child, loop body or isolated call nested in it) would wait for itself:
 * it returns EDEADLK. Other waits that close a cycle (a job waiting for
 * one that waits for it, or for a job after it) are not detected.
 * A wait from outside the job's pool is an outside call into it
 * (\ref faults): pool_destroy() of that pool returns only once the wait
 * returned, which, for a job after a job of another pool, may be when that
 * predecessor completes (the job is then skipped with ESHUTDOWN); the
 * destroy sleeps meanwhile.
 * \param job an initialised job.
 * \return the job's status: 0; its failure (pool_fail() in it, or its
 *         first failed predecessor's); ECANCELED; ESHUTDOWN; ENOMEM (see
 *         Outcome above). Or, without waiting: EINVAL for a NULL or
 *         uninitialised \p job; EDEADLK from the job's own work (above);
 *         EOWNERDEAD in a child of fork() for a job not complete at the
 *         fork (its pool's threads are the parent's), also after the child
 *         destroyed that pool and created others, at any depth of forks
 *         (a child of a child...), but for one case: a job initialised
 *         256, 512, ... generations of fork() up, whose pool was
 *         destroyed (here, or in a process between) before a
 *         pool_create() here reused that pool's memory, is taken for this
 *         process's own (this wait blocks for ever, pool_job_status()
 *         says EINPROGRESS).
 */
POOL_API int pool_job_wait(pool_job_t *job);

/**
 * \brief The status of \p job without waiting.
 * \param job an initialised job.
 * \return EINPROGRESS while it is not complete (not started, waiting for
 *         predecessors, queued or running, or a group begun in it has
 *         children pending); once complete, what pool_job_wait() returns
 *         (then the job's storage is free); EINVAL for a NULL or
 *         uninitialised \p job; EOWNERDEAD in a child of fork() for a job
 *         not complete at the fork (it never completes here).
 */
POOL_API int pool_job_status(const pool_job_t *job);

/**
 * \brief Cancel \p job: if its function has not started it will not
 * (status ECANCELED, and every job after it is skipped), but for one a
 * worker was just starting (\ref cancel, "Where cancellation reaches");
 * if it runs, pool_cancelled() tells it so, units nested in it are
 * cancelled, and its status is ECANCELED (or its failure, if pool_fail()
 * came first).
 * Thread-safe and idempotent; no effect on a complete job (nothing nested
 * in it is left then: see "Life of a job").
 * \param job an initialised job.
 * \return 0; EINVAL for a NULL or uninitialised \p job; EOWNERDEAD in a
 *         child of fork() for a job not complete at the fork (no effect).
 */
POOL_API int pool_job_cancel(pool_job_t *job);

/** @} */

/** \defgroup blocking Blocking tasks and isolated waits
 *
 * <b>Blocking regions.</b> A task that blocks (a read from a file or a
 * socket, an MPI receive, a mutex held elsewhere, a call into a library
 * that waits) holds its worker: a pool of 2 with 2 blocked tasks runs
 * nothing. A task wraps such a call in pool_blocking_begin() and
 * pool_blocking_end(); meanwhile a stand-in thread runs the pool's work in
 * its place, so that the configured number of workers keeps running.
 * \code
 *   static void fetch(void *arg) {        // a task
 *     struct req *r = arg;
 *     pool_blocking_begin();
 *     ssize_t n = read(r->fd, r->buf, r->len);   // may block for long
 *     pool_blocking_end();
 *     r->n = n;
 *     ...compute on r->buf...
 *   }
 * \endcode
 * Stand-ins are threads of the pool, started when first needed and kept,
 * asleep when not needed, until pool_destroy(); a pool whose tasks never
 * enter a region starts none and pays nothing (but for isolated waits
 * with no other thread free, below). At most
 * pool_standin_limit() of them run at once (default: 4 per worker of the
 * pool's largest size, max_threads; environment `WSPOOL_STANDINS`;
 * pool_set_standin_limit()): past that, a
 * blocking task holds its worker as without a region. When a region ends,
 * the pool runs one thread more than configured until a stand-in finishes
 * its current task and goes back to sleep. Regions nest (only the
 * outermost counts); outside a task of a pool a region does nothing. Tasks
 * that pool_destroy() runs before it returns are served as any. Stand-ins
 * have worker indexes from the pool's largest size on (pool_worker_id()),
 * are named "<name>-s<k>" and run the worker hooks (\ref hooks); pool_worker_stats()
 * and pool_worker_cpu() know only the workers. Keep a region around the blocking call
 * alone: inside it the task holds no worker, so waits for tasks
 * (pool_sync(), group waits) do not belong there. When most of a program's
 * tasks block, a separate pool for them (sized for the I/O, not the CPUs)
 * is simpler: docs/blocking.md.
 *
 * <b>Isolated waits.</b> A waiting worker helps: pool_sync() and the other
 * waits run any task they find, which may be unrelated to what they wait
 * for. A task that holds a lock while it waits may so run another task
 * that takes the same lock, and deadlock. pool_isolate() runs a
 * computation whose waits (and the waits of everything it spawns, on any
 * worker) run only its own work: what it, and its tasks, spawned (frames,
 * group children, loop pieces), never tasks from outside it. What it
 * pool_submit()s, and jobs it makes ready, go to the global queue instead
 * (nothing in it waits for a submitted task; a wait for a job blocks in a
 * blocking region, so a stand-in runs it). The price: an isolated waiter
 * does not steal, so where it could have helped it waits. What the wait
 * needs and the waiter may not run (the computation's tasks that another
 * thread left on its deque or that pool_resize() moved to the global
 * queue, work spawned outside the computation into a group it waits for)
 * is left to the pool's other threads; once none of them is free (each in
 * a region or in such a wait, or the pool shrunk to the waiter), the
 * waiter sleeps inside a blocking region, and a stand-in runs the pool's
 * work in its place. So a program without regions gets stand-ins only
 * when every thread of its pool waits there (or the pool shrank under the
 * wait). A thread blocked without a region, or waiting on another pool,
 * counts as free; with the stand-in limit reached (or 0), or no thread to
 * be had, no stand-in comes, and such a wait may never end. A task that
 * takes the lock the isolated computation holds without a region can
 * take that stand-in and block on the lock: take it in a region.
 * \code
 *   static void update(void *arg) {        // may run as a task of any pool
 *     pthread_mutex_lock(&m);
 *     pool_parallel_for(NULL, 0, n, 0, body, arg);  // waits: runs only body pieces
 *     pthread_mutex_unlock(&m);
 *   }
 *   ...  pool_isolate(update, &state);
 * \endcode
 *  @{ */

/**
 * \brief The calling task is about to block: let a stand-in run the pool's
 * work meanwhile. Must be matched by pool_blocking_end() on the same
 * thread, in the same task: a task that returns inside a region is a
 * misuse, which only a `-Ddebug_checks=true` library detects (it reports
 * it and aborts); elsewhere the region goes on into the worker's next
 * tasks, a stand-in still running beside it, until a pool_blocking_end()
 * on that thread. What the task spawned and has not synced yet
 * becomes stealable first, so stand-ins can run it. Async-signal-unsafe;
 * two atomic operations when no stand-in is needed, a futex wake when a
 * parked one is, a thread creation the first time a new one is.
 * \return 0 (also outside every pool, where it does nothing). A stand-in
 *         that cannot be started (thread or memory limits) is not an
 *         error: the task holds its worker, as without a region.
 */
POOL_API int pool_blocking_begin(void);

/**
 * \brief The calling task no longer blocks: the end of the region
 * pool_blocking_begin() began.
 * \return 0; EINVAL without a matching pool_blocking_begin() on this
 *         thread (from a worker): a misuse, which a `-Ddebug_checks=true`
 *         library reports and aborts on instead (\ref faults, "Misuse and
 *         debug checks").
 */
POOL_API int pool_blocking_end(void);

/**
 * \brief Set how many stand-in threads \p pool may run at once.
 * Lowering it interrupts no task: stand-ins above the new limit go to
 * sleep once their current task returns. Regions that began before the
 * call may not see a raised limit.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param limit the most stand-ins at once; 0 turns regions off.
 * \return 0; EINVAL for no pool or a limit above POOL_MAX_THREADS;
 *         ESHUTDOWN once pool_destroy() began, EOWNERDEAD for a pool
 *         inherited across fork() (from outside the pool).
 */
POOL_API int pool_set_standin_limit(pool_t *pool, unsigned limit);

/** \brief The stand-in limit of \p pool (NULL: as in \ref nullpool); 0 if none. */
POOL_API unsigned pool_standin_limit(const pool_t *pool);

/**
 * \brief Run `fn(arg)` on the calling thread, isolated: its waits, and
 * those of everything it spawns, run only work spawned inside it.
 *
 * The call is a unit of work (\ref cancel), nested in the current one.
 * From a thread outside every pool, fn runs on the calling thread (whose
 * waits block anyway) and what it spawns runs isolated on the workers.
 * Isolations nest: an inner one's waits run only the inner one's work.
 * \param fn the computation.
 * \param arg its argument.
 * \return 0; the first failure inside (pool_fail()); ECANCELED when work it
 *         is nested in was cancelled; EINVAL for a NULL \p fn.
 */
POOL_API int pool_isolate(pool_fn fn, void *arg);

/** @} */

/** \defgroup stats Statistics
 *  @{ */

/** Per-worker counters. They stay on: each is a private relaxed counter.
 *  A task is counted just after it finishes, and the frames its own
 *  pool_sync() ran with it, so right after pool_wait_idle() returns the
 *  totals may still be catching up for an instant. */
typedef struct pool_worker_stats_s {
  uint64_t tasks;          /**< tasks run: each task function the worker
                                called, pool_sync()'s inline runs included.
                                A frame pool_take() hands back (POOL_TAKEN)
                                is not counted: its function never runs, the
                                caller does the work as a plain call */
  uint64_t local_pops;     /**< tasks taken from the worker's own deque
                                (pool_submit tasks that wait in one batch
                                count here as the worker runs them) */
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
  uint64_t skipped;        /**< group children and pool_join() halves the
                                worker skipped because their work was
                                cancelled (\ref cancel); not in `tasks` */
  uint64_t skipped_items;  /**< loop items (pool_parallel_for() and friends)
                                the worker skipped, whole subranges. A piece
                                an outside caller runs itself (no memory to
                                queue it) counts on no worker */
} pool_worker_stats_t;

/**
 * \brief Read worker \p worker's counters into \p out.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param worker the worker's index, below the pool's largest size
 *        (max_threads; a parked worker's counters too).
 * \param out receives the counters.
 * \return 0; EINVAL for a NULL \p out, no pool, or \p worker out of range;
 *         ESHUTDOWN from outside a pool being destroyed.
 */
POOL_API int pool_worker_stats(const pool_t *pool, unsigned worker, pool_worker_stats_t *out);

/**
 * \brief Write the state of every live pool of the process to \p fd, to
 *        find out where a program hangs.
 *
 * One line per pool (sleeping workers, the wake in flight, the sleep and
 * outside-waiter epochs, threads blocked outside, outside calls inside the
 * pool and whether destroy began, each global-queue lane empty, short or
 * full), then one per worker: asleep, waiting (and for what: the word's
 * address and the value it waits for), or running; its
 * deque's size and its task count. Example:
 * \code
 * static void on_alarm(int sig) { (void)sig; pool_dump_state(2); _exit(1); }
 * \endcode
 * Async-signal-safe: only write(2), no lock, no allocation, so a signal
 * handler or a watchdog may call it; every figure is read without
 * synchronisation, so a pool that is changing may show a mix of moments.
 * Not during pool_destroy() of a pool it lists (destroy frees what it
 * reads). In a `-Ddebug_checks=true` build, SIGQUIT (Ctrl+Backslash) writes the
 * same to stderr before it ends the process, unless the program set its
 * own SIGQUIT disposition.
 * \param fd a file descriptor open for writing.
 * \return 0; the errno value of a failed write (the rest is skipped).
 */
POOL_API int pool_dump_state(int fd);

/** @} */

/** \defgroup profile Work/span profile
 *  Why does a program not scale? The profile measures the region's
 *  *work* (T1: the time of all its strands of code, as if run on one
 *  worker) and *span* (Tinf: the longest chain of strands that must run
 *  one after the other), so their ratio, the *parallelism*, bounds the
 *  speedup on any number of cores (docs/profiling.md):
 * \code
 * pool_profile_t pr;
 * pool_profile_begin(pool);
 * fib_run(pool, 30);                   // any fork/join, loops, groups
 * pool_profile_end(pool, &pr);
 * printf("parallelism %.1f\n", pr.parallelism);
 * \endcode
 *  `WSPOOL_PROFILE=1` profiles every pool from creation to destruction
 *  and writes the summary to stderr when the pool is destroyed (and, with
 *  `WSPOOL_TRACE`, into the trace, where runtime/tools/wspool-timeline
 *  shows it): a pool never destroyed, such as the default pool, writes
 *  none.
 *
 *  What is measured: a spawn forks the clock (child and continuation both
 *  start from the span at the spawn), a sync continues at the larger of the
 *  two; pool_join(), typed tasks and pool_take() are spawns and syncs. A
 *  loop's chunks are independent: its span is the longest chunk's time per
 *  item, added to the caller's. That is an estimate of the longest item
 *  which takes the items of a chunk as alike: an uneven loop's span is too
 *  short (one slow item among fast ones is averaged over its chunk), and
 *  as chunks shrink with more workers, the estimate can move with their
 *  number. A group child starts at its spawner's span. Submitted tasks and
 *  jobs are separate computations from 0, and so is each blocking call of a
 *  thread other than the one that called pool_profile_begin(). The region's
 *  span is the longest of all. Only fork/join orders strands: a job's
 *  predecessors, pool_group_wait(), pool_job_wait() and pool_wait_idle()
 *  are not followed (the waiter goes on at its own span). For a program
 *  ordered by them the span is a lower bound and the parallelism an upper
 *  one: five jobs in a chain, each after the last, read parallelism 5.
 *  Time spent waiting (a sync, a wait, a submission waiting for room),
 *  stealing or in the runtime's own code (a spawn's publication, a
 *  submission, a job's start) counts in neither. Work begun before the
 *  region (a frame spawned, or a task started, in an earlier region or
 *  while none was open) adds what it does while the region is open to the
 *  work, and its span to none; a group child spawned before the region
 *  and run in it still starts at its spawner's span.
 *
 *  Cost: off, nothing on the inline paths and one load on the slow ones.
 *  On, every spawn is published (as under a trace) and each spawn, sync and
 *  task reads the clock: tiny tasks run several times slower, 10 us tasks
 *  about 1 % (bench_profile prints both). A profiled pool_take() never
 *  returns POOL_TAKEN: it runs the task itself and returns 0, so that the
 *  task's time is a strand of its own.
 *  @{ */

/** The numbers of the P values pool_profile_t::speedup_min and speedup_max
 *  give bounds for: 2, 4, 8, 16 and 64 cores. */
#define POOL_PROFILE_CORES 5

/** A region's work/span summary. Times in seconds. */
typedef struct pool_profile {
  double work;                 /**< T1: the time of every strand of the region */
  double span;                 /**< Tinf: the longest chain of dependent strands
                                    (fork/join dependence: see above) */
  double parallelism;          /**< work / span: the most speedup any P can give
                                    (for fork/join; an upper bound otherwise) */
  double burdened_span;        /**< span plus steal_cost for each continuation on
                                    its path (a place a steal could cost) */
  double burdened_parallelism; /**< work / burdened_span */
  uint64_t tasks;              /**< tasks begun: spawned frames, group children,
                                    loop chunks, submitted tasks and jobs */
  double mean_task;            /**< work / tasks (0 without tasks) */
  uint64_t steals;             /**< successful steals in the region */
  double steal_cost;           /**< mean time of those steals; without any, the
                                    2 us the burden assumes (steal_assumed 1) */
  int steal_assumed;           /**< 1 when steal_cost is the assumed value */
  unsigned cores[POOL_PROFILE_CORES]; /**< 2, 4, 8, 16, 64 */
  double speedup_max[POOL_PROFILE_CORES]; /**< min(P, parallelism): T_P >= max(T1/P, Tinf) */
  double speedup_min[POOL_PROFILE_CORES]; /**< T1 / (T1/P + burdened span): a greedy
                                               scheduler's T_P <= T1/P + Tinf, burdened */
} pool_profile_t;

/**
 * \brief Start a profiled region of \p pool, whose root strand is the
 *        calling thread's code from here to pool_profile_end().
 *
 * Call it while the pool runs nothing of the region (tasks already running
 * are counted from their next spawn, sync or task on).
 * \param pool the pool, or NULL (\ref nullpool).
 * \return 0; EINVAL for no pool; EDEADLK from a worker of \p pool; EBUSY if
 *         \p pool is being profiled (a region, or `WSPOOL_PROFILE`) or the
 *         calling thread runs a region of another pool; ESHUTDOWN for a pool
 *         being destroyed; EOWNERDEAD for a pool of the parent process.
 */
POOL_API int pool_profile_begin(pool_t *pool);

/**
 * \brief End the region pool_profile_begin() started on this thread and
 *        write its summary to \p out.
 *
 * Call it once the region's work is done (waited for): tasks still
 * running count as far as they got.
 * \param pool the pool, or NULL (\ref nullpool).
 * \param out receives the summary.
 * \return 0; EINVAL for a NULL \p out or no pool; ENOENT if no region of
 *         \p pool was begun by this thread (none, another thread's,
 *         `WSPOOL_PROFILE`'s, or one that pool_destroy() ended: a region
 *         left open at destroy is dropped, and its thread may begin another);
 *         ESHUTDOWN for a pool being destroyed; EOWNERDEAD for a pool of
 *         the parent process (a region open at fork() is the parent's: the
 *         child may begin its own on its own pools).
 */
POOL_API int pool_profile_end(pool_t *pool, pool_profile_t *out);

/** @} */

/** \defgroup placement Placement
 *  @{ */

/** \brief OS index of the PU worker \p worker is bound to, -1 when unbound
 *  or out of range.
 *  \param pool the pool, or NULL (\ref nullpool).
 *  \param worker the worker's index. */
POOL_API int pool_worker_cpu(const pool_t *pool, unsigned worker);

/** @} */

/** \defgroup version Version
 *  @{ */
#define WSPOOL_VERSION_MAJOR 0 /**< incompatible API changes */
#define WSPOOL_VERSION_MINOR 3 /**< compatible additions */
#define WSPOOL_VERSION_PATCH 0 /**< fixes */
/** @} */

#ifdef __cplusplus
}
#endif

/* The inline fast paths of pool_spawn(), pool_sync() and pool_take(), and
 * the layouts they share with the library (ABI, not API). */
#include "wspool/inline.h"

/* Typed tasks: POOL_TASK() and friends. */
#include "wspool_typed.h"

#endif /* WSPOOL_H */
