/* SPDX-License-Identifier: MIT */
/* The chaos build's schedule perturbation (atomics.h; docs/design.md 15).
 * Each thread has its own xorshift generator, seeded from the process's
 * seed (WSPOOL_CHAOS_SEED, given by pool_create) and the thread's identity:
 * a worker's index in its pool (ws_chaos_thread), else the order in which
 * the thread first reached a chaos point. So one seed gives each worker the
 * same sequence of decisions in every run. At each point a thread yields
 * (1 in 2048), spins up to 127 pauses (1 in 32), or goes on: often enough
 * to reorder threads inside the protocols' windows, rarely enough that the
 * suite's stress loops still finish in their bounds. Seed 0: off. */
#include <sched.h>
#include <stdatomic.h>

#include "atomics.h"
#include "chaos.h"

#ifdef WS_CHAOS
/* C11 atomics here, not atomics.h's, whose every access calls
 * ws_chaos_point. */
static _Atomic uint64_t chaos_seed;
static _Atomic unsigned chaos_threads;
static __thread uint64_t chaos_state; /* 0: not seeded yet */

/* splitmix64: spreads a seed and a small identity over all 64 bits. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return (x ^ (x >> 31)) | 1; /* never 0: 0 means unseeded */
}

void ws_chaos_init(uint64_t seed) {
  /* Relaxed: a seed seen late only starts a thread's chaos later. */
  atomic_store_explicit(&chaos_seed, seed, memory_order_relaxed);
}

void ws_chaos_thread(unsigned id) {
  uint64_t seed = atomic_load_explicit(&chaos_seed, memory_order_relaxed);
  chaos_state = seed ? mix(seed ^ (((uint64_t)id + 1) << 32)) : 0;
}

void ws_chaos_point(void) {
  uint64_t x = chaos_state;
  if (!x) {
    uint64_t seed = atomic_load_explicit(&chaos_seed, memory_order_relaxed);
    if (!seed) return;
    unsigned n = atomic_fetch_add_explicit(&chaos_threads, 1, memory_order_relaxed);
    x = mix(seed ^ (0xc4a05u + n));
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  chaos_state = x;
  unsigned r = (unsigned)(x >> 53); /* 0..2047 */
  if (r == 0) {
    sched_yield();
  } else if (r <= 64) {
    for (unsigned i = (unsigned)(x >> 8) & 127; i; i--) ws_cpu_relax();
  }
}
#else
void ws_chaos_init(uint64_t seed) { (void)seed; }
void ws_chaos_thread(unsigned id) { (void)id; }
#endif
