/* SPDX-License-Identifier: MIT */
/* Cilksort pieces shared by bench_sort.c and its oneTBB shim (after Cilk-5's
 * cilksort.cilk): the sequential leaves and the split of a parallel merge.
 * Each runtime writes its own recursive driver around these, with the same
 * cutoffs, so every variant does the same work:
 *
 *   sort(A, T, n):  n < SORT_CUTOFF: seq_quick(A, n)
 *                   else sort the four quarters of A in parallel (scratch:
 *                   the quarters of T), merge A1+A2 -> T1 and A3+A4 -> T3 in
 *                   parallel, then merge T1+T3 -> A
 *   merge(a, na, b, nb, dst): na + nb < MERGE_CUTOFF: seq_merge
 *                   else split the larger run at its middle, binary-search
 *                   the split in the other, and merge both halves in parallel
 */
#ifndef WSPOOL_BENCH_SORT_H
#define WSPOOL_BENCH_SORT_H

#include <stddef.h>
#include <stdint.h>

#define SORT_CUTOFF 2048
#define MERGE_CUTOFF 4096

static inline void sort_insertion(int32_t *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    int32_t x = a[i];
    size_t j = i;
    while (j > 0 && a[j - 1] > x) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
}

static inline int32_t sort_med3(int32_t a, int32_t b, int32_t c) {
  return a < b ? (b < c ? b : (a < c ? c : a)) : (b > c ? b : (a > c ? c : a));
}

/* Sequential quicksort (median of three, insertion sort below 20). */
static void seq_quick(int32_t *a, size_t n) {
  while (n > 20) {
    int32_t p = sort_med3(a[0], a[n / 2], a[n - 1]);
    size_t i = 0, j = n - 1;
    for (;;) {
      while (a[i] < p) i++;
      while (a[j] > p) j--;
      if (i >= j) break;
      int32_t t = a[i];
      a[i] = a[j];
      a[j] = t;
      i++;
      j--;
    }
    /* [0, j] <= p <= [j+1, n): recurse into the smaller side. */
    size_t left = j + 1;
    if (left < n - left) {
      seq_quick(a, left);
      a += left;
      n -= left;
    } else {
      seq_quick(a + left, n - left);
      n = left;
    }
  }
  sort_insertion(a, n);
}

static inline void seq_merge(const int32_t *a, size_t na, const int32_t *b, size_t nb,
                             int32_t *dst) {
  const int32_t *ea = a + na, *eb = b + nb;
  while (a < ea && b < eb) *dst++ = *b < *a ? *b++ : *a++;
  while (a < ea) *dst++ = *a++;
  while (b < eb) *dst++ = *b++;
}

/* First index in b[0..nb) whose value is >= x. */
static inline size_t sort_lower_bound(const int32_t *b, size_t nb, int32_t x) {
  size_t lo = 0, hi = nb;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Make a the larger of a merge's two runs (sort_split splits a at its
 * middle and searches b). */
static inline void sort_larger_first(const int32_t **a, size_t *na, const int32_t **b,
                                     size_t *nb) {
  if (*na < *nb) {
    const int32_t *t = *a;
    *a = *b;
    *b = t;
    size_t tn = *na;
    *na = *nb;
    *nb = tn;
  }
}

/* Split a merge of a (the larger run) and b: a[0..*sa) + b[0..*sb) go
 * before a[*sa..) + b[*sb..) in the output. */
static inline void sort_split(const int32_t *a, size_t na, const int32_t *b, size_t nb,
                              size_t *sa, size_t *sb) {
  *sa = na / 2;
  *sb = sort_lower_bound(b, nb, a[*sa]);
}

/* Input and checks: a seeded random array; sorted and a permutation of the
 * input (a multiset fingerprint: sum and xor of a 64-bit mix of each value,
 * both independent of order). */
static inline uint64_t sort_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

typedef struct sort_print {
  uint64_t sum, xr;
} sort_print;

static inline sort_print sort_fingerprint(const int32_t *a, size_t n) {
  sort_print p = {0, 0};
  for (size_t i = 0; i < n; i++) {
    uint64_t h = sort_mix((uint64_t)(uint32_t)a[i] + 0x9E3779B97F4A7C15ull);
    p.sum += h;
    p.xr ^= h;
  }
  return p;
}

static inline void sort_fill(int32_t *a, size_t n, uint64_t seed) {
  uint64_t x = seed | 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a[i] = (int32_t)(uint32_t)(x >> 32);
  }
}

#endif
