/* SPDX-License-Identifier: MIT */
/* Layer 1: the completion latch, through which every completion and
 * every wait of the runtime goes (docs/design.md 5.6). A latch is a
 * condition on one word of the awaited object. The completer's store or
 * RMW that makes it true is its last touch of the object; then it wakes
 * the waiter through the pool alone (ws_latch_notify). That store is
 * release when only a worker can wait, seq_cst when an outside thread may
 * (5.7). The waiter helps on a worker of the pool and blocks elsewhere. */
#ifndef WS_LATCH_H
#define WS_LATCH_H

#include "scheduler.h"

typedef enum ws_latch_kind {
  WS_LATCH_VALUE, /* *word == value */
  WS_LATCH_ZERO,  /* (*count & mask) == 0 */
  WS_LATCH_IDLE   /* every pool_submit task counted so far has finished */
} ws_latch_kind;

typedef struct ws_latch {
  ws_latch_kind kind;
  ws_u32 *word;
  uint32_t value;
  ws_i64 *count;
  int64_t mask;
  int64_t waiter_bit; /* ZERO: set in *count while an outside thread blocks */
} ws_latch;

static inline ws_latch ws_latch_value(ws_u32 *word, uint32_t value) {
  return (ws_latch){.kind = WS_LATCH_VALUE, .word = word, .value = value};
}
static inline ws_latch ws_latch_zero(ws_i64 *count, int64_t mask, int64_t waiter_bit) {
  return (ws_latch){.kind = WS_LATCH_ZERO, .count = count, .mask = mask, .waiter_bit = waiter_bit};
}
static inline ws_latch ws_latch_idle(void) { return (ws_latch){.kind = WS_LATCH_IDLE}; }

/* Who the completer wakes: a waiting worker, a blocked outside thread. */
enum { WS_WAKE_WORKER = 1, WS_WAKE_OUTSIDE = 2 };

/* The completer, right after its last touch: touches only the pool. */
static inline void ws_latch_notify(struct pool *p, unsigned who) {
  if (who & WS_WAKE_OUTSIDE) ws_event_notify(&p->ext);
  if (who & WS_WAKE_WORKER) ws_wait_notify(&p->sleep);
}

/* Returns true once `l` holds, with the completer's writes visible. A
 * worker of p helps meanwhile (from `hint` first, if given); other threads
 * block. False: a worker in an isolated computation (ws_isolation) that
 * nothing within its reach can help any more, with `l` not yet seen to
 * hold; ws_latch_wait (api.h) then sleeps, in a blocking region once no
 * other thread is free (design.md 7.5). */
bool ws_latch_help(struct pool *p, const ws_latch *l, ws_worker *hint);
/* One sleep of worker w of the latch's pool on its waiter word, running
 * nothing (an isolated waiter with nothing in reach): HELD when `l` holds
 * (it does not sleep); with `check_free`, NONE_FREE when no other thread
 * of the pool is free (ws_none_free; it does not sleep); else WOKEN, after
 * a notify of the waiters (a completer, a producer, or a change that
 * ws_none_free reads). */
typedef enum { WS_SLEPT_HELD, WS_SLEPT_WOKEN, WS_SLEPT_NONE_FREE } ws_slept;
ws_slept ws_latch_sleep_once(ws_worker *w, const ws_latch *l, bool check_free);
/* Until `l` holds, on any thread, without helping: blocks on the pool's
 * event (outside threads, and a task's wait for a job, 9.2). */
void ws_latch_block(struct pool *p, const ws_latch *l);

#endif /* WS_LATCH_H */
