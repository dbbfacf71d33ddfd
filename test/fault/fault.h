/* SPDX-License-Identifier: MIT */
/* Fault injection for the fault suite: an allocation interposer and a
 * pthread_create interposer, defined in the test program itself so they
 * replace the C library's for every caller in the process (the wspool
 * shared library, hwloc, the C library's own allocations).
 *
 *   fault_alloc_arm(k)    the k-th allocation from now (any thread) fails
 *                         with ENOMEM, once; 0 disarms
 *   fault_alloc_arm_here(k)  the same, counting only the calling thread's
 *                         allocations (a worker's, whenever it makes one,
 *                         cannot take the failure meant for the call)
 *   fault_alloc_failed()  whether the armed failure happened
 *   fault_live()          allocations not yet freed (a counting leak check)
 *   fault_allocs()        allocations made so far (successful calls)
 *   fault_thread_arm(k)   the k-th pthread_create from now fails (EAGAIN)
 *
 * Allocation goes to glibc's __libc_* entry points. Sanitizers replace
 * malloc and pthread_create themselves, so under ASan/TSan FAULT_AVAILABLE
 * is 0, the calls above do nothing, and the cases that need injection are
 * skipped (77); LeakSanitizer covers leaks there for the tests that run
 * without injection. Include in exactly one translation unit, first. */
#ifndef WSPOOL_TEST_FAULT_H
#define WSPOOL_TEST_FAULT_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#if defined(__GLIBC__) && !TEST_UNDER_SANITIZER
#define FAULT_AVAILABLE 1
#else
#define FAULT_AVAILABLE 0
#endif

/* Why a case that needs injection cannot run here. */
#define FAULT_UNAVAILABLE "no fault injection under the sanitizers (fault.h)"

#if FAULT_AVAILABLE
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static atomic_long fault_countdown; /* > 0: armed */
static atomic_int fault_hit;
static atomic_long fault_nlive;
static atomic_long fault_nallocs;
static atomic_long fault_thread_countdown;
static atomic_int fault_one_thread; /* only fault_thread's allocations count */
static pthread_t fault_thread;

static inline void fault_alloc_arm(long k) {
  if (k > 0) atomic_store(&fault_hit, 0); /* disarming keeps the result */
  atomic_store(&fault_one_thread, 0);
  atomic_store(&fault_countdown, k);
}
static inline void fault_alloc_arm_here(long k) {
  atomic_store(&fault_hit, 0);
  fault_thread = pthread_self();
  atomic_store(&fault_one_thread, 1); /* release: fault_thread before */
  atomic_store(&fault_countdown, k);
}
static inline int fault_alloc_failed(void) { return atomic_load(&fault_hit); }
static inline long fault_live(void) { return atomic_load(&fault_nlive); }
static inline long fault_allocs(void) { return atomic_load(&fault_nallocs); }
static inline void fault_thread_arm(long k) { atomic_store(&fault_thread_countdown, k); }

/* True when this allocation is the one to fail. */
static inline int fault_now(void) {
  if (atomic_load_explicit(&fault_countdown, memory_order_relaxed) <= 0) return 0;
  if (atomic_load(&fault_one_thread) && !pthread_equal(pthread_self(), fault_thread)) return 0;
  if (atomic_fetch_sub(&fault_countdown, 1) != 1) return 0;
  atomic_store(&fault_hit, 1);
  return 1;
}

static inline void *fault_count(void *p) {
  if (p) {
    atomic_fetch_add_explicit(&fault_nlive, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&fault_nallocs, 1, memory_order_relaxed);
  }
  return p;
}

void *malloc(size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return fault_count(__libc_malloc(n));
}

void *calloc(size_t a, size_t b) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return fault_count(__libc_calloc(a, b));
}

void *realloc(void *p, size_t n) {
  if (!p) return malloc(n);
  if (n == 0) {
    free(p);
    return NULL;
  }
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_realloc(p, n); /* one block for one: the count stays */
}

void free(void *p) {
  if (!p) return;
  atomic_fetch_sub_explicit(&fault_nlive, 1, memory_order_relaxed);
  __libc_free(p);
}

static inline void *fault_aligned(size_t align, size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return fault_count(__libc_memalign(align, n));
}

int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = fault_aligned(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) { return fault_aligned(align, n); }
void *memalign(size_t align, size_t n) { return fault_aligned(align, n); }
void *valloc(size_t n) { return fault_aligned(4096, n); }
void *pvalloc(size_t n) { return fault_aligned(4096, (n + 4095) & ~(size_t)4095); }

typedef int (*fault_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  static fault_create_fn real;
  if (!real) {
    union {
      void *p;
      fault_create_fn f;
    } u = {.p = dlsym(RTLD_NEXT, "pthread_create")};
    real = u.f;
  }
  if (atomic_load(&fault_thread_countdown) > 0 && atomic_fetch_sub(&fault_thread_countdown, 1) == 1)
    return EAGAIN;
  return real(t, attr, fn, arg);
}
#else
static inline void fault_alloc_arm(long k) { (void)k; }
static inline void fault_alloc_arm_here(long k) { (void)k; }
static inline int fault_alloc_failed(void) { return 0; }
static inline long fault_live(void) { return 0; }
static inline long fault_allocs(void) { return 0; }
static inline void fault_thread_arm(long k) { (void)k; }
#endif /* FAULT_AVAILABLE */

#endif
