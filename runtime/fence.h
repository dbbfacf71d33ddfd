/* SPDX-License-Identifier: MIT */
/* Layer 0: asymmetric store->load barriers (docs/design.md 5.3), for the
 * pairs with a hot and a cold side: a producer against a sleeper
 * (sleep.h), a visitor against destroy (visitors.h), a batch runner against
 * its handle's taker (submit.c). The hot side fences the compiler only,
 * the cold side runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED); without
 * membarrier both sides are a seq_cst fence. */
#ifndef WS_FENCE_H
#define WS_FENCE_H

#include "atomics.h"

/* Once per process, before the first pool's workers exist: registers for
 * membarrier(2) and, when that works, lets the light side skip its fence. */
void ws_fence_global_init(void);

/* 1 while the light side may fence the compiler only; cleared if a heavy
 * barrier ever fails. */
extern ws_u32 ws__fence_asym;

/* The hot side: between its store and its load. */
static inline void ws_light_fence(void) {
  if (ws_u32_load(&ws__fence_asym, ws_relaxed))
    ws_compiler_fence();
  else
    ws_fence(ws_seq_cst);
}

/* The cold side, for a thread about to sleep: a seq_cst fence, then a full
 * barrier in every running thread. Once that has failed, a light side that
 * read the old setting is not ordered by it: a sleeper then bounds its
 * sleep (ws_fence_degraded) and looks again. */
void ws_sleeper_fence(void);

/* The cold side for a caller that cannot look again (destroy, the batch
 * taker): ws_sleeper_fence(), plus a 10 ms grace period once degraded. */
void ws_heavy_fence(void);

/* 1 once a heavy barrier has failed (sleepers then wake every millisecond). */
extern ws_u32 ws__fence_degraded;
static inline bool ws_fence_degraded(void) {
  return ws_u32_load(&ws__fence_degraded, ws_relaxed) != 0;
}

#endif /* WS_FENCE_H */
