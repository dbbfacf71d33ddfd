/* SPDX-License-Identifier: MIT */
/* The counting build's counters and classifier (count.h). C11 atomics
 * here, not atomics.h's, whose every RMW and fence calls into this file;
 * none of them is an RMW on a hot path: a thread's counters are its own
 * (a relaxed load and store), and the registry of worker blocks is read
 * under a sequence lock, so a lookup writes nothing. */
#include "count.h"

#ifdef WS_COUNT_ATOMICS
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

/* ---- Per-thread counters, on a list that keeps them after the thread ends ---- */

typedef struct thread_counts {
  _Atomic uint64_t n[WS_CNT_N];
  struct thread_counts *next;
} thread_counts;

static _Atomic(thread_counts *) all_threads;
static __thread thread_counts *mine;
/* The calling thread's worker block and stack: [lo, hi). */
static __thread uintptr_t own_lo, own_hi, stack_lo, stack_hi;

/* Memory of this file: zeroed pages, never given back, not from the C
 * library's allocator (the fault tests count its live blocks; these live
 * as long as the process, as the counts must). */
static void *raw_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort(); /* a test build: no way to go on uncounted */
  return p;
}

/* Threads' counter blocks are carved from chunks of this size. */
enum { COUNTS_CHUNK = 1 << 16 };
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static char *chunk_next, *chunk_end;

static __attribute__((noinline)) thread_counts *first_use(void) {
  pthread_mutex_lock(&counts_lock);
  if ((size_t)(chunk_end - chunk_next) < sizeof(thread_counts)) {
    chunk_next = raw_alloc(COUNTS_CHUNK);
    chunk_end = chunk_next + COUNTS_CHUNK;
  }
  thread_counts *c = (thread_counts *)(void *)chunk_next;
  chunk_next += (sizeof(thread_counts) + 63) / 64 * 64;
  pthread_mutex_unlock(&counts_lock);
  pthread_attr_t attr;
  void *lo;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
      stack_lo = (uintptr_t)lo;
      stack_hi = (uintptr_t)lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  thread_counts *head = atomic_load_explicit(&all_threads, memory_order_relaxed);
  do c->next = head;
  while (!atomic_compare_exchange_weak_explicit(&all_threads, &head, c, memory_order_release,
                                                memory_order_relaxed));
  mine = c;
  return c;
}

static inline void bump(enum ws_count_kind k) {
  thread_counts *c = mine;
  if (__builtin_expect(!c, 0)) c = first_use();
  atomic_store_explicit(&c->n[k], atomic_load_explicit(&c->n[k], memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* ---- The registry of worker blocks: a sorted array under a sequence lock ---- */

typedef struct block_table {
  size_t cap;
  struct block_table *older; /* outgrown tables stay allocated: a reader may hold one */
  _Atomic uintptr_t lo[]; /* lo[cap], then hi[cap] */
} block_table;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned blocks_seq; /* odd while a writer changes the table */
static _Atomic(block_table *) blocks;
static _Atomic size_t nblocks;

static _Atomic uintptr_t *his(block_table *t) { return t->lo + t->cap; }

static block_table *table_new(size_t cap, block_table *older) {
  block_table *t = raw_alloc(sizeof(*t) + 2 * cap * sizeof(_Atomic uintptr_t));
  t->cap = cap;
  t->older = older;
  return t;
}

/* Writers: under blocks_lock, between these two. */
static void write_begin(void) {
  atomic_store_explicit(&blocks_seq, atomic_load_explicit(&blocks_seq, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}
static void write_end(void) {
  atomic_store_explicit(&blocks_seq, atomic_load_explicit(&blocks_seq, memory_order_relaxed) + 1,
                        memory_order_release);
}

void ws_count_block_add(const void *block, size_t size) {
  uintptr_t lo = (uintptr_t)block, hi = lo + size;
  pthread_mutex_lock(&blocks_lock);
  block_table *t = atomic_load_explicit(&blocks, memory_order_relaxed);
  size_t n = atomic_load_explicit(&nblocks, memory_order_relaxed);
  if (!t || n == t->cap) {
    /* A new table, filled before it is published: no reader sees it half
     * written, and the old one stays readable. */
    block_table *g = table_new(t ? 2 * t->cap : 64, t);
    for (size_t i = 0; i < n; i++) {
      atomic_store_explicit(&g->lo[i], atomic_load_explicit(&t->lo[i], memory_order_relaxed),
                            memory_order_relaxed);
      atomic_store_explicit(&his(g)[i], atomic_load_explicit(&his(t)[i], memory_order_relaxed),
                            memory_order_relaxed);
    }
    write_begin();
    atomic_store_explicit(&blocks, g, memory_order_relaxed);
    write_end();
    t = g;
  }
  write_begin();
  size_t i = n;
  for (; i > 0 && atomic_load_explicit(&t->lo[i - 1], memory_order_relaxed) > lo; i--) {
    atomic_store_explicit(&t->lo[i], atomic_load_explicit(&t->lo[i - 1], memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&his(t)[i], atomic_load_explicit(&his(t)[i - 1], memory_order_relaxed),
                          memory_order_relaxed);
  }
  atomic_store_explicit(&t->lo[i], lo, memory_order_relaxed);
  atomic_store_explicit(&his(t)[i], hi, memory_order_relaxed);
  atomic_store_explicit(&nblocks, n + 1, memory_order_relaxed);
  write_end();
  pthread_mutex_unlock(&blocks_lock);
}

void ws_count_block_remove(const void *block) {
  uintptr_t lo = (uintptr_t)block;
  pthread_mutex_lock(&blocks_lock);
  block_table *t = atomic_load_explicit(&blocks, memory_order_relaxed);
  size_t n = atomic_load_explicit(&nblocks, memory_order_relaxed);
  size_t i = 0;
  while (i < n && atomic_load_explicit(&t->lo[i], memory_order_relaxed) != lo) i++;
  if (i < n) {
    write_begin();
    for (; i + 1 < n; i++) {
      atomic_store_explicit(&t->lo[i], atomic_load_explicit(&t->lo[i + 1], memory_order_relaxed),
                            memory_order_relaxed);
      atomic_store_explicit(&his(t)[i], atomic_load_explicit(&his(t)[i + 1], memory_order_relaxed),
                            memory_order_relaxed);
    }
    atomic_store_explicit(&nblocks, n - 1, memory_order_relaxed);
    write_end();
  }
  pthread_mutex_unlock(&blocks_lock);
}

/* Is a inside some registered block? Reads only. */
static bool in_some_block(uintptr_t a) {
  for (;;) {
    unsigned s = atomic_load_explicit(&blocks_seq, memory_order_acquire);
    if (s & 1) continue;
    block_table *t = atomic_load_explicit(&blocks, memory_order_relaxed);
    size_t n = atomic_load_explicit(&nblocks, memory_order_relaxed);
    bool found = false;
    if (t && n <= t->cap) {
      size_t lo = 0, hi = n; /* the last block starting at or below a */
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (atomic_load_explicit(&t->lo[mid], memory_order_relaxed) <= a) lo = mid + 1;
        else hi = mid;
      }
      found = lo > 0 && a < atomic_load_explicit(&his(t)[lo - 1], memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&blocks_seq, memory_order_relaxed) == s) return found;
  }
}

/* ---- Call sites: which code counted what ---- */

/* An open-addressed table of (return address, kind) -> count, filled only
 * while ws_count_sites_on(true); ws_count_sites_dump prints it, by count,
 * as offsets into the object that holds the code (map them to functions
 * with addr2line or nm). */
enum { NSITES = 4096 };
static _Atomic uintptr_t site_key[NSITES];
static _Atomic uint64_t site_n[NSITES];
static _Atomic bool sites_on;

void ws_count_sites_on(bool on) { atomic_store_explicit(&sites_on, on, memory_order_relaxed); }

static void site_bump(const void *ret, enum ws_count_kind k) {
  uintptr_t key = ((uintptr_t)ret << 4) | (uintptr_t)k;
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 52) % NSITES;
  for (size_t probe = 0; probe < NSITES; probe++, i = (i + 1) % NSITES) {
    uintptr_t cur = atomic_load_explicit(&site_key[i], memory_order_acquire);
    if (cur == 0 && atomic_compare_exchange_strong_explicit(&site_key[i], &cur, key,
                                                            memory_order_acq_rel,
                                                            memory_order_acquire))
      cur = key; /* claimed; else cur is the key that won the slot */
    if (cur == key) {
      atomic_fetch_add_explicit(&site_n[i], 1, memory_order_relaxed);
      return;
    }
  }
}

#define SITE(k)                                                                  \
  do {                                                                           \
    if (atomic_load_explicit(&sites_on, memory_order_relaxed))                   \
      site_bump(__builtin_extract_return_addr(__builtin_return_address(0)), (k)); \
  } while (0)

static const char *const kind_names[WS_CNT_N] = {"shared", "other", "own", "stack", "fence",
                                                 "fence_ar", "heavy", "lock", "wake"};

void ws_count_sites_reset(void) {
  for (size_t i = 0; i < NSITES; i++) atomic_store_explicit(&site_n[i], 0, memory_order_relaxed);
}

static int by_count(const void *a, const void *b) {
  uint64_t x = site_n[*(const size_t *)a], y = site_n[*(const size_t *)b];
  return x < y ? 1 : x > y ? -1 : 0;
}

void ws_count_sites_dump(FILE *f, const char *title) {
  static size_t order[NSITES];
  size_t n = 0;
  for (size_t i = 0; i < NSITES; i++)
    if (atomic_load_explicit(&site_key[i], memory_order_acquire) &&
        atomic_load_explicit(&site_n[i], memory_order_relaxed))
      order[n++] = i;
  qsort(order, n, sizeof(order[0]), by_count);
  fprintf(f, "sites: %s\n", title);
  for (size_t j = 0; j < n; j++) {
    size_t i = order[j];
    uintptr_t key = atomic_load_explicit(&site_key[i], memory_order_relaxed);
    void *ret = (void *)(key >> 4);
    Dl_info info;
    uintptr_t base = dladdr(ret, &info) && info.dli_fbase ? (uintptr_t)info.dli_fbase : 0;
    fprintf(f, "  %10llu %-8s %s+0x%llx\n",
            (unsigned long long)atomic_load_explicit(&site_n[i], memory_order_relaxed),
            kind_names[key & 15], base && info.dli_fname ? info.dli_fname : "?",
            (unsigned long long)((uintptr_t)ret - base));
  }
}

/* ---- The hooks ---- */

void ws_count_thread(const void *block, size_t size) {
  own_lo = (uintptr_t)block;
  own_hi = own_lo + size;
}

void ws_count_rmw(const volatile void *addr) {
  uintptr_t a = (uintptr_t)addr;
  if (__builtin_expect(!mine, 0)) first_use(); /* the stack bounds */
  enum ws_count_kind k;
  if (a - own_lo < own_hi - own_lo) k = WS_CNT_OWN;
  else if (in_some_block(a)) k = WS_CNT_OTHER;
  else if (a - stack_lo < stack_hi - stack_lo) k = WS_CNT_STACK;
  else k = WS_CNT_SHARED;
  bump(k);
  SITE(k);
}

void ws_count_fence(int seq_cst) {
  enum ws_count_kind k = seq_cst ? WS_CNT_FENCE : WS_CNT_FENCE_AR;
  bump(k);
  SITE(k);
}

void ws_count_event(enum ws_count_kind k) {
  bump(k);
  SITE(k);
}

void ws_count_self(ws_count *out) {
  memset(out, 0, sizeof(*out));
  thread_counts *c = mine;
  if (!c) return;
  for (int k = 0; k < WS_CNT_N; k++) out->n[k] = atomic_load_explicit(&c->n[k], memory_order_relaxed);
}

void ws_count_all(ws_count *out) {
  memset(out, 0, sizeof(*out));
  for (thread_counts *c = atomic_load_explicit(&all_threads, memory_order_acquire); c; c = c->next)
    for (int k = 0; k < WS_CNT_N; k++)
      out->n[k] += atomic_load_explicit(&c->n[k], memory_order_relaxed);
}
#else
/* Other builds: nothing here (count.h's inline functions return zeros),
 * so the library is the same code as without this file. */
typedef int ws_count_off; /* ISO C wants a declaration in every file */
#endif
