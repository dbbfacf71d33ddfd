/* SPDX-License-Identifier: MIT */
/* UTS, the Unbalanced Tree Search benchmark (Olivier et al., LCPC 2006):
 * the trees, their splittable SHA-1 random numbers and the child rule,
 * shared by bench_uts.c and its oneTBB shim. Header-only, C11 and C++.
 *
 * A node's state is 20 bytes, the SHA-1 digest that makes it: the root's
 * is SHA-1(16 zero bytes, the 4-byte big-endian seed), child i's is
 * SHA-1(parent's 20 bytes, i as 4 big-endian bytes), and the node's random
 * number is the digest's last 4 bytes, big-endian, masked to 31 bits (as
 * in UTS's rng/brg_sha1.c). Both messages fit one 64-byte block, so the
 * hash here is one compression, written for that case; the state is kept
 * as the digest's five big-endian words, which is the same bytes. Written
 * here rather than taken from OpenSSL: OpenSSL 3's SHA1() serialises
 * threads, so a benchmark calling it measures OpenSSL. The published node
 * counts of T1 and T3 are the test vector (bench_uts.c checks them).
 *
 * T1: geometric, fixed shape (-t 1 -a 3 -d 10 -b 4 -r 19): a node above
 *     depth 10 has a geometric number of children with mean 4;
 *     4,130,071 nodes, 3,305,118 leaves, depth 10.
 * T3: binomial (-t 0 -b 2000 -q 0.124875 -m 8 -r 42): the root has 2000
 *     children, every other node 8 with probability 0.124875, else none;
 *     4,112,897 nodes, 3,599,034 leaves. */
#ifndef WSPOOL_BENCH_UTS_H
#define WSPOOL_BENCH_UTS_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uts_state {
  uint32_t h[5];
} uts_state;

static inline uint32_t uts_rol(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

/* The SHA-1 digest of a message of `words` 32-bit big-endian words
 * (words <= 13, so it and its padding fit one block): the 80 rounds
 * unrolled, the schedule in a 16-word ring. */
#define UTS_W(i) \
  (w[(i)&15] = uts_rol(w[((i) + 13) & 15] ^ w[((i) + 8) & 15] ^ w[((i) + 2) & 15] ^ w[(i)&15], 1))
#define UTS_R(a, b, c, d, e, f, k, x)          \
  do {                                         \
    e += uts_rol(a, 5) + (f) + (k) + (x);      \
    b = uts_rol(b, 30);                        \
  } while (0)
#define UTS_F1(b, c, d) (d ^ (b & (c ^ d)))
#define UTS_F2(b, c, d) (b ^ c ^ d)
#define UTS_F3(b, c, d) ((b & c) | (d & (b | c)))
#define UTS_R5(i, F, k, X)                        \
  UTS_R(a, b, c, d, e, F(b, c, d), k, X(i));      \
  UTS_R(e, a, b, c, d, F(a, b, c), k, X(i + 1));  \
  UTS_R(d, e, a, b, c, F(e, a, b), k, X(i + 2));  \
  UTS_R(c, d, e, a, b, F(d, e, a), k, X(i + 3));  \
  UTS_R(b, c, d, e, a, F(c, d, e), k, X(i + 4))
#define UTS_W0(i) w[i]
static inline void uts_sha1_words(const uint32_t *msg, int words, uts_state *out) {
  uint32_t w[16];
  for (int i = 0; i < 16; i++) w[i] = i < words ? msg[i] : 0;
  w[words] = 0x80000000u;
  w[15] = (uint32_t)words * 32u; /* the length in bits */
  uint32_t a = 0x67452301u, b = 0xEFCDAB89u, c = 0x98BADCFEu, d = 0x10325476u, e = 0xC3D2E1F0u;
  UTS_R5(0, UTS_F1, 0x5A827999u, UTS_W0);
  UTS_R5(5, UTS_F1, 0x5A827999u, UTS_W0);
  UTS_R5(10, UTS_F1, 0x5A827999u, UTS_W0);
  UTS_R(a, b, c, d, e, UTS_F1(b, c, d), 0x5A827999u, w[15]);
  UTS_R(e, a, b, c, d, UTS_F1(a, b, c), 0x5A827999u, UTS_W(16));
  UTS_R(d, e, a, b, c, UTS_F1(e, a, b), 0x5A827999u, UTS_W(17));
  UTS_R(c, d, e, a, b, UTS_F1(d, e, a), 0x5A827999u, UTS_W(18));
  UTS_R(b, c, d, e, a, UTS_F1(c, d, e), 0x5A827999u, UTS_W(19));
  UTS_R5(20, UTS_F2, 0x6ED9EBA1u, UTS_W);
  UTS_R5(25, UTS_F2, 0x6ED9EBA1u, UTS_W);
  UTS_R5(30, UTS_F2, 0x6ED9EBA1u, UTS_W);
  UTS_R5(35, UTS_F2, 0x6ED9EBA1u, UTS_W);
  UTS_R5(40, UTS_F3, 0x8F1BBCDCu, UTS_W);
  UTS_R5(45, UTS_F3, 0x8F1BBCDCu, UTS_W);
  UTS_R5(50, UTS_F3, 0x8F1BBCDCu, UTS_W);
  UTS_R5(55, UTS_F3, 0x8F1BBCDCu, UTS_W);
  UTS_R5(60, UTS_F2, 0xCA62C1D6u, UTS_W);
  UTS_R5(65, UTS_F2, 0xCA62C1D6u, UTS_W);
  UTS_R5(70, UTS_F2, 0xCA62C1D6u, UTS_W);
  UTS_R5(75, UTS_F2, 0xCA62C1D6u, UTS_W);
  out->h[0] = 0x67452301u + a;
  out->h[1] = 0xEFCDAB89u + b;
  out->h[2] = 0x98BADCFEu + c;
  out->h[3] = 0x10325476u + d;
  out->h[4] = 0xC3D2E1F0u + e;
}
#undef UTS_W
#undef UTS_R
#undef UTS_F1
#undef UTS_F2
#undef UTS_F3
#undef UTS_R5
#undef UTS_W0

/* rng_init: SHA-1 of 16 zero bytes and the seed. */
static inline void uts_rng_init(uts_state *s, int seed) {
  uint32_t m[5] = {0, 0, 0, 0, (uint32_t)seed};
  uts_sha1_words(m, 5, s);
}

/* rng_spawn: SHA-1 of the parent's state and the child's index. */
static inline void uts_rng_spawn(const uts_state *parent, uts_state *child, int i) {
  uint32_t m[6] = {parent->h[0], parent->h[1], parent->h[2], parent->h[3], parent->h[4],
                   (uint32_t)i};
  uts_sha1_words(m, 6, child);
}

/* rng_rand then rng_toProb: uniform on [0, 1). */
static inline double uts_prob(const uts_state *s) {
  return (double)(s->h[4] & 0x7FFFFFFFu) / 2147483648.0;
}

enum { UTS_GEO = 1, UTS_BIN = 0, UTS_MAX_CHILDREN = 100 };

typedef struct uts_tree {
  const char *name;
  int type;        /* UTS_GEO (fixed shape) or UTS_BIN */
  double b0;       /* root branching factor (BIN), expected children (GEO) */
  int gen_mx;      /* GEO: depth limit */
  double q;        /* BIN: probability of children */
  int m;           /* BIN: children when there are any */
  int seed;
  long nodes, leaves; /* the published counts */
} uts_tree;

static const uts_tree uts_t1 = {"T1 (geometric)", UTS_GEO, 4.0, 10, 0, 0, 19, 4130071L, 3305118L};
static const uts_tree uts_t3 = {"T3 (binomial)", UTS_BIN, 2000.0, 0, 0.124875, 8, 42, 4112897L,
                                3599034L};

/* uts_numChildren for a node of height `height` with state s. */
static inline int uts_children(const uts_tree *t, const uts_state *s, int height) {
  int n;
  if (t->type == UTS_BIN) {
    if (height == 0) return (int)floor(t->b0); /* the root: never truncated */
    n = uts_prob(s) < t->q ? t->m : 0;
  } else {
    /* FIXED shape: b0 children on average above gen_mx, none below. */
    double bi = height < t->gen_mx ? t->b0 : 0.0;
    if (bi == 0.0) return 0;
    double p = 1.0 / (1.0 + bi);
    double u = uts_prob(s);
    n = (int)floor(log(1.0 - u) / log(1.0 - p));
  }
  return n > UTS_MAX_CHILDREN ? UTS_MAX_CHILDREN : n;
}

#ifdef __cplusplus
}
#endif

#endif /* WSPOOL_BENCH_UTS_H */
