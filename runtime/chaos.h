/* SPDX-License-Identifier: MIT */
/* Layer 0: the chaos build's seeds (chaos.c; the perturbation itself is
 * atomics.h's). Both calls do nothing in other builds. */
#ifndef WS_CHAOS_H
#define WS_CHAOS_H

#include <stdint.h>

#ifdef WS_CHAOS
enum { WS_CHAOS_BUILD = 1 };
#else
enum { WS_CHAOS_BUILD = 0 };
#endif

/* The process's seed (0: no perturbation). pool_create, before workers. */
void ws_chaos_init(uint64_t seed);
/* Reseeds the calling thread from the seed and `id` (a worker's index). */
void ws_chaos_thread(unsigned id);

#endif /* WS_CHAOS_H */
