/* SPDX-License-Identifier: MIT */
/**
 * \file wspool_typed.h
 * \brief Typed fork/join tasks: spawn a function with typed arguments, sync
 * it for its typed result (\ref typed). Included by wspool.h; not meant to
 * be included on its own.
 */
#ifndef WSPOOL_TYPED_H
#define WSPOOL_TYPED_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "wspool.h"

/** \addtogroup typed
 * Declare a task once from a function; the macro generates a frame type and
 * the functions to spawn and sync it, all `static inline`:
 * \code
 *   static long fib(int n);
 *   POOL_TASK(long, fib, int);          // fib_frame, fib_spawn, fib_sync, ...
 *
 *   static long fib(int n) {
 *     if (n < 2) return n;
 *     fib_frame f;                      // the child's frame, on our stack
 *     fib_spawn(&f, n - 1);             // fib(n - 1), possibly in parallel
 *     long y = fib(n - 2);
 *     return fib_sync(&f) + y;          // its result, by value
 *   }
 * \endcode
 * `POOL_TASK(RTYPE, NAME, T1, ..., Tk)` (k = 1..14) declares a task of a
 * function `RTYPE NAME(T1, ..., Tk)` that must be declared before the macro
 * (defined anywhere, static or not); `POOL_TASK_0(RTYPE, NAME)` one of no
 * arguments; `POOL_VOID_TASK(NAME, T1, ..., Tk)` and
 * `POOL_VOID_TASK_0(NAME)` tasks of functions returning void. End each with
 * a semicolon, at file scope (more than 14 arguments do not compile: pass a
 * struct).
 * For a function of the including file, `POOL_STATIC_TASK(RTYPE, NAME, T1,
 * ..., Tk)` (and `POOL_STATIC_TASK_0`, `POOL_STATIC_VOID_TASK`,
 * `POOL_STATIC_VOID_TASK_0`) also declares `static RTYPE NAME(T1, ...,
 * Tk)` itself, before the task, so a task is two pieces, the macro and the
 * definition, which follows it before any other use of NAME:
 * \code
 *   POOL_STATIC_TASK(long, fib, int);
 *   static long fib(int n) { ... }      // the body above
 * \endcode
 * The definition may say `static inline`. Then gcc at -O2 (as at -O3
 * without it) may inline the base-case test of a recursive task into its
 * callers, which pays when most calls are leaves that fail that test at
 * once: a knapsack's (docs/typed.md, on one worker: 1.32x Lace's time at
 * -O2 without, 1.03x with). It may also inline the recursion into itself,
 * which costs a task gcc splits without it (fib: 1.00x without, 1.14x).
 * Argument and result types must be complete object types that can be
 * assigned (no arrays: pass a pointer or a struct; in C++, trivially
 * copyable types, since they share a union in the frame; default member
 * initialisers are allowed, and not run for the frame).
 * In C++ a task's function must not let an exception leave it: run by a
 * thief, the exception meets the library's C code and std::terminate()
 * ends the program; taken back by NAME_sync, it leaves as from a plain
 * call. Catch it inside, or use wspool::join() or wspool::task_group
 * (wspool.hpp), which carry exceptions to the waiter.
 * A type written with parentheses or brackets in it (a pointer to a
 * function) needs a typedef first: the macro takes each type as one
 * token sequence and places a name after it.
 * The macro generates, for a task NAME:
 *  - `NAME_frame`: the frame, a `pool_task_t` (member `task`) followed by
 *    the arguments, whose storage the result reuses. The caller owns it
 *    from spawn until sync returns, usually on its stack.
 *  - `int NAME_spawn(NAME_frame *f, T1 a1, ...)`: stores the arguments and
 *    spawns `NAME(a1, ...)` as pool_spawn(NULL, ...) would (from a worker,
 *    into its own pool; from another thread, into the default pool).
 *    `NAME_spawn_in(pool_t *pool, NAME_frame *f, T1 a1, ...)` names the
 *    pool. Returns pool_spawn()'s value (0 from a worker).
 *  - `RTYPE NAME_sync(NAME_frame *f)`: the task's result. If no thief
 *    started the task, it is taken back (pool_take()) and NAME is called
 *    right here, a direct call the compiler can inline, with arguments and
 *    result in registers; otherwise it waits for the task exactly as
 *    pool_sync() does (helping, within the same stack bound; from an outside
 *    thread, blocking) and reads the result the task stored in the frame.
 *    Every successful spawn is matched by one sync (or sync_rc) of the same
 *    frame on the same thread, in any order. On misuse (a frame not
 *    spawned, or synced twice) it returns an unspecified value.
 *  - `int NAME_sync_rc(NAME_frame *f, RTYPE *out)`: the same, returning 0
 *    with the result in `*out`, or EINVAL on misuse (`*out` untouched). For
 *    void tasks `int NAME_sync_rc(NAME_frame *f)`.
 *  - `RTYPE NAME_run(pool_t *pool, T1 a1, ...)`: runs `NAME(a1, ...)` on
 *    \p pool and returns its result, in one call: what NAME_spawn_in() and
 *    NAME_sync() of a frame of its own do, for starting a computation from
 *    outside the pool. From a thread that is not a worker of \p pool (the
 *    main thread, any other thread) the task goes to the pool's global
 *    queue and the caller blocks until a worker has run it (as NAME_sync()
 *    does on such a thread); what the task spawns stays in that pool. A
 *    worker of another pool is such a thread too: it blocks likewise, and
 *    its own pool runs without it meanwhile. From a worker of \p pool (or
 *    with \p pool NULL, from any worker) it is a spawn and its sync: NAME
 *    runs right there, as after NAME_sync(), unless a thief took it
 *    first. \p pool NULL from another thread is the default pool
 *    (\ref nullpool). When the pool
 *    refuses the task (the errors of NAME_run_rc), NAME does not run and
 *    NAME_run returns RTYPE's zero (the value of a static RTYPE object: 0,
 *    NULL, a struct of zeros); NAME_run_rc tells the two apart. For void
 *    tasks `void NAME_run(pool_t *pool, T1 a1, ...)`.
 *  - `int NAME_run_rc(pool_t *pool, RTYPE *out, T1 a1, ...)`: the same,
 *    returning 0 with the result in `*out`, or the error of the spawn
 *    (NAME_spawn_in(), pool_spawn()) with `*out` untouched and NAME not
 *    run: EINVAL when there is no pool; with \p pool NULL outside every
 *    pool, the default pool's creation error (EAGAIN, ENOMEM); ESHUTDOWN
 *    when pool_destroy() of \p pool began (the handle stays safe to pass
 *    until a later pool_create(), \ref faults); EOWNERDEAD for a pool of the
 *    parent process in a child of fork(). Neither NAME_run nor
 *    NAME_run_rc aborts or exits. For void tasks `int NAME_run_rc(pool_t
 *    *pool, T1 a1, ...)`.
 *  - `int NAME_push(pool_t *pool, T1 a1, ...)`: NAME_spawn_in() into a
 *    frame on the calling thread's frame stack (pool_frame_push()), for a
 *    loop that spawns as many children as it finds, with no array of
 *    frames on its C stack. Returns 0; the spawn's error or ENOMEM (the
 *    frame stack could not grow), with nothing spawned and nothing left
 *    on the stack. Each successful push is matched by one pop on the same
 *    thread, newest first, before the task that pushed returns.
 *  - `RTYPE NAME_pop(void)`: the result of the thread's newest push, synced
 *    as NAME_sync() does, its frame then given back. When the thread has
 *    no pushed frame, or its newest is another task's, or a pop is syncing
 *    it (this pop is nested in that sync: a task that pops what it did not
 *    push), nothing is popped and RTYPE's zero is returned. A push in one
 *    file and its pop in another work for a function with external
 *    linkage (POOL_TASK in a shared header). `int NAME_pop_rc(RTYPE *out)`: the
 *    same, 0 with the result in `*out`, or EINVAL in those two cases
 *    (`*out` untouched). For void tasks `void NAME_pop(void)` and
 *    `int NAME_pop_rc(void)`.
 *  - `void NAME__run(void *frame)`: what the runtime calls when it runs the
 *    frame itself (stolen, or run out of order). Private.
 *
 * Argument types are checked as in any call to a prototyped function,
 * because NAME_spawn is one: a struct for a scalar (or the reverse), or too
 * many or too few arguments does not compile. A pointer of another type (a
 * frame of another task included) is an ISO C constraint violation that C++
 * and GCC 14 reject; older GCC and Clang warn (-Wincompatible-pointer-types) and
 * reject it with -Werror or -pedantic-errors. Arithmetic arguments convert
 * implicitly, as in any call: -Wconversion reports the narrowing ones.
 * The identifiers NAME_frame, NAME_spawn, NAME_spawn_in, NAME_sync,
 * NAME_sync_rc, NAME_run, NAME_run_rc, NAME_push, NAME_pop, NAME_pop_rc
 * and NAME__run are taken. docs/typed.md shows what the macros expand to.
 *
 * Children counted as they are found, with NAME_push and NAME_pop
 * (n-queens, one task per placement; the board in bit masks):
 * \code
 *   static long queens(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2);
 *   POOL_TASK(long, queens, int, int, uint32_t, uint32_t, uint32_t);
 *
 *   static long queens(int n, int row, uint32_t cols, uint32_t d1, uint32_t d2) {
 *     int k = 0;
 *     long total = 0;
 *     if (row == n) return 1;
 *     for (int c = 0; c < n; c++) {
 *       uint32_t col = 1u << c, up = 1u << (row + c), down = 1u << (row - c + n - 1);
 *       if ((cols & col) || (d1 & up) || (d2 & down)) continue;
 *       if (queens_push(NULL, n, row + 1, cols | col, d1 | up, d2 | down) != 0)
 *         total += queens(n, row + 1, cols | col, d1 | up, d2 | down);  // ENOMEM
 *       else
 *         k++;
 *     }
 *     while (k-- > 0) total += queens_pop();   // newest first
 *     return total;
 *   }
 * \endcode
 *
 * A computation started from main() with NAME_run:
 * \code
 *   int main(void) {
 *     pool_t *pool;
 *     long r;
 *     if (pool_create(&pool, NULL) != 0) return 1;
 *     r = fib_run(pool, 30);                  // 832040, computed by the pool
 *     if (fib_run_rc(pool, &r, 31) != 0)      // 0, r = 1346269
 *       return 1;                             // (ESHUTDOWN once destroy began)
 *     pool_destroy(pool);
 *     printf("%ld\n", fib_run(NULL, 32));     // on the default pool
 *     return 0;
 *   }
 * \endcode
 *  @{ */

/** Declare a task of `RTYPE NAME(T1, ..., Tk)`, k = 1..14 (see \ref typed). */
#define POOL_TASK(RTYPE, NAME, ...)                                                             \
  POOL__CAT(POOL_TASK_, POOL__NARG(__VA_ARGS__))(RTYPE, NAME, __VA_ARGS__)
/** Declare a task of `void NAME(T1, ..., Tk)`, k = 1..14. */
#define POOL_VOID_TASK(NAME, ...)                                                               \
  POOL__CAT(POOL_VOID_TASK_, POOL__NARG(__VA_ARGS__))(NAME, __VA_ARGS__)

/** Declare `static RTYPE NAME(T1, ..., Tk)`, a function of this file
 * defined after the macro, and its task as POOL_TASK() does (see \ref
 * typed). */
#define POOL_STATIC_TASK(RTYPE, NAME, ...)                                                      \
  static RTYPE NAME(__VA_ARGS__);                                                               \
  POOL_TASK(RTYPE, NAME, __VA_ARGS__)
/** POOL_STATIC_TASK() of `RTYPE NAME(void)`. */
#define POOL_STATIC_TASK_0(RTYPE, NAME)                                                         \
  static RTYPE NAME(void);                                                                      \
  POOL_TASK_0(RTYPE, NAME)
/** POOL_STATIC_TASK() of `void NAME(T1, ..., Tk)`. */
#define POOL_STATIC_VOID_TASK(NAME, ...)                                                        \
  static void NAME(__VA_ARGS__);                                                                \
  POOL_VOID_TASK(NAME, __VA_ARGS__)
/** POOL_STATIC_TASK() of `void NAME(void)`. */
#define POOL_STATIC_VOID_TASK_0(NAME)                                                           \
  static void NAME(void);                                                                       \
  POOL_VOID_TASK_0(NAME)

/* The per-arity forms POOL_TASK() and POOL_VOID_TASK() choose from; k = 0
 * has only these. The lists are: the argument fields, the parameters of
 * spawn, the stores of spawn, and the arguments of the call. */
/** Declare a task of `RTYPE NAME(void)`. */
#define POOL_TASK_0(RTYPE, NAME) POOL__TASK(RTYPE, NAME, (char wsp_none;), (), (), ())
/** POOL_TASK() of one argument. */
#define POOL_TASK_1(RTYPE, NAME, T1) POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY1(T1)))
/** POOL_TASK() of two arguments. */
#define POOL_TASK_2(RTYPE, NAME, T1, T2)                                                        \
  POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY2(T1, T2)))
/** POOL_TASK() of three arguments. */
#define POOL_TASK_3(RTYPE, NAME, T1, T2, T3)                                                    \
  POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY3(T1, T2, T3)))
/** POOL_TASK() of four arguments. */
#define POOL_TASK_4(RTYPE, NAME, T1, T2, T3, T4)                                                \
  POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY4(T1, T2, T3, T4)))
/** POOL_TASK() of five arguments. */
#define POOL_TASK_5(RTYPE, NAME, T1, T2, T3, T4, T5)                                            \
  POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY5(T1, T2, T3, T4, T5)))
/** POOL_TASK() of six arguments. */
#define POOL_TASK_6(RTYPE, NAME, T1, T2, T3, T4, T5, T6)                                        \
  POOL__APPLY(POOL__TASK, (RTYPE, NAME, POOL__ARITY6(T1, T2, T3, T4, T5, T6)))
/** POOL_TASK() of 7 arguments. */
#define POOL_TASK_7(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7)                                    \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY7(T1, T2, T3, T4, T5, T6, T7)))
/** POOL_TASK() of 8 arguments. */
#define POOL_TASK_8(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8)                                \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY8(T1, T2, T3, T4, T5, T6, T7, T8)))
/** POOL_TASK() of 9 arguments. */
#define POOL_TASK_9(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9)                            \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY9(T1, T2, T3, T4, T5, T6, T7, T8, T9)))
/** POOL_TASK() of 10 arguments. */
#define POOL_TASK_10(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10)                      \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY10(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10)))
/** POOL_TASK() of 11 arguments. */
#define POOL_TASK_11(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11)                 \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY11(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11)))
/** POOL_TASK() of 12 arguments. */
#define POOL_TASK_12(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12)            \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY12(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12)))
/** POOL_TASK() of 13 arguments. */
#define POOL_TASK_13(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13)       \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY13(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13)))
/** POOL_TASK() of 14 arguments. */
#define POOL_TASK_14(RTYPE, NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14)  \
  POOL__APPLY(POOL__TASK,                                                                       \
              (RTYPE, NAME,                                                                     \
               POOL__ARITY14(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14)))

/** Declare a task of `void NAME(void)`. */
#define POOL_VOID_TASK_0(NAME) POOL__VOID_TASK(NAME, (char wsp_none;), (), (), ())
/** POOL_VOID_TASK() of one argument. */
#define POOL_VOID_TASK_1(NAME, T1) POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY1(T1)))
/** POOL_VOID_TASK() of two arguments. */
#define POOL_VOID_TASK_2(NAME, T1, T2) POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY2(T1, T2)))
/** POOL_VOID_TASK() of three arguments. */
#define POOL_VOID_TASK_3(NAME, T1, T2, T3)                                                      \
  POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY3(T1, T2, T3)))
/** POOL_VOID_TASK() of four arguments. */
#define POOL_VOID_TASK_4(NAME, T1, T2, T3, T4)                                                  \
  POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY4(T1, T2, T3, T4)))
/** POOL_VOID_TASK() of five arguments. */
#define POOL_VOID_TASK_5(NAME, T1, T2, T3, T4, T5)                                              \
  POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY5(T1, T2, T3, T4, T5)))
/** POOL_VOID_TASK() of six arguments. */
#define POOL_VOID_TASK_6(NAME, T1, T2, T3, T4, T5, T6)                                          \
  POOL__APPLY(POOL__VOID_TASK, (NAME, POOL__ARITY6(T1, T2, T3, T4, T5, T6)))
/** POOL_VOID_TASK() of 7 arguments. */
#define POOL_VOID_TASK_7(NAME, T1, T2, T3, T4, T5, T6, T7)                                      \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY7(T1, T2, T3, T4, T5, T6, T7)))
/** POOL_VOID_TASK() of 8 arguments. */
#define POOL_VOID_TASK_8(NAME, T1, T2, T3, T4, T5, T6, T7, T8)                                  \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY8(T1, T2, T3, T4, T5, T6, T7, T8)))
/** POOL_VOID_TASK() of 9 arguments. */
#define POOL_VOID_TASK_9(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9)                              \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY9(T1, T2, T3, T4, T5, T6, T7, T8, T9)))
/** POOL_VOID_TASK() of 10 arguments. */
#define POOL_VOID_TASK_10(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10)                        \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY10(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10)))
/** POOL_VOID_TASK() of 11 arguments. */
#define POOL_VOID_TASK_11(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11)                   \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY11(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11)))
/** POOL_VOID_TASK() of 12 arguments. */
#define POOL_VOID_TASK_12(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12)              \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY12(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12)))
/** POOL_VOID_TASK() of 13 arguments. */
#define POOL_VOID_TASK_13(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13)         \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY13(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13)))
/** POOL_VOID_TASK() of 14 arguments. */
#define POOL_VOID_TASK_14(NAME, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14)    \
  POOL__APPLY(POOL__VOID_TASK,                                                                  \
              (NAME, POOL__ARITY14(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14)))
/** @} */

/** \cond WSPOOL_TYPED_IMPL */
#define POOL__CAT(a, b) POOL__CAT_(a, b)
#define POOL__CAT_(a, b) a##b
#define POOL__UNPAREN(...) __VA_ARGS__
/* The generated functions a program does not call draw no warning (clang
 * warns about unused static inline functions written in the main file,
 * which is where the macro expands). */
#if defined(__GNUC__)
#define POOL__MAYBE_UNUSED __attribute__((__unused__))
#else
#define POOL__MAYBE_UNUSED
#endif
#define POOL__TASKFN static inline POOL__MAYBE_UNUSED
/* A frame type's alignment, for pool_frame_push() (1, no check, where the
 * language has no way to ask). */
#if defined(__cplusplus)
#define POOL__ALIGNOF(T) alignof(T)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define POOL__ALIGNOF(T) _Alignof(T)
#elif defined(__GNUC__)
#define POOL__ALIGNOF(T) __alignof__(T)
#else
#define POOL__ALIGNOF(T) 1
#endif
/* The frame behind NAME__run's argument (C++ needs the cast, and warns
 * about old-style ones with -Wold-style-cast). */
#ifdef __cplusplus
#define POOL__FRAME_OF(T, p) static_cast<T *>(p)
#else
#define POOL__FRAME_OF(T, p) ((T *)(p))
#endif
/* NAME_push's frames on the thread's frame stack: the frame, at its
 * alignment past the 16 bytes pool_frame_push() gives, with a tag in the
 * last word of the 16 bytes before the memory it returned (the frame's
 * slot, whose first word only is the library's: wspool/inline.h): the
 * address of the task's function (the same in every file for a function
 * with external linkage, and untouched by the profiler, which may replace
 * a spawned frame's function: pool_profile_begin()), 0 once a pop has
 * begun to sync the frame or when the push failed. A pop takes the newest
 * frame only if the tag is its task's, so a pop of another task, or one
 * nested in the sync of the frame (a task that pops what it did not
 * push), finds no frame of its own. */
#define POOL__PUSH_ALIGN(T) (POOL__ALIGNOF(T) > 16 ? POOL__ALIGNOF(T) : 16)
#define POOL__PUSH_BYTES(T) (sizeof(T) + POOL__PUSH_ALIGN(T) - 16)
#ifdef __cplusplus
#define POOL__TAG(NAME) reinterpret_cast<uintptr_t>(&NAME)
#else
#define POOL__TAG(NAME) ((uintptr_t)&NAME)
#endif
/* The frame of a tagged push at `raw` (pool_frame_push's memory, aligned
 * to 16: the frame itself when that is enough, with no computation). */
#define POOL__PUSHED_FRAME(T, raw)                                                              \
  POOL__FRAME_OF(T, POOL__ALIGNOF(T) > 16 ? pool__pushed_frame(raw, POOL__ALIGNOF(T)) : (raw))
static inline POOL__MAYBE_UNUSED void *pool__pushed_frame(void *raw, size_t align) {
#ifdef __cplusplus
  uintptr_t a = reinterpret_cast<uintptr_t>(raw) + (align - 1);
  return reinterpret_cast<void *>(a & ~static_cast<uintptr_t>(align - 1));
#else
  uintptr_t a = (uintptr_t)raw + (align - 1);
  return (void *)(a & ~(uintptr_t)(align - 1));
#endif
}
/* The tag of the frame at `raw` (a byte copy: any frame's slot), and its
 * update. */
static inline POOL__MAYBE_UNUSED uintptr_t pool__pushed_tag(const void *raw) {
  uintptr_t t;
#ifdef __cplusplus
  memcpy(&t, static_cast<const char *>(raw) - sizeof t, sizeof t);
#else
  memcpy(&t, (const char *)raw - sizeof t, sizeof t);
#endif
  return t;
}
static inline POOL__MAYBE_UNUSED void pool__pushed_set(void *raw, uintptr_t tag) {
#ifdef __cplusplus
  memcpy(static_cast<char *>(raw) - sizeof tag, &tag, sizeof tag);
#else
  memcpy((char *)raw - sizeof tag, &tag, sizeof tag);
#endif
}
/* In C++, a union whose members have default member initialisers needs a
 * constructor of its own (they are not run: the frame's fields are
 * assigned before use). */
#ifdef __cplusplus
#define POOL__UNION_CTOR(U)                                                                     \
  U() {}
#else
#define POOL__UNION_CTOR(U)
#endif
/* m applied to a parenthesised list whose macros expand first. */
#define POOL__APPLY(m, args) m args
/* How many arguments, 1..14. */
#define POOL__NARG(...)                                                                         \
  POOL__NARG_(__VA_ARGS__, MANY, MANY, MANY, MANY, MANY, MANY, MANY, MANY, 14, 13, 12, 11,      \
              10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define POOL__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, \
                    _18, _19, _20, _21, _22, N, ...)                                            \
  N
/* 15 to 22 arguments: an error in every compiler (a negative array size;
 * an undefined POOL_TASK_<type> would be an implicit-int declaration, a
 * warning only in clang's C modes). */
#define POOL_TASK_MANY(RTYPE, NAME, ...) typedef char pool__task_takes_at_most_14_arguments[-1]
#define POOL_VOID_TASK_MANY(NAME, ...) typedef char pool__task_takes_at_most_14_arguments[-1]

/* For k arguments, four parenthesised lists:
 *   (fields)  T1 a1; T2 a2;                 members of the frame's args
 *   (params)  , T1 pool__a1, T2 pool__a2    after the frame parameter
 *   (stores)  pool__f->u.a.a1 = pool__a1; ...
 *   (call)    pool__f->u.a.a1, pool__f->u.a.a2
 * Locals carry the reserved pool__ prefix so that no task name or
 * argument can capture them. */
#define POOL__F(i) pool__f->u.a.a##i
#define POOL__S(i) POOL__F(i) = pool__a##i;
#define POOL__ARITY1(T1) (T1 a1;), (, T1 pool__a1), (POOL__S(1)), (POOL__F(1))
#define POOL__ARITY2(T1, T2)                                                                    \
  (T1 a1; T2 a2;), (, T1 pool__a1, T2 pool__a2), (POOL__S(1) POOL__S(2)),                       \
      (POOL__F(1), POOL__F(2))
#define POOL__ARITY3(T1, T2, T3)                                                                \
  (T1 a1; T2 a2; T3 a3;), (, T1 pool__a1, T2 pool__a2, T3 pool__a3),                            \
      (POOL__S(1) POOL__S(2) POOL__S(3)), (POOL__F(1), POOL__F(2), POOL__F(3))
#define POOL__ARITY4(T1, T2, T3, T4)                                                            \
  (T1 a1; T2 a2; T3 a3; T4 a4;), (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4),        \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4)),                                            \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4))
#define POOL__ARITY5(T1, T2, T3, T4, T5)                                                        \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5;),                                                         \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5),                      \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5)),                                 \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5))
#define POOL__ARITY6(T1, T2, T3, T4, T5, T6)                                                    \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6;),                                                  \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6),         \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6)),                      \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6))
#define POOL__ARITY7(T1, T2, T3, T4, T5, T6, T7)                                                \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7;),                                           \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7),                                                                             \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)),           \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7))
#define POOL__ARITY8(T1, T2, T3, T4, T5, T6, T7, T8)                                            \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8;),                                    \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8),                                                                \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8)),                                                                              \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8))
#define POOL__ARITY9(T1, T2, T3, T4, T5, T6, T7, T8, T9)                                        \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9;),                             \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9),                                                   \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9)),                                                                   \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9))
#define POOL__ARITY10(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10)                                  \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9; T10 a10;),                    \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9, T10 pool__a10),                                    \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9) POOL__S(10)),                                                       \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9), POOL__F(10))
#define POOL__ARITY11(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11)                             \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9; T10 a10; T11 a11;),           \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9, T10 pool__a10, T11 pool__a11),                     \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9) POOL__S(10) POOL__S(11)),                                           \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9), POOL__F(10), POOL__F(11))
#define POOL__ARITY12(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12)                        \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9; T10 a10; T11 a11;             \
      T12 a12;),                                                                                \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9, T10 pool__a10, T11 pool__a11, T12 pool__a12),      \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9) POOL__S(10) POOL__S(11) POOL__S(12)),                               \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9), POOL__F(10), POOL__F(11), POOL__F(12))
#define POOL__ARITY13(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13)                   \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9; T10 a10; T11 a11;             \
      T12 a12; T13 a13;),                                                                       \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9, T10 pool__a10, T11 pool__a11, T12 pool__a12,       \
      T13 pool__a13),                                                                           \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9) POOL__S(10) POOL__S(11) POOL__S(12) POOL__S(13)),                   \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9), POOL__F(10), POOL__F(11), POOL__F(12), POOL__F(13))
#define POOL__ARITY14(T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14)              \
  (T1 a1; T2 a2; T3 a3; T4 a4; T5 a5; T6 a6; T7 a7; T8 a8; T9 a9; T10 a10; T11 a11;             \
      T12 a12; T13 a13; T14 a14;),                                                              \
      (, T1 pool__a1, T2 pool__a2, T3 pool__a3, T4 pool__a4, T5 pool__a5, T6 pool__a6,          \
      T7 pool__a7, T8 pool__a8, T9 pool__a9, T10 pool__a10, T11 pool__a11, T12 pool__a12,       \
      T13 pool__a13, T14 pool__a14),                                                            \
      (POOL__S(1) POOL__S(2) POOL__S(3) POOL__S(4) POOL__S(5) POOL__S(6) POOL__S(7)             \
      POOL__S(8) POOL__S(9) POOL__S(10) POOL__S(11) POOL__S(12) POOL__S(13) POOL__S(14)),       \
      (POOL__F(1), POOL__F(2), POOL__F(3), POOL__F(4), POOL__F(5), POOL__F(6), POOL__F(7),      \
      POOL__F(8), POOL__F(9), POOL__F(10), POOL__F(11), POOL__F(12), POOL__F(13),               \
      POOL__F(14))

/* What every task has: the frame type, spawn and spawn_in. PAYLOAD is the
 * frame's union (the arguments, and for a value task the result). */
#define POOL__TASK_COMMON(NAME, PAYLOAD, PARAMS, STORES)                                        \
  typedef struct NAME##_frame {                                                                 \
    pool_task_t task;                                                                           \
    union NAME##__u {                                                                           \
      POOL__UNPAREN PAYLOAD                                                                     \
      POOL__UNION_CTOR(NAME##__u)                                                               \
    } u;                                                                                        \
  } NAME##_frame;                                                                               \
  POOL__TASKFN void NAME##__run(void *pool__p);                                                 \
  POOL__TASKFN int NAME##_spawn_in(pool_t *pool__pool,                                          \
                                   NAME##_frame *pool__f POOL__UNPAREN PARAMS) {                \
    POOL__UNPAREN STORES                                                                        \
    return pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f);                        \
  }                                                                                             \
  POOL__TASKFN int NAME##_spawn(NAME##_frame *pool__f POOL__UNPAREN PARAMS) {                   \
    POOL__UNPAREN STORES                                                                        \
    return pool_spawn(NULL, &pool__f->task, NAME##__run, pool__f);                              \
  }                                                                                             \
  POOL__TASKFN int NAME##_push(pool_t *pool__pool POOL__UNPAREN PARAMS) {                       \
    void *pool__p;                                                                              \
    NAME##_frame *pool__f;                                                                      \
    int pool__rc = pool_frame_push(POOL__PUSH_BYTES(NAME##_frame), 16, &pool__p);               \
    if (pool__rc != 0) return pool__rc;                                                         \
    pool__pushed_set(pool__p, POOL__TAG(NAME));                                                 \
    pool__f = POOL__PUSHED_FRAME(NAME##_frame, pool__p);                                        \
    POOL__UNPAREN STORES                                                                        \
    pool__rc = pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f);                    \
    if (pool__rc != 0) {                                                                        \
      pool__pushed_set(pool__p, 0);                                                             \
      (void)pool_frame_pop(pool__p);                                                            \
    }                                                                                           \
    return pool__rc;                                                                            \
  }                                                                                             \
  /* The frame of the thread's newest push (at *raw) if it is this task's                       \
   * and no pop syncs it yet, marked as being synced; else NULL. */                             \
  POOL__TASKFN NAME##_frame *NAME##__pop_claim(void **pool__raw) {                              \
    void *pool__p = pool_frame_top();                                                           \
    if (!pool__p || pool__pushed_tag(pool__p) != POOL__TAG(NAME)) return NULL;                  \
    pool__pushed_set(pool__p, 0);                                                               \
    *pool__raw = pool__p;                                                                       \
    return POOL__PUSHED_FRAME(NAME##_frame, pool__p);                                           \
  }

#define POOL__TASK(RTYPE, NAME, FIELDS, PARAMS, STORES, CALL)                                   \
  POOL__TASK_COMMON(NAME, (struct { POOL__UNPAREN FIELDS } a; RTYPE r;), PARAMS, STORES)        \
  POOL__TASKFN void NAME##__run(void *pool__p) {                                                \
    NAME##_frame *pool__f = POOL__FRAME_OF(NAME##_frame, pool__p);                              \
    pool__f->u.r = NAME(POOL__UNPAREN CALL);                                                    \
  }                                                                                             \
  POOL__TASKFN RTYPE NAME##_sync(NAME##_frame *pool__f) {                                       \
    if (pool_take(&pool__f->task) == POOL_TAKEN) return NAME(POOL__UNPAREN CALL);               \
    return pool__f->u.r;                                                                        \
  }                                                                                             \
  POOL__TASKFN int NAME##_sync_rc(NAME##_frame *pool__f, RTYPE *pool__out) {                    \
    int pool__rc = pool_take(&pool__f->task);                                                   \
    if (pool__rc == POOL_TAKEN) {                                                               \
      *pool__out = NAME(POOL__UNPAREN CALL);                                                    \
      return 0;                                                                                 \
    }                                                                                           \
    if (pool__rc == 0) *pool__out = pool__f->u.r;                                               \
    return pool__rc;                                                                            \
  }                                                                                             \
  POOL__TASKFN int NAME##_run_rc(pool_t *pool__pool,                                            \
                                 RTYPE *pool__out POOL__UNPAREN PARAMS) {                       \
    NAME##_frame pool__fr;                                                                      \
    NAME##_frame *pool__f = &pool__fr;                                                          \
    int pool__rc;                                                                               \
    POOL__UNPAREN STORES                                                                        \
    pool__rc = pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f);                    \
    if (pool__rc != 0) return pool__rc;                                                         \
    return NAME##_sync_rc(pool__f, pool__out);                                                  \
  }                                                                                             \
  POOL__TASKFN RTYPE NAME##_run(pool_t *pool__pool POOL__UNPAREN PARAMS) {                      \
    static RTYPE pool__zero; /* never written: RTYPE's zero value */                            \
    NAME##_frame pool__fr;                                                                      \
    NAME##_frame *pool__f = &pool__fr;                                                          \
    POOL__UNPAREN STORES                                                                        \
    if (pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f) != 0) return pool__zero;   \
    return NAME##_sync(pool__f);                                                                \
  }                                                                                             \
  POOL__TASKFN RTYPE NAME##_pop(void) {                                                         \
    static RTYPE pool__zero; /* never written: RTYPE's zero value */                            \
    RTYPE pool__r;                                                                              \
    void *pool__p;                                                                              \
    NAME##_frame *pool__f = NAME##__pop_claim(&pool__p);                                        \
    if (!pool__f) return pool__zero;                                                            \
    pool__r = NAME##_sync(pool__f);                                                             \
    (void)pool_frame_pop(pool__p);                                                              \
    return pool__r;                                                                             \
  }                                                                                             \
  POOL__TASKFN int NAME##_pop_rc(RTYPE *pool__out) {                                            \
    void *pool__p;                                                                              \
    NAME##_frame *pool__f = NAME##__pop_claim(&pool__p);                                        \
    int pool__rc;                                                                               \
    if (!pool__f) return EINVAL;                                                                \
    pool__rc = NAME##_sync_rc(pool__f, pool__out);                                              \
    (void)pool_frame_pop(pool__p);                                                              \
    return pool__rc;                                                                            \
  }                                                                                             \
  struct NAME##_frame

#define POOL__VOID_TASK(NAME, FIELDS, PARAMS, STORES, CALL)                                     \
  POOL__TASK_COMMON(NAME, (struct { POOL__UNPAREN FIELDS } a;), PARAMS, STORES)                 \
  POOL__TASKFN void NAME##__run(void *pool__p) {                                                \
    NAME##_frame *pool__f = POOL__FRAME_OF(NAME##_frame, pool__p);                              \
    (void)pool__f; /* unused when NAME takes no arguments */                                    \
    NAME(POOL__UNPAREN CALL);                                                                   \
  }                                                                                             \
  POOL__TASKFN void NAME##_sync(NAME##_frame *pool__f) {                                        \
    if (pool_take(&pool__f->task) == POOL_TAKEN) NAME(POOL__UNPAREN CALL);                      \
  }                                                                                             \
  POOL__TASKFN int NAME##_sync_rc(NAME##_frame *pool__f) {                                      \
    int pool__rc = pool_take(&pool__f->task);                                                   \
    if (pool__rc != POOL_TAKEN) return pool__rc;                                                \
    NAME(POOL__UNPAREN CALL);                                                                   \
    return 0;                                                                                   \
  }                                                                                             \
  POOL__TASKFN int NAME##_run_rc(pool_t *pool__pool POOL__UNPAREN PARAMS) {                     \
    NAME##_frame pool__fr;                                                                      \
    NAME##_frame *pool__f = &pool__fr;                                                          \
    int pool__rc;                                                                               \
    POOL__UNPAREN STORES                                                                        \
    pool__rc = pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f);                    \
    if (pool__rc != 0) return pool__rc;                                                         \
    return NAME##_sync_rc(pool__f);                                                             \
  }                                                                                             \
  POOL__TASKFN void NAME##_run(pool_t *pool__pool POOL__UNPAREN PARAMS) {                       \
    NAME##_frame pool__fr;                                                                      \
    NAME##_frame *pool__f = &pool__fr;                                                          \
    POOL__UNPAREN STORES                                                                        \
    if (pool_spawn(pool__pool, &pool__f->task, NAME##__run, pool__f) == 0) NAME##_sync(pool__f); \
  }                                                                                             \
  POOL__TASKFN int NAME##_pop_rc(void) {                                                        \
    void *pool__p;                                                                              \
    NAME##_frame *pool__f = NAME##__pop_claim(&pool__p);                                        \
    int pool__rc;                                                                               \
    if (!pool__f) return EINVAL;                                                                \
    pool__rc = NAME##_sync_rc(pool__f);                                                         \
    (void)pool_frame_pop(pool__p);                                                              \
    return pool__rc;                                                                            \
  }                                                                                             \
  POOL__TASKFN void NAME##_pop(void) { (void)NAME##_pop_rc(); }                                 \
  struct NAME##_frame
/** \endcond */

#endif /* WSPOOL_TYPED_H */
