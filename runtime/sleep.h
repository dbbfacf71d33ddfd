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
 * With bells (pools of more than WS_BELLS_MIN workers), a worker sleeps on
 * its own word: bell = ASLEEP, then futex_wait(bell, ASLEEP) if epoch is
 * still e; a wake, after its epoch RMW, rings sleeping bells (CAS to
 * RUNG, all before any futex_wake(bell, 1)), a thread woken rings two at
 * its first wake of others (a tree of wakes), and an outside batch of n
 * tasks rings up to n - 1 itself (design.md 5.4).
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
  /* Bells (docs/design.md 5.4): one futex word a worker, on which it
   * sleeps; a wake rings those it wakes. NULL: every sleeper waits on
   * `epoch` (a pool of at most WS_BELLS_MIN workers, and stand-ins
   * always). */
  ws_u32 *bells;
  unsigned nbells;
} ws_sleep;

/* A worker's word in the pool's `asleep` array, its bell when the pool
 * has bells. AWAKE: it looks for work or runs it. ASLEEP: it sleeps (or
 * is about to) with its deque empty; a wake may ring it. QUIET: not
 * ringable, deque empty (napping, before its thread starts, after it
 * left). RUNG + d: woken by a ring from a thread of wake depth d
 * (ws_sleep_depth), d at most WS_DEPTH_MAX, so that RUNG + d never wraps
 * to another value. Every value but AWAKE says the deque is empty
 * (design.md 5.10). */
enum { WS_BELL_AWAKE = 0, WS_BELL_ASLEEP = 1, WS_BELL_QUIET = 2, WS_BELL_RUNG = 3 };
enum { WS_DEPTH_MAX = 1 << 20 };
/* Pools of more workers than this get bells. Up to it, one wake in
 * flight passed on by Go's chain reaches P sleepers in P wakes, within
 * the ramp-up bound 2 log2(P) + 2 (>= P for every P <= 8), and the shared
 * epoch is the simpler mechanism (docs/scaling.md, "Ramp-up"). */
enum { WS_BELLS_MIN = 8 };

void ws_sleep_init(ws_sleep *s);
/* The n workers' words (QUIET), before any sleeps; s rings them only
 * when n > WS_BELLS_MIN. */
void ws_sleep_bells(ws_sleep *s, ws_u32 *bells, unsigned n);

void ws_sleep_wake_one(ws_sleep *s);
void ws_wait_wake(ws_sleep *s);
/* Producer side, after the work is visible: the light fence (fence.h)
 * and two loads of a line that only changes when a worker falls asleep,
 * starts to wait, or wakes; a wake only when someone sleeps.
 * Waiting workers (below) may run this work too, so they are woken first
 * (all of them: their word is a broadcast one). */
static inline void ws_sleep_notify(ws_sleep *s) {
  ws_light_fence();
  if (ws_u32_load(&s->waiters, ws_relaxed) != 0) ws_wait_wake(s);
  if (ws_u32_load(&s->sleepers, ws_relaxed) == 0) return;
  ws_sleep_wake_one(s);
}
/* For a batch of n + 1 tasks made visible at once, before its
 * ws_sleep_notify: up to n sleepers rung by this thread (design.md 5.4),
 * so that a burst reaches them in one wake each rather than through a
 * tree of wakes whose depth follows the order the OS runs the woken
 * threads in. Only in a pool with bells, and only when someone sleeps. */
void ws_sleep_wake_batch(ws_sleep *s, size_t n);
static inline void ws_sleep_wake_more(ws_sleep *s, size_t n) {
  if (s->bells) ws_sleep_wake_batch(s, n);
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
 * True when it returns with the epoch unchanged and its bell not rung:
 * nobody woke it. With a bell (the caller's, when s has bells; else NULL)
 * it sleeps on that word, where a ring wakes it (design.md 5.4), and a
 * wake of another sleeper does not; a timeout, a spurious return or an
 * epoch changed before it blocks end it too. The bell is AWAKE on return. */
bool ws_sleep_commit(ws_sleep *s, uint32_t epoch, long ns, bool (*seen)(void *ctx), void *ctx,
                     ws_u32 *bell);
/* The calling thread's wake depth: 0 until a ring wakes it, then one more
 * than its ringer's. A statistic for tests: the wakes on the critical
 * path of a ramp-up. */
uint32_t ws_sleep_depth(void);
/* A thread that consumed a wake and found work passes one wake on. */
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
