/* SPDX-License-Identifier: MIT */
/* Sleeping and waking (docs/design.md 5).
 *
 * Workers: an eventcount in the manner of Rayon's jobs-event counter and
 * TBB's eventcount, plus Go's rule that a woken thread which finds work wakes
 * the next one (so one wake is in flight at a time: no thundering herd).
 *
 *   sleeper                               producer (after publishing work)
 *   sleepers += 1          (seq_cst)      fence(seq_cst)
 *   e = epoch              (seq_cst)      if sleepers > 0 and waking 0 -> 1:
 *   look everywhere for work                  epoch += 1; futex_wake(epoch, 1)
 *   futex_wait(epoch, e)   sleeps only if epoch is still e
 *   sleepers -= 1; waking = 0; look again
 *
 * The store->load pairs (sleepers then the queues; the work then sleepers)
 * are separated by a full barrier on both sides, so either the producer sees
 * the sleeper or the sleeper's last look sees the work. The barriers are
 * asymmetric where the kernel allows (membarrier(2), as liburcu and folly
 * do): the producer, on the hot path of every push, has only a compiler
 * fence; the sleeper, about to make a futex call anyway, makes every running
 * thread of the process execute a full barrier (MEMBARRIER_CMD_PRIVATE_
 * EXPEDITED) after registering. Whether that barrier lands in a producer
 * before its store of the work, between the store and its load of
 * `sleepers`, or after the load, one of the two sees the other's store
 * (docs/design.md 5.3). Without membarrier both sides use
 * a seq_cst fence, as the table shows. A
 * producer that sees a wake already in flight (waking == 1) skips its own:
 * the thread that consumes that wake clears `waking` and then looks
 * everywhere, so it sees this producer's work or someone took it; if it finds
 * work it wakes the next sleeper (ws_sleep_chain).
 *
 * Waiting workers (a sync or take of a stolen frame, a group wait, a nested
 * parallel_for's wait) that found nothing to help with sleep on a second,
 * broadcast word of the same struct, `wait_epoch`: the protocol of the
 * outside waiters' event below, with the waiter's last look (the awaited
 * condition, then work it may run) after its registration and a seq_cst
 * fence. Two kinds of producer wake them: whoever completes what a worker
 * may be waiting for (ws_wait_notify, after the completing store), and
 * every producer of work (ws_sleep_notify, which checks `waiters` after the
 * same fence that orders its check of `sleepers`). They sleep on a word of
 * their own, not on `epoch`, so a waiter never consumes a wake meant for an
 * idle worker (a waiter past its stack bound could not use it).
 *
 * Outside waiters (pool_wait_idle, sync/group/parallel_for from a non-worker
 * thread) use a simpler broadcast event on the pool, whose lifetime covers
 * every waiter: the finisher's last touch of the awaited object is the store
 * that completes it, so the object may live on the waiter's stack. */
#ifndef WS_SLEEP_H
#define WS_SLEEP_H

#include "atomics.h"

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
/* Once per process, before the first pool's workers exist: registers for
 * membarrier(2) and, when that works, lets producers skip their fence. */
void ws_sleep_global_init(void);

/* 1 when producers use the compiler fence (membarrier registered). Set by
 * ws_sleep_global_init() before any pool exists; cleared if a heavy
 * barrier ever fails (sleep.c, sleep_degraded). */
extern ws_u32 ws__sleep_asym;

/* The producer's half of the store->load barrier: after publishing work,
 * before reading `sleepers`. */
static inline void ws_sleep_producer_fence(void) {
  if (ws_u32_load(&ws__sleep_asym, ws_relaxed))
    ws_compiler_fence();
  else
    ws_fence(ws_seq_cst);
}

/* The heavy half of the same pair, for other store->load pairs whose light
 * side is ws_sleep_producer_fence (visitors.h, submit.c): a seq_cst fence,
 * then, when producers have only a compiler fence, a full barrier in every
 * running thread. Once a heavy barrier has failed, a producer that had read
 * ws__sleep_asym before it was cleared may not be ordered by it: from then
 * on this also sleeps a 10 ms grace period. */
void ws_heavy_fence(void);

void ws_sleep_wake_one(ws_sleep *s);
void ws_wait_wake(ws_sleep *s);
/* Producer side, after the work is visible: a fence (a compiler fence
 * only, see above) and two loads of a line that only changes when a worker
 * falls asleep, starts to wait, or wakes; a wake only when someone sleeps.
 * Waiting workers (below) may run this work too, so they are woken first
 * (all of them: their word is a broadcast one). */
static inline void ws_sleep_notify(ws_sleep *s) {
  ws_sleep_producer_fence();
  if (ws_u32_load(&s->waiters, ws_relaxed) != 0) ws_wait_wake(s);
  if (ws_u32_load(&s->sleepers, ws_relaxed) == 0) return;
  ws_sleep_wake_one(s);
}
/* Sleeper side: register, look again (caller), then commit or cancel. */
uint32_t ws_sleep_prepare(ws_sleep *s);
void ws_sleep_cancel(ws_sleep *s);
void ws_sleep_commit(ws_sleep *s, uint32_t epoch);
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
