/* SPDX-License-Identifier: MIT */
/* Visitors (docs/design.md 10.1): the light entry gate of outside
 * submissions. Each thread that submits from outside has a slot in a
 * process-wide registry that names the pool it is submitting to, or none.
 * Entering is a plain store to the thread's own slot and the light fence
 * (fence.h: a compiler fence where membarrier(2) works),
 * then a load of the pool's CLOSED bit; no read-modify-write of a shared
 * line. Destroy, after setting CLOSED, makes the heavy fence
 * (ws_heavy_fence) and waits until no slot names its pool: a store-buffering
 * pair, so either destroy sees the slot or the visitor sees CLOSED. Knows
 * no pool: a pool is an address here. */
#ifndef WS_VISITORS_H
#define WS_VISITORS_H

#include <stdbool.h>

#include "atomics.h"
#include "fence.h"

typedef struct ws_visitor {
  ws_ptr target;           /* the pool being visited, or NULL */
  struct ws_visitor *next; /* the registry (under its lock) */
  bool listed;             /* this thread's slot is in the registry */
} ws_visitor;

extern __thread ws_visitor ws__visitor __attribute__((tls_model("initial-exec")));

/* Puts the calling thread's slot in the registry (once per thread; it
 * leaves at thread exit). false when it cannot (no thread-specific key):
 * the caller then uses the counting gate. */
bool ws_visitor_list(void);

/* Begin a visit of `pool` (the slot must be listed): the slot names it,
 * then the light fence. The caller then loads the pool's CLOSED bit
 * and calls ws_visit_end if it is set. */
static inline void ws_visit_begin(void *pool) {
  ws_ptr_store(&ws__visitor.target, pool, ws_relaxed);
  ws_light_fence();
}

/* End the visit. Release: everything the visitor did to the pool happens
 * before the acquire load in ws_visitors_wait that sees the slot clear. */
static inline void ws_visit_end(void) { ws_ptr_store(&ws__visitor.target, NULL, ws_release); }

/* Destroy's side, after its store of CLOSED and ws_heavy_fence(): returns
 * once no slot names `pool`. A visit is a few hundred instructions (a push
 * and a notify; it never blocks), so this yields while it waits. */
void ws_visitors_wait(void *pool);

/* Fork handlers (pool.c): 0 before fork(), 1 parent / 2 child after; the
 * child keeps only the forking thread's slot. */
void ws_visitors_atfork(int phase);

#endif /* WS_VISITORS_H */
