/* SPDX-License-Identifier: MIT */
/* Sleeping and waking (docs/design.md 5, where the protocols' arguments
 * are).
 *
 * Idle workers: an eventcount in the manner of Rayon's jobs-event counter
 * and TBB's eventcount, plus Go's rule that a woken thread which finds work
 * wakes the next one (one wake in flight: no thundering herd).
 *
 *   sleeper                               producer (after publishing work)
 *   sleepers += 1          (seq_cst)      light fence (fence.h)
 *   e = epoch; waking = 0  (seq_cst)      if sleepers > 0 and waking 0 -> 1:
 *   fence; look everywhere                    epoch += 1; futex_wake(epoch, 1)
 *   nap: futex_wait(epoch, e) for 1 ms; if nobody woke it: heavy fence,
 *     look everywhere again
 *   futex_wait(epoch, e)   sleeps only if epoch is still e
 *   sleepers -= 1; waking = 0; look again
 *
 * Waiting workers (latch.h) sleep on a second, broadcast word, wait_epoch,
 * woken by completers (ws_wait_notify) and by every producer of work
 * (ws_sleep_notify): a waiter never consumes a wake meant for an idle
 * worker (5.6). Outside threads block on a per-pool broadcast event,
 * ws_event (5.7). */
#ifndef WS_SLEEP_H
#define WS_SLEEP_H

#include "atomics.h"
#include "fence.h"

/* Futex on Linux; elsewhere a hashed table of mutex+condvar pairs. Both
 * tolerate a wake on an address nobody waits on any more. */
void ws_futex_wait(ws_u32 *word, uint32_t expected);
/* The same, returning after at most `ns` nanoseconds. */
void ws_futex_wait_for(ws_u32 *word, uint32_t expected, long ns);
void ws_futex_wake(ws_u32 *word, int n);
/* Fork handler (pool.c): 0 before fork(), 1 parent / 2 child after. */
void ws_futex_atfork(int phase);

typedef struct ws_sleep {
  WS_ALIGNED ws_u32 epoch; /* the futex word */
  ws_u32 sleepers;         /* registered sleepers */
  ws_u32 waking;           /* 1 while a wake is in flight */
  ws_u32 waiters;          /* registered waiting workers (beside sleepers:
                              one line for ws_sleep_notify to read) */
  WS_ALIGNED ws_u32 wait_epoch; /* the waiting workers' futex word */
} ws_sleep;

void ws_sleep_init(ws_sleep *s);

void ws_sleep_wake_one(ws_sleep *s);
void ws_wait_wake(ws_sleep *s);
/* Producer side, after the work is visible: the light fence (fence.h) and two loads of a line that only changes when a worker
 * falls asleep, starts to wait, or wakes; a wake only when someone sleeps.
 * Waiting workers (below) may run this work too, so they are woken first
 * (all of them: their word is a broadcast one). */
static inline void ws_sleep_notify(ws_sleep *s) {
  ws_light_fence();
  if (ws_u32_load(&s->waiters, ws_relaxed) != 0) ws_wait_wake(s);
  if (ws_u32_load(&s->sleepers, ws_relaxed) == 0) return;
  ws_sleep_wake_one(s);
}
/* Sleeper side: register, look again (caller), then commit or cancel;
 * with `nap`, the heavy barrier waits for ws_sleep_nap, called after a
 * look that found nothing and before the commit. */
uint32_t ws_sleep_prepare(ws_sleep *s, bool nap);
void ws_sleep_cancel(ws_sleep *s);
/* A first sleep of at most a millisecond with the registration's heavy
 * barrier not run yet (design.md 5.3). True when nobody woke it: the heavy
 * barrier has run, and the caller looks once more before it commits or
 * cancels. False when a producer woke it, or none is needed (producers
 * fence): then the commit. */
bool ws_sleep_nap(ws_sleep *s, uint32_t epoch);
/* Sleeps while epoch is unchanged, at most `ns` nanoseconds (0: no bound).
 * Once a heavy barrier has failed (fence.h) it looks every millisecond
 * with seen(ctx), a hint that work is visible, and returns when it is.
 * True when it returns with the epoch unchanged: nobody woke it. */
bool ws_sleep_commit(ws_sleep *s, uint32_t epoch, long ns, bool (*seen)(void *ctx), void *ctx);
/* A thread that consumed a wake and found work passes the wake on. */
void ws_sleep_chain(ws_sleep *s);
/* Wake every sleeper (shutdown). */
void ws_sleep_wake_all(ws_sleep *s);

/* Waiting workers. Waiter: e = ws_wait_prepare; check the condition and
 * look for work; then ws_wait_cancel, or ws_wait_commit(e) and loop.
 * Completer: after the store or RMW that makes a waiter's condition true
 * (release or stronger), ws_wait_notify; the object waited on may be gone
 * by then, only the pool is touched. */
uint32_t ws_wait_prepare(ws_sleep *s);
void ws_wait_cancel(ws_sleep *s);
void ws_wait_commit(ws_sleep *s, uint32_t epoch);
void ws_wait_notify(ws_sleep *s);

typedef struct ws_event {
  WS_ALIGNED ws_u32 epoch;
  ws_u32 waiters;
} ws_event;

void ws_event_init(ws_event *ev);
/* Waiter: prepare; loop { e = ws_event_epoch; if (done) break; wait(e) }; finish. */
void ws_event_prepare(ws_event *ev);
static inline uint32_t ws_event_epoch(ws_event *ev) { return ws_u32_load(&ev->epoch, ws_seq_cst); }
void ws_event_wait(ws_event *ev, uint32_t epoch);
void ws_event_finish(ws_event *ev);
/* Finisher, after the seq_cst store/RMW that makes a waiter's condition true. */
void ws_event_notify(ws_event *ev);

#endif /* WS_SLEEP_H */
