/* SPDX-License-Identifier: MIT */
/*
 * wspool/inline.h: the inline fast paths of pool_spawn(), pool_sync() and
 * pool_take(), and the data they share with the library.
 *
 * ABI, not API. wspool.h includes this file; a program includes only
 * <wspool.h> and uses only what wspool.h documents. Everything here is
 * named `pool__*` or `POOL__*` and may change with the library's soname.
 *
 * Why inline. The common case of a spawn from a worker is a few stores into
 * the frame and into the worker's private frame stack; the matching sync or
 * take finds the frame on top of that stack. Compiled into the caller, that
 * is cheaper than a call into the library (docs/performance.md), so the
 * header carries it. Anything else (publication to thieves, outside
 * threads, stolen frames, misuse) calls the library's own pool_spawn,
 * pool_sync and pool_take, which also handle the common case when these
 * are not inlined: without optimisation, without GNU C, off ELF, inside the
 * library (WSPOOL_BUILDING), or with POOL_NO_INLINE defined.
 *
 * struct pool__frame (wspool.h) is a pool_task_t as the inline paths see
 * it: its first member, reached by member access, never through a cast
 * (callers may compile with strict aliasing). A private frame has only fn and arg set: nobody but its owner can
 * reach it, and the library fills in the rest (exec, owner, pool, thief,
 * state) if it ever publishes it or meets it out of order in a sync. Taking
 * it back off the stack writes nothing to it: the library tells a second
 * sync or take from a published frame by the state it sets only on
 * published frames.
 *
 * struct pool__tls is the thread-local block `pool__tls`. On the pool's
 * worker threads:
 *  top    the worker's next free private slot: top[-1] is its newest
 *         private frame, or a marker that is never a frame;
 *  pool   the worker's pool;
 *  tasks  frames this thread's pool_sync() ran on the inline path since
 *         the runtime last added them to the worker's `tasks` statistic
 *         (it does after each task it schedules). A plain counter in the
 *         thread's own block;
 *  fs_top, fs_end, fs_last  the thread's frame stack (pool_frame_push,
 *         on every thread): the next free word of its newest chunk, the
 *         chunk's end, and its newest frame (NULL: none). A frame follows
 *         a 16-byte slot whose first word is the frame below it in the
 *         chunk, NULL for the chunk's first; popping that one, or pushing
 *         past fs_end, calls the library, which moves between chunks.
 *         All NULL on a thread that never pushed, so the inline push calls
 *         the library there;
 *  limit  a spawn stays private while top < limit. The owner opens it
 *         (sets the end of the stack) when its public deque holds work;
 *         the owner or a thief closes it (0) when that deque is empty, so
 *         the next spawn goes to the library and publishes. On a pair of
 *         cache lines of its own: thieves read and write it.
 *  wsp_pad, wsp_pad2  padding that keeps `limit` apart from the rest.
 * On every other thread pool is NULL, limit 0 and top[-1] a marker, so
 * both fast paths fall through to the library without a NULL test. All of
 * it is in the thread's own block, not in the worker, because a
 * recursion's spawns and syncs read and write `top` one after another
 * (reached through a pointer, each of those steps would wait for a
 * store-to-load forwarding), and so that a spawn tests `limit` with one
 * load at a known offset from the same TLS address, not two dependent
 * ones. The relaxed accesses are GNU __atomic builtins because this header
 * cannot include the runtime's atomics header.
 *
 * The runtime checks both layouts against its own at compile time (the
 * fields of struct pool__frame it shares with its frame type, and `limit`
 * on a line pair of its own), and reaches a worker's `limit` from other
 * threads through a pointer it keeps only while that thread lives. These
 * layouts are compiled into callers: changing them changes the library's
 * soname.
 */
#ifndef WSPOOL_INLINE_H
#define WSPOOL_INLINE_H

#ifndef WSPOOL_H
#error "include <wspool.h>, not <wspool/inline.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** \cond WSPOOL_INLINE_ABI */
/* 128 bytes between what the owner writes and what thieves write: adjacent-
 * line prefetchers pair 64-byte lines (runtime/atomics.h, WS_CACHELINE). */
#if defined(__GNUC__)
#define POOL__LINE_ALIGNED __attribute__((__aligned__(128)))
#else
#define POOL__LINE_ALIGNED
#endif
struct pool__tls { /* the fields are described at the top of this file */
  void **top;
  void *pool;
  uint64_t tasks;
  void **fs_top;
  void **fs_end;
  void **fs_last;
  char wsp_pad[128 - 5 * sizeof(void *) - sizeof(uint64_t)];
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
POOL_API __attribute__((__cold__)) int pool__frame_push_full(size_t size, size_t align,
                                                             void **out);
/* Not cold: gcc 12 then took the inline pop's common case, after a typed
 * sync that ran the task, for cold too (bench_fib's sfib). */
POOL_API int pool__frame_pop_full(void *frame);
POOL_API __attribute__((__cold__)) void *pool__frame_top_full(void);
#endif

#if defined(__GNUC__) && defined(__ELF__) && \
    (defined(WSPOOL_BUILDING) || (defined(__OPTIMIZE__) && !defined(POOL_NO_INLINE)))
extern __thread struct pool__tls pool__tls __attribute__((tls_model("initial-exec")));

/* The fast paths, written once for the inline pool_spawn(), pool_sync()
 * and pool_take() below and for the library's own (runtime/forkjoin.c),
 * which callers that do not inline reach. The spawn's is a statement that
 * returns 0 from the function it is written in when it applies: a macro,
 * so that the inline pool_spawn() compiles to exactly the code it would
 * if written out, with no flag returned through a nested inline function
 * for the compiler to test again (docs/design.md 8.1). */
#define POOL__SPAWN_FAST(pool, task, fn, arg)                                                  \
  do {                                                                                         \
    if (__builtin_expect((task) && (fn) && (!(pool) || (void *)(pool) == pool__tls.pool), 1)) { \
      void **pool__top = pool__tls.top;                                                        \
      if (__builtin_expect(                                                                    \
              (uintptr_t)pool__top < __atomic_load_n(&pool__tls.limit, __ATOMIC_RELAXED), 1)) { \
        (task)->wsp_frame.fn = (fn);                                                           \
        (task)->wsp_frame.arg = (arg);                                                         \
        *pool__top = (task);                                                                   \
        pool__tls.top = pool__top + 1;                                                         \
        return 0;                                                                              \
      }                                                                                        \
    }                                                                                          \
  } while (0)

#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif
/* Pops the frame if it is the caller's newest private one (sync and take).
 * Always inlined: the library has no symbol of this name. */
extern __inline__ __attribute__((__gnu_inline__, __always_inline__)) int pool__pop_private(
    pool_task_t *task) {
  void **top = pool__tls.top;
  if (__builtin_expect(!task || top[-1] != (void *)task, 0)) return 0;
  /* Writes nothing to the frame: a second sync or take of it finds it
   * neither on the stack nor published, hence EINVAL (runtime/forkjoin.c, sync_slow). */
  pool__tls.top = top - 1;
  return 1;
}

/* The frame stack (fs_* above), for the inline pool_frame_push() and
 * pool_frame_pop() below and for the library's own (runtime/fstack.c). A
 * frame's slot and size are whole 16-byte units, POOL__FS_UNIT words. */
#define POOL__FS_UNIT (16 / sizeof(void *))
/* A push's arguments as pool_frame_push() documents them. */
#define POOL__FS_ARGS_OK(size, align, out)                                                   \
  ((out) && (size) && (size) <= (size_t)-1 / 2 && (align) && (align) <= 16 &&             \
   !((align) & ((align) - 1)))
/* The words a frame of `size` bytes takes, its slot included. */
#define POOL__FS_WORDS(size) (POOL__FS_UNIT * (1 + ((size) + 15) / 16))
/* Pushes a frame of `words` at `top`, which has room: the slot's first
 * word is the frame below it. Returns the frame. */
extern __inline__ __attribute__((__gnu_inline__, __always_inline__)) void *pool__fs_bump(
    void **top, size_t words) {
  top[0] = pool__tls.fs_last;
  pool__tls.fs_last = top + POOL__FS_UNIT;
  pool__tls.fs_top = top + words;
  return top + POOL__FS_UNIT;
}
/* The slot before frame `last`. An integer computation: as `last - 2`
 * the compiler may reach it through a pop's argument, and with a caller's
 * local variable there -Warray-bounds reports the read of the slot. */
extern __inline__ __attribute__((__gnu_inline__, __always_inline__)) void **pool__fs_slot(
    void **last) {
  return (void **)((uintptr_t)last - 16);
}
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif
#endif

#if defined(__GNUC__) && defined(__OPTIMIZE__) && defined(__ELF__) && !defined(WSPOOL_BUILDING) && \
    !defined(POOL_NO_INLINE)

#define POOL__INLINE extern __inline__ __attribute__((__gnu_inline__, __always_inline__))

/* The way out of an inline path into the library, on x86-64.
 *
 * A plain call there clobbers the caller-saved registers, so the compiler
 * keeps whatever lives across a spawn (in fib, `n`) in a callee-saved
 * register, and gcc then saves those registers on entry, before the
 * caller's own base-case test: every leaf of a recursion pays a full
 * prologue and epilogue (docs/performance.md, "Fork/join fib").
 * Instead the asm below calls a trampoline of the library
 * (runtime/tramp.S) that preserves every general register but rax, and
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
  POOL__SPAWN_FAST(pool, task, fn, arg);
#ifdef POOL__CLOBBERS
  { /* a block: the declaration follows the statement above */
    int rc;
    __asm__ __volatile__(POOL__TRAMP(pool__spawn_tramp)
                         : "=a"(rc)
                         : "D"(pool), "S"(task), "d"(fn), "c"(arg), "X"(pool__spawn_tramp)
                         : POOL__CLOBBERS);
    return rc;
  }
#else
  return pool__spawn_full(pool, task, fn, arg);
#endif
}

POOL__INLINE int pool_sync(pool_task_t *task) {
  if (pool__pop_private(task)) {
    task->wsp_frame.fn(task->wsp_frame.arg);
    pool__tls.tasks++; /* this thread's own: a plain increment */
    return 0;
  }
  POOL__SLOW_TASK(pool__sync_tramp, pool__sync_full, task);
}

POOL__INLINE int pool_take(pool_task_t *task) {
  if (pool__pop_private(task)) return POOL_TAKEN;
  POOL__SLOW_TASK(pool__take_tramp, pool__take_full, task);
}

/* The frame stack's common cases: a push that fits the newest chunk, a
 * pop that leaves it non-empty. With a constant size and alignment (typed
 * tasks) the checks fold away. */
POOL__INLINE int pool_frame_push(size_t size, size_t align, void **out) {
  void **top = pool__tls.fs_top;
  size_t words = POOL__FS_WORDS(size);
  if (__builtin_expect(POOL__FS_ARGS_OK(size, align, out) &&
                           (uintptr_t)pool__tls.fs_end - (uintptr_t)top >= words * sizeof(void *),
                       1)) {
    *out = pool__fs_bump(top, words);
    return 0;
  }
  return pool__frame_push_full(size, align, out);
}

POOL__INLINE void *pool_frame_top(void) {
  void **last = pool__tls.fs_last;
  return last ? (void *)last : pool__frame_top_full();
}

POOL__INLINE int pool_frame_pop(void *frame) {
  void **last = pool__tls.fs_last;
  if (__builtin_expect(frame && frame == (void *)last, 1)) {
    void **slot = pool__fs_slot(last);
    void **below = (void **)slot[0];
    if (__builtin_expect(below != (void **)0, 1)) {
      pool__tls.fs_last = below;
      pool__tls.fs_top = slot;
      return 0;
    }
  }
  return pool__frame_pop_full(frame);
}

#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif
#endif
/** \endcond */

#ifdef __cplusplus
}
#endif

#endif /* WSPOOL_INLINE_H */
