/* SPDX-License-Identifier: MIT */
/* The one place wspool touches atomics. Two backends, chosen by the meson
 * option `atomics`:
 *   c11            <stdatomic.h> (default; ThreadSanitizer understands it)
 *   libatomic_ops  Boehm's libatomic_ops (AO_*), for toolchains without C11
 *                  atomics; needs a 64-bit AO_t.
 *
 * Each atomic type is a struct wrapping one word, so a plain access cannot
 * happen by accident. Orders are the C11 ones; the libatomic_ops backend maps
 * each to the AO barrier suffix that gives at least that order
 * (relaxed -> none, acquire -> _acquire, release -> _release,
 * acq_rel/seq_cst -> _full, and a seq_cst load/store -> fence + access). */
#ifndef WS_ATOMICS_H
#define WS_ATOMICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The chaos build (-Dchaos=true; docs/design.md 15): before and after
 * every atomic access and fence below, the calling thread may yield or
 * spin a while, as its own generator decides (chaos.c), so that schedules
 * which two cores rarely run happen on purpose. Other builds: no code. */
#ifdef WS_CHAOS
void ws_chaos_point(void);
#define WS__CHAOTIC(expr) \
  __extension__({ ws_chaos_point(); __typeof__(expr) ws__v = (expr); ws_chaos_point(); ws__v; })
#define WS__CHAOTIC_DO(stmt) do { ws_chaos_point(); stmt; ws_chaos_point(); } while (0)
#else
#define WS__CHAOTIC(expr) (expr)
#define WS__CHAOTIC_DO(stmt) do { stmt; } while (0)
#endif

/* The counting build (-Dcount_atomics=true; count.h, count.c): every
 * read-modify-write below (each CAS attempt, exchange and fetch_add) and
 * every fence of a non-relaxed order reports itself, the RMW with its
 * word's address, before it happens. Loads and stores are not counted.
 * Other builds: no code. */
#ifdef WS_COUNT_ATOMICS
void ws_count_rmw(const volatile void *addr);
void ws_count_fence(int seq_cst);
#define WS__COUNT_RMW(addr) ws_count_rmw(addr)
#define WS__COUNT_FENCE(o) ws_count_fence((o) == ws_seq_cst)
#else
#define WS__COUNT_RMW(addr) ((void)0)
#define WS__COUNT_FENCE(o) ((void)0)
#endif

#if defined(WS_ATOMICS_AO)
#include <atomic_ops.h>
typedef enum {
  ws_relaxed,
  ws_acquire,
  ws_release,
  ws_acq_rel,
  ws_seq_cst
} ws_order;
#else
#include <stdatomic.h>
typedef enum {
  ws_relaxed = memory_order_relaxed,
  ws_acquire = memory_order_acquire,
  ws_release = memory_order_release,
  ws_acq_rel = memory_order_acq_rel,
  ws_seq_cst = memory_order_seq_cst
} ws_order;
#endif

#if defined(WS_ATOMICS_AO)

_Static_assert(sizeof(AO_t) == 8, "the libatomic_ops backend needs a 64-bit AO_t");

static inline void ws_fence(ws_order o) {
  if (o != ws_relaxed) {
    WS__COUNT_FENCE(ws_seq_cst); /* AO_nop_full whatever the order */
    WS__CHAOTIC_DO(AO_nop_full());
  }
}
/* Orders memory accesses for the compiler only (no instruction): the light
 * half of an asymmetric fence pair (fence.h). */
static inline void ws_compiler_fence(void) { WS__CHAOTIC_DO(AO_compiler_barrier()); }

static inline AO_t ws__ao_load(const volatile AO_t *p, ws_order o) {
  switch (o) {
  case ws_relaxed: return WS__CHAOTIC(AO_load(p));
  case ws_acquire: return WS__CHAOTIC(AO_load_acquire(p));
  default: return WS__CHAOTIC(AO_load_full(p));
  }
}
static inline void ws__ao_store(volatile AO_t *p, AO_t v, ws_order o) {
  switch (o) {
  case ws_relaxed: WS__CHAOTIC_DO(AO_store(p, v)); break;
  case ws_release: WS__CHAOTIC_DO(AO_store_release(p, v)); break;
  default: WS__CHAOTIC_DO(AO_store_full(p, v)); break;
  }
}

/* A word of the public header's inline ABI, declared there as a plain
 * uintptr_t (the header cannot use _Atomic, which C++ does not have):
 * accessed through its address, as the header does with GNU builtins. */
static inline uintptr_t ws_abi_load(const uintptr_t *p, ws_order o) {
  return (uintptr_t)ws__ao_load((const volatile AO_t *)p, o);
}
static inline void ws_abi_store(uintptr_t *p, uintptr_t v, ws_order o) {
  ws__ao_store((volatile AO_t *)p, (AO_t)v, o);
}
static inline AO_t ws__ao_faa(volatile AO_t *p, AO_t v, ws_order o) {
  switch (o) {
  case ws_relaxed: return WS__CHAOTIC(AO_fetch_and_add(p, v));
  case ws_acquire: return WS__CHAOTIC(AO_fetch_and_add_acquire(p, v));
  case ws_release: return WS__CHAOTIC(AO_fetch_and_add_release(p, v));
  default: return WS__CHAOTIC(AO_fetch_and_add_full(p, v));
  }
}
/* A failed CAS only loads, so the failure order is implied by the success
 * order here; AO's _full CAS is a full barrier either way. */
static inline bool ws__ao_cas(volatile AO_t *p, AO_t *expected, AO_t desired, ws_order o) {
  AO_t seen;
  switch (o) {
  case ws_relaxed: seen = WS__CHAOTIC(AO_fetch_compare_and_swap(p, *expected, desired)); break;
  case ws_acquire: seen = WS__CHAOTIC(AO_fetch_compare_and_swap_acquire(p, *expected, desired)); break;
  case ws_release: seen = WS__CHAOTIC(AO_fetch_compare_and_swap_release(p, *expected, desired)); break;
  default: seen = WS__CHAOTIC(AO_fetch_compare_and_swap_full(p, *expected, desired)); break;
  }
  if (seen == *expected) return true;
  *expected = seen;
  return false;
}
static inline AO_t ws__ao_xchg(volatile AO_t *p, AO_t v, ws_order o) {
  AO_t cur = ws__ao_load(p, ws_relaxed);
  while (!ws__ao_cas(p, &cur, v, o == ws_relaxed ? ws_acq_rel : o)) {
  }
  return cur;
}

static inline unsigned ws__ao_load32(const volatile unsigned *p, ws_order o) {
  switch (o) {
  case ws_relaxed: return WS__CHAOTIC(AO_int_load(p));
  case ws_acquire: return WS__CHAOTIC(AO_int_load_acquire(p));
  default: return WS__CHAOTIC(AO_int_load_full(p));
  }
}
static inline void ws__ao_store32(volatile unsigned *p, unsigned v, ws_order o) {
  switch (o) {
  case ws_relaxed: WS__CHAOTIC_DO(AO_int_store(p, v)); break;
  case ws_release: WS__CHAOTIC_DO(AO_int_store_release(p, v)); break;
  default: WS__CHAOTIC_DO(AO_int_store_full(p, v)); break;
  }
}
static inline unsigned ws__ao_faa32(volatile unsigned *p, unsigned v, ws_order o) {
  (void)o;
  return WS__CHAOTIC(AO_int_fetch_and_add_full(p, v));
}
static inline bool ws__ao_cas32(volatile unsigned *p, unsigned *expected, unsigned desired, ws_order o) {
  (void)o;
  unsigned seen = WS__CHAOTIC(AO_int_fetch_compare_and_swap_full(p, *expected, desired));
  if (seen == *expected) return true;
  *expected = seen;
  return false;
}
static inline unsigned ws__ao_xchg32(volatile unsigned *p, unsigned v, ws_order o) {
  unsigned cur = ws__ao_load32(p, ws_relaxed);
  while (!ws__ao_cas32(p, &cur, v, o)) {
  }
  return cur;
}

/* WS_ATOMIC_WORD(name, T): a 64-bit atomic holding a T, stored as AO_t. */
#define WS_ATOMIC_WORD(name, T)                                                                  \
  typedef struct { volatile AO_t v; } name;                                                      \
  static inline T name##_load(const name *a, ws_order o) { return (T)ws__ao_load(&a->v, o); }    \
  static inline void name##_store(name *a, T x, ws_order o) { ws__ao_store(&a->v, (AO_t)x, o); } \
  static inline T name##_xchg(name *a, T x, ws_order o) {                                        \
    WS__COUNT_RMW(&a->v); /* once, though a CAS loop here */                                      \
    return (T)ws__ao_xchg(&a->v, (AO_t)x, o);                                                    \
  }                                                                                              \
  static inline bool name##_cas(name *a, T *exp, T des, ws_order o) {                            \
    WS__COUNT_RMW(&a->v);                                                                        \
    AO_t e = (AO_t)*exp;                                                                         \
    bool ok = ws__ao_cas(&a->v, &e, (AO_t)des, o);                                               \
    *exp = (T)e;                                                                                 \
    return ok;                                                                                   \
  }
#define WS_ATOMIC_ARITH(name, T)                                   \
  static inline T name##_fetch_add(name *a, T x, ws_order o) {     \
    WS__COUNT_RMW(&a->v);                                          \
    return (T)ws__ao_faa(&a->v, (AO_t)x, o);                       \
  }

WS_ATOMIC_WORD(ws_i64, int64_t)
WS_ATOMIC_ARITH(ws_i64, int64_t)
WS_ATOMIC_WORD(ws_u64, uint64_t)
WS_ATOMIC_ARITH(ws_u64, uint64_t)
WS_ATOMIC_WORD(ws_size, size_t)
WS_ATOMIC_ARITH(ws_size, size_t)
WS_ATOMIC_WORD(ws_ptr, void *)

typedef struct { volatile unsigned v; } ws_u32;
static inline uint32_t ws_u32_load(const ws_u32 *a, ws_order o) { return ws__ao_load32(&a->v, o); }
static inline void ws_u32_store(ws_u32 *a, uint32_t x, ws_order o) { ws__ao_store32(&a->v, x, o); }
static inline uint32_t ws_u32_fetch_add(ws_u32 *a, uint32_t x, ws_order o) {
  WS__COUNT_RMW(&a->v);
  return ws__ao_faa32(&a->v, x, o);
}
static inline uint32_t ws_u32_xchg(ws_u32 *a, uint32_t x, ws_order o) {
  WS__COUNT_RMW(&a->v); /* once, though a CAS loop here */
  return ws__ao_xchg32(&a->v, x, o);
}
static inline bool ws_u32_cas(ws_u32 *a, uint32_t *exp, uint32_t des, ws_order o) {
  WS__COUNT_RMW(&a->v);
  unsigned e = *exp;
  bool ok = ws__ao_cas32(&a->v, &e, des, o);
  *exp = e;
  return ok;
}
/* The futex word: the kernel reads the plain 32-bit value. */
static inline volatile uint32_t *ws_u32_addr(ws_u32 *a) { return (volatile uint32_t *)&a->v; }

#else /* C11 */

static inline void ws_fence(ws_order o) {
  if (o != ws_relaxed) WS__COUNT_FENCE(o);
  WS__CHAOTIC_DO(atomic_thread_fence((memory_order)o));
}
/* Orders memory accesses for the compiler only (no instruction): the light
 * half of an asymmetric fence pair (fence.h). */
static inline void ws_compiler_fence(void) {
  WS__CHAOTIC_DO(atomic_signal_fence(memory_order_seq_cst));
}
/* A word of the public header's inline ABI, declared there as a plain
 * uintptr_t (the header cannot use _Atomic, which C++ does not have):
 * accessed with the same GNU builtins the header uses, which compile to
 * the C11 atomics and which ThreadSanitizer instruments alike. */
static inline uintptr_t ws_abi_load(const uintptr_t *p, ws_order o) {
  return WS__CHAOTIC(__atomic_load_n(p, (int)o));
}
/* A seq_cst store on AArch64 is an exchange (SWPAL, or an exclusive
 * pair), not STLR. Both are right for C11. The exchange also keeps a
 * Dekker pair (a seq_cst store, then a seq_cst load of another word) under
 * qemu's user-mode emulation on an x86 host, where the CI's aarch64 leg
 * runs: qemu puts STLR's barrier before the store and LDAR's after the
 * load, so the host's store buffer lets the load pass the store, while an
 * exchange becomes a locked host instruction. With STLR, job_wait's
 * storage_reuse hung there within 35 runs (a blocking region unserved, the
 * stand-in parked: blocked 1, active 0, which the stand-in pair of
 * design.md 5.9 excludes); with the exchange, 450 runs passed. Elsewhere
 * a plain store; not counted as an RMW (it is a store to every reader). */
#if defined(__aarch64__)
#define WS__STORE_SC(p, v) (void)atomic_exchange_explicit(p, v, memory_order_seq_cst)
#define WS__ABI_STORE_SC(p, v) (void)__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST)
#else
#define WS__STORE_SC(p, v) atomic_store_explicit(p, v, memory_order_seq_cst)
#define WS__ABI_STORE_SC(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#endif
static inline void ws_abi_store(uintptr_t *p, uintptr_t v, ws_order o) {
  if (o == ws_seq_cst)
    WS__CHAOTIC_DO(WS__ABI_STORE_SC(p, v));
  else
    WS__CHAOTIC_DO(__atomic_store_n(p, v, (int)o));
}

/* Failure order of a CAS: the strongest one allowed for the success order
 * (C11 forbids release/acq_rel as failure orders). */
static inline memory_order ws__fail_order(ws_order o) {
  switch (o) {
  case ws_seq_cst: return memory_order_seq_cst;
  case ws_acq_rel:
  case ws_acquire: return memory_order_acquire;
  default: return memory_order_relaxed;
  }
}

#define WS_ATOMIC_WORD(name, T)                                                                \
  typedef struct { _Atomic(T) v; } name;                                                       \
  static inline T name##_load(const name *a, ws_order o) {                                     \
    return WS__CHAOTIC(atomic_load_explicit((_Atomic(T) *)&a->v, (memory_order)o));            \
  }                                                                                            \
  static inline void name##_store(name *a, T x, ws_order o) {                                  \
    if (o == ws_seq_cst)                                                                       \
      WS__CHAOTIC_DO(WS__STORE_SC(&a->v, x));                                                  \
    else                                                                                       \
      WS__CHAOTIC_DO(atomic_store_explicit(&a->v, x, (memory_order)o));                        \
  }                                                                                            \
  static inline T name##_xchg(name *a, T x, ws_order o) {                                      \
    WS__COUNT_RMW(&a->v);                                                                      \
    return WS__CHAOTIC(atomic_exchange_explicit(&a->v, x, (memory_order)o));                   \
  }                                                                                            \
  static inline bool name##_cas(name *a, T *exp, T des, ws_order o) {                          \
    WS__COUNT_RMW(&a->v);                                                                      \
    return WS__CHAOTIC(atomic_compare_exchange_strong_explicit(&a->v, exp, des, (memory_order)o, \
                                                               ws__fail_order(o)));            \
  }
#define WS_ATOMIC_ARITH(name, T)                                                               \
  static inline T name##_fetch_add(name *a, T x, ws_order o) {                                 \
    WS__COUNT_RMW(&a->v);                                                                      \
    return WS__CHAOTIC(atomic_fetch_add_explicit(&a->v, x, (memory_order)o));                  \
  }

WS_ATOMIC_WORD(ws_i64, int64_t)
WS_ATOMIC_ARITH(ws_i64, int64_t)
WS_ATOMIC_WORD(ws_u64, uint64_t)
WS_ATOMIC_ARITH(ws_u64, uint64_t)
WS_ATOMIC_WORD(ws_size, size_t)
WS_ATOMIC_ARITH(ws_size, size_t)
WS_ATOMIC_WORD(ws_ptr, void *)
WS_ATOMIC_WORD(ws_u32, uint32_t)
WS_ATOMIC_ARITH(ws_u32, uint32_t)

_Static_assert(sizeof(ws_u32) == 4, "the futex word must be a plain 32-bit integer");
static inline volatile uint32_t *ws_u32_addr(ws_u32 *a) { return (volatile uint32_t *)&a->v; }

#endif

/* A counter with a single writer (its worker) and any number of readers:
 * a relaxed load + relaxed store, no locked instruction. Relaxed is enough
 * because readers only want some recent value, never ordering with other
 * data. */
static inline void ws_counter_add(ws_u64 *c, uint64_t n) {
  ws_u64_store(c, ws_u64_load(c, ws_relaxed) + n, ws_relaxed);
}

/* In a spin loop: lets the other hardware thread of the core run. */
static inline void ws_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Keep words other threads write on lines of their own: 128 bytes, not 64,
 * because the adjacent-line prefetchers of x86-64 (and the 128-byte lines
 * of some arm64 parts) pull pairs of lines, so two words 64 bytes apart
 * still share traffic (crossbeam's CachePadded makes the same choice). The
 * header's inline ABI (struct pool__tls) uses the same separation. */
#define WS_CACHELINE 128
#define WS_ALIGNED _Alignas(WS_CACHELINE)

#endif /* WS_ATOMICS_H */
