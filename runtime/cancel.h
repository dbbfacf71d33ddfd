/* SPDX-License-Identifier: MIT */
/* Layer 0: units of work and their cancellation (docs/design.md 5.8).
 *
 * A unit (a group, a join, a loop) owns a ws_ctx: one word that is
 * non-zero once the unit is cancelled, holding its first failure, and the
 * unit it is nested in. A unit is cancelled when its own word or an
 * ancestor's is non-zero. Cancelling marks only its own word, then bumps
 * a process-wide cancel epoch; a unit remembers the epoch at which it last
 * found every ancestor clear, so a check is O(1) (own word, epoch, that
 * note) until some unit anywhere is cancelled, and then walks up once. The
 * same answer oneTBB gets by propagating a cancellation down to every
 * descendant context, without a registry of contexts.
 *
 * A thread's current unit is its innermost scope (ws__scope): each task
 * the scheduler runs, each join half and each loop entered on the thread
 * pushes one on the thread's stack. `base` places the scope on its
 * worker's private frame stack (split.h): frames at logical positions at
 * or above it were spawned inside it, which is how a frame published later
 * learns the unit it was spawned in. */
#ifndef WS_CANCEL_H
#define WS_CANCEL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "atomics.h"

/* Set in a cancelled unit's word; the rest holds its failure, 0 for none. */
#define WS_CTX_CANCELLED 0x80000000u
#define WS_CTX_ERROR 0x7fffffffu

typedef struct ws_ctx {
  ws_u32 state;
  /* Part of an isolated computation (pool_isolate; docs/design.md 7.5):
   * set at creation, inherited by every unit nested in it. */
  bool iso;
  /* The unit of a job (job.c), set at its init: a group begun directly in
   * it holds the job's completion while a round of it is in progress
   * (ws_job_round_begin). Not inherited. */
  bool job;
  /* An epoch at which every ancestor was found clear (a note for the
   * check; any thread may refresh it), ~0 for none. */
  ws_u64 clear_at;
  struct ws_ctx *parent; /* the unit it is nested in (outlives it), or NULL */
} ws_ctx;

/* Bumped after every cancel or failure of any unit (cancel.c). */
extern ws_u64 ws__cancel_epoch;

typedef struct ws_scope {
  ws_ctx *ctx;           /* the thread's current unit while this scope lasts */
  uint64_t base;         /* logical private-stack position at entry */
  struct ws_scope *outer;
  /* On a worker inside an isolated computation: the deque index from
   * which its tasks lie (ws_scope_isolate, split.c); else WS_NO_FLOOR.
   * Inherited from the outer scope: what an isolated wait runs is isolated
   * as it is. */
  int64_t floor;
} ws_scope;

#define WS_NO_FLOOR INT64_MIN

/* The calling thread's innermost scope, NULL outside every task. */
extern __thread ws_scope *ws__scope __attribute__((tls_model("initial-exec")));

static inline ws_ctx *ws_ctx_current(void) {
  ws_scope *s = ws__scope;
  return s ? s->ctx : NULL;
}

/* Walks up from c's parent; notes the epoch where all are clear. */
bool ws_ctx_ancestor_cancelled(ws_ctx *c, uint64_t epoch);

/* Is c, or a unit it is nested in, cancelled? seq_cst loads: a check that
 * follows a cancel (its word, then the epoch) in the single total order
 * sees it, which bounds what starts after a cancel returns (design.md
 * 5.8). */
static inline bool ws_ctx_cancelled(ws_ctx *c) {
  if (ws_u32_load(&c->state, ws_seq_cst)) return true;
  uint64_t e = ws_u64_load(&ws__cancel_epoch, ws_seq_cst);
  /* Relaxed: a note; the epoch's order carries the argument. */
  if (ws_u64_load(&c->clear_at, ws_relaxed) == e) return false;
  return ws_ctx_ancestor_cancelled(c, e);
}

/* A new unit nested in parent (or in nothing): O(1), inheriting the
 * parent's note when it is current. */
static inline void ws_ctx_init(ws_ctx *c, ws_ctx *parent) {
  ws_u32_store(&c->state, 0, ws_relaxed);
  c->parent = parent;
  c->iso = parent && parent->iso;
  c->job = false;
  uint64_t e = ws_u64_load(&ws__cancel_epoch, ws_seq_cst);
  bool clear = !parent || (ws_u32_load(&parent->state, ws_seq_cst) == 0 &&
                           ws_u64_load(&parent->clear_at, ws_relaxed) == e);
  ws_u64_store(&c->clear_at, clear ? e : ~(uint64_t)0, ws_relaxed);
}

/* Cancel c (idempotent). */
void ws_ctx_cancel(ws_ctx *c);

/* Record err (> 0) as c's failure if neither c has failed nor c or an
 * ancestor been cancelled, and cancel it: 0, or EALREADY. */
int ws_ctx_fail(ws_ctx *c, int err);

/* What c's wait returns: its failure, else ECANCELED if it or an
 * ancestor is cancelled, else 0. Called once everything of the unit ran. */
int ws_ctx_result(ws_ctx *c);

/* ws_ctx_result, then clears c's word for a next round (a group's wait):
 * what lands after the clear stays for that round. */
int ws_ctx_take_result(ws_ctx *c);

/* The unit of the frame at logical position `pos` of the calling worker's
 * private stack: the innermost scope, at or outside `from`, that began at
 * or below it. Callers walk positions downward, each from the last
 * answer's scope, so one publication costs one pass over the scopes. */
static inline ws_scope *ws_scope_at(ws_scope *from, uint64_t pos) {
  while (from && from->base > pos) from = from->outer;
  return from;
}

static inline void ws_scope_push(ws_scope *s, ws_ctx *ctx, uint64_t base) {
  s->ctx = ctx;
  s->base = base;
  s->outer = ws__scope;
  s->floor = s->outer ? s->outer->floor : WS_NO_FLOOR;
  ws__scope = s;
}
static inline void ws_scope_pop(ws_scope *s) { ws__scope = s->outer; }

#endif /* WS_CANCEL_H */
