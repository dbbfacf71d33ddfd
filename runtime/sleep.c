/* SPDX-License-Identifier: MIT */
/* Futex wrappers and the two wait protocols described in sleep.h. */
#include "sleep.h"

#include "count.h"

#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#if defined(__linux__) && !defined(WS_NO_FUTEX)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>

void ws_futex_wait(ws_u32 *word, uint32_t expected) {
  /* Returns at once (EAGAIN) if the word no longer holds `expected`; may
   * return spuriously (EINTR): every caller re-checks in a loop. */
  syscall(SYS_futex, ws_u32_addr(word), FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void ws_futex_wait_for(ws_u32 *word, uint32_t expected, long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L}; /* relative */
  syscall(SYS_futex, ws_u32_addr(word), FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

void ws_futex_wake(ws_u32 *word, int n) {
  ws_count_event(WS_CNT_WAKE);
  syscall(SYS_futex, ws_u32_addr(word), FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void ws_futex_atfork(int phase) { (void)phase; /* no lock of ours */ }

#else
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Portable fallback: a parking lot of mutex+condvar buckets hashed by
 * address. The value check happens under the bucket lock and wakers change
 * the word before taking it, so a wake cannot slip between check and sleep.
 * Buckets are global, so waking an address whose object is gone touches only
 * the bucket, never the object. */
enum { NBUCKETS = 64 };
static struct bucket {
  pthread_mutex_t m;
  pthread_cond_t c;
} buckets[NBUCKETS];
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

static void buckets_init(void) {
  for (int i = 0; i < NBUCKETS; i++) {
    pthread_mutex_init(&buckets[i].m, NULL);
    pthread_cond_init(&buckets[i].c, NULL);
  }
}

static struct bucket *bucket_of(ws_u32 *word) {
  pthread_once(&buckets_once, buckets_init);
  uintptr_t a = (uintptr_t)word;
  return &buckets[(a >> 6 ^ a >> 12) % NBUCKETS];
}

void ws_futex_wait(ws_u32 *word, uint32_t expected) {
  struct bucket *b = bucket_of(word);
  pthread_mutex_lock(&b->m);
  if (ws_u32_load(word, ws_seq_cst) == expected) pthread_cond_wait(&b->c, &b->m);
  pthread_mutex_unlock(&b->m);
}

/* fork(): a bucket lock held by another thread would stay held in the
 * child, so all are taken around the fork (pool.c's handlers). The child
 * makes them and the condition variables anew: a condition variable keeps
 * the parent's waiters in its state, and a broadcast in the child would
 * wait for them to leave. */
void ws_futex_atfork(int phase) {
  pthread_once(&buckets_once, buckets_init);
  for (int i = 0; i < NBUCKETS; i++) {
    if (phase == 0) {
      pthread_mutex_lock(&buckets[i].m);
    } else if (phase == 1) {
      pthread_mutex_unlock(&buckets[NBUCKETS - 1 - i].m);
    } else {
      pthread_mutex_init(&buckets[i].m, NULL);
      pthread_cond_init(&buckets[i].c, NULL);
    }
  }
}

void ws_futex_wait_for(ws_u32 *word, uint32_t expected, long ns) {
  struct bucket *b = bucket_of(word);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += ns % 1000000000L;
  ts.tv_sec += ns / 1000000000L + ts.tv_nsec / 1000000000L;
  ts.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&b->m);
  if (ws_u32_load(word, ws_seq_cst) == expected) pthread_cond_timedwait(&b->c, &b->m, &ts);
  pthread_mutex_unlock(&b->m);
}

void ws_futex_wake(ws_u32 *word, int n) {
  ws_count_event(WS_CNT_WAKE);
  (void)n; /* a bucket is shared by several words: wake them all */
  struct bucket *b = bucket_of(word);
  pthread_mutex_lock(&b->m);
  pthread_cond_broadcast(&b->c);
  pthread_mutex_unlock(&b->m);
}
#endif

/* Sleepers whose heavy barrier failed (fence.h) wake this often to look
 * again. */
enum { DEGRADED_NS = 1000000 };

/* The calling thread's wake depth (ws_sleep_depth), and whether it came
 * out of a sleep woken and has not woken anyone since (ws_sleep_wake_one). */
static __thread uint32_t wake_depth;
static __thread bool fresh;

uint32_t ws_sleep_depth(void) { return wake_depth; }

void ws_sleep_bells(ws_sleep *s, ws_u32 *bells, unsigned n) {
  for (unsigned i = 0; i < n; i++) ws_u32_store(&bells[i], WS_BELL_QUIET, ws_relaxed);
  if (n <= WS_BELLS_MIN) return;
  s->bells = bells;
  s->nbells = n;
}

/* Rings up to n sleeping bells, from bell `start` on; how many it rang.
 * Called after the caller's seq_cst RMW of `epoch`. It claims them all
 * before it wakes any: no thread this ring wakes runs, and rings bells of
 * its own, before the ring has taken its n, so each of them is one wake
 * from the caller whatever order the OS runs the woken threads in
 * (design.md 5.4; a sleeper may still leave by itself meanwhile, on a
 * timeout or spuriously, or be woken by another ring's wakes). */
static int ring(ws_sleep *s, uint32_t start, int n) {
  int rung = 0;
  unsigned nb = s->nbells, j = start % nb, k = 0;
  for (; k < nb && rung < n; k++, j = j + 1 < nb ? j + 1 : 0) {
    /* seq_cst, after the seq_cst RMW of epoch: against the sleeper's
     * seq_cst store of ASLEEP, then load of epoch (ws_sleep_commit), one
     * of the two sees the other (Dekker; design.md 5.4): we ring it, or
     * it reads the new epoch and does not block (or both: a ring counted
     * then woke a thread that was leaving; it looks all the same). */
    uint32_t b = ws_u32_load(&s->bells[j], ws_seq_cst);
    if (b != WS_BELL_ASLEEP) continue;
    if (!ws_u32_cas(&s->bells[j], &b, WS_BELL_RUNG + wake_depth, ws_seq_cst)) continue;
    rung++;
  }
  /* The wakes: each bell scanned that still reads rung, this ring's or
   * another's (a second wake of a word finds no waiter, wakes an owner
   * that was to be woken anyway, or, read stale, wakes one that took its
   * ring and sleeps again: a spurious wake, which it looks past). One
   * whose owner already took the ring reads AWAKE, QUIET or ASLEEP again:
   * it needs none. Relaxed: the same thread's CAS wrote each of its own
   * claims, so the load reads that or a later value (coherence). */
  for (j = start % nb; rung && k; k--, j = j + 1 < nb ? j + 1 : 0)
    if (ws_u32_load(&s->bells[j], ws_relaxed) >= WS_BELL_RUNG) ws_futex_wake(&s->bells[j], 1);
  return rung;
}

/* Wakes up to n sleepers: bells first; if it rang fewer, up to n of
 * those waiting on the epoch (nappers, stand-ins, every sleeper of a
 * pool without bells). */
static void wake_n(ws_sleep *s, int n) {
  /* seq_cst RMW: a sleeper whose epoch load reads the new value also sees
   * the work published before it. */
  uint32_t e = ws_u32_fetch_add(&s->epoch, 1, ws_seq_cst) + 1;
  if (s->bells && ring(s, e, n) == n) return;
  ws_futex_wake(&s->epoch, n);
}

void ws_sleep_wake_batch(ws_sleep *s, size_t n) {
  /* Only adds wakes to those of ws_sleep_notify, which the caller runs
   * next, so that rule's argument holds (design.md 5.4); the relaxed load
   * is a hint: a sleeper it misses is the notify's. */
  uint32_t sl = ws_u32_load(&s->sleepers, ws_relaxed);
  if (sl == 0) return;
  if (n > sl) n = sl; /* sl <= threads: fits an int */
  wake_n(s, (int)n);
}

void ws_sleep_init(ws_sleep *s) {
  ws_u32_store(&s->epoch, 0, ws_relaxed);
  ws_u32_store(&s->sleepers, 0, ws_relaxed);
  ws_u32_store(&s->waking, 0, ws_relaxed);
  ws_u32_store(&s->waiters, 0, ws_relaxed);
  ws_u32_store(&s->wait_epoch, 0, ws_relaxed);
  s->bells = NULL;
  s->nbells = 0;
}

/* Wakes every waiting worker. Called after the producer's barrier that
 * follows its store (ws_sleep_notify's, ws_wait_notify's fence), with
 * `waiters` seen non-zero. */
void ws_wait_wake(ws_sleep *s) {
  /* seq_cst RMW: a waiter whose epoch load reads the new value also sees
   * what the producer stored before its fence. */
  ws_u32_fetch_add(&s->wait_epoch, 1, ws_seq_cst);
  ws_futex_wake(&s->wait_epoch, INT_MAX);
}

void ws_sleep_wake_one(ws_sleep *s) {
  /* Called by ws_sleep_notify() after its fence saw a sleeper. With the
   * asymmetric barrier that fence is a compiler fence only; this one puts
   * the producer's work before its CAS in S, so a thread whose clear of
   * `waking` follows a CAS that read 1 (and then looks everywhere behind a
   * seq_cst fence) sees the work (docs/design.md 5.4). Only a producer
   * that saw a sleeper pays it. */
  ws_fence(ws_seq_cst);
  /* Woken, and waking others for the first time since: two, past the
   * one-in-flight rule, so that a burst reaches P sleepers through a tree
   * of wakes about log2(P) deep rather than a chain of P (design.md 5.4).
   * It only adds wakes: the rule below and its argument hold. */
  if (fresh) {
    fresh = false;
    if (s->bells) {
      wake_n(s, 2);
      return;
    }
  }
  /* A wake is in flight: skip. A load first, so that while a sleeper's
   * registration lasts (a preempted one: milliseconds) producers share the
   * line instead of taking it in turn with a failing CAS. It reads `waking`
   * after the fence as the CAS would, so the argument above holds for it. */
  if (ws_u32_load(&s->waking, ws_relaxed) != 0) return;
  uint32_t idle = 0;
  if (!ws_u32_cas(&s->waking, &idle, 1, ws_seq_cst)) return; /* a wake is in flight */
  wake_n(s, 1);
  /* `waking` stays 1 until some thread clears it and then looks everywhere
   * (ws_sleep_prepare, ws_sleep_commit). Every sleeper this producer counted
   * does one of those after the epoch changed: it is woken or rung, or its
   * futex_wait fails on the new epoch, or it reads that epoch after its
   * ASLEEP store, or it registered late enough to clear `waking` itself in
   * ws_sleep_prepare. So the flag cannot stick. */
}

uint32_t ws_sleep_prepare(ws_sleep *s, bool nap) {
  fresh = false;
  ws_u32_fetch_add(&s->sleepers, 1, ws_seq_cst);
  uint32_t e = ws_u32_load(&s->epoch, ws_seq_cst);
  /* Any thread that clears `waking` and then looks everywhere keeps the
   * promise a skipped producer relied on (see ws_sleep_notify); clearing it
   * here means a wake can never be left "in flight" by a sleeper that read
   * the new epoch, found the work itself and cancelled. */
  ws_u32_store(&s->waking, 0, ws_seq_cst);
  /* The caller's last look at the queues must come after the registration:
   * the seq_cst fence pairs with the producer's fence in ws_sleep_notify.
   * When producers only have a compiler fence, the look is complete once
   * the heavy barrier has run too: now, or after the nap (ws_sleep_nap,
   * design.md 5.3). */
  if (nap)
    ws_fence(ws_seq_cst);
  else
    ws_sleeper_fence();
  return e;
}

/* A nap's bound (design.md 5.3): sleeps shorter than this (work every
 * 100 us to 1 ms) end with no heavy barrier; a producer that missed the
 * registration waits this long at worst for its work to be seen. */
enum { NAP_NS = 1000 * 1000 };

bool ws_sleep_nap(ws_sleep *s, uint32_t epoch) {
  /* Relaxed: producers fence (no membarrier, or a failed one: then
   * ws_sleep_commit's bounded sleeps cover those that read the old
   * setting, fence.h), so the look was complete. */
  if (!ws_u32_load(&ws__fence_asym, ws_relaxed)) return false;
  ws_futex_wait_for(&s->epoch, epoch, NAP_NS);
  /* Relaxed: a changed epoch is a producer that saw the registration (the
   * commit and the caller's look after it order the rest). */
  if (ws_u32_load(&s->epoch, ws_relaxed) != epoch) return false;
  ws_sleeper_fence();
  return true;
}

void ws_sleep_cancel(ws_sleep *s) { ws_u32_fetch_add(&s->sleepers, (uint32_t)-1, ws_seq_cst); }

/* futex_wait(word, epoch), or a bounded one once a heavy barrier failed
 * (fence.h). */
static void sleep_on(ws_u32 *word, uint32_t epoch) {
  if (ws_fence_degraded())
    ws_futex_wait_for(word, epoch, DEGRADED_NS);
  else
    ws_futex_wait(word, epoch);
}

bool ws_sleep_commit(ws_sleep *s, uint32_t epoch, long ns, bool (*seen)(void *ctx), void *ctx,
                     ws_u32 *bell) {
  /* With a bell the thread sleeps on it, where a ring wakes it: ASLEEP
   * (seq_cst store), then the epoch (seq_cst load, below), against a
   * waker's RMW of the epoch, then its loads of the bells (ring). Without,
   * on the epoch, which futex_wait compares. */
  ws_u32 *word = bell ? bell : &s->epoch;
  uint32_t expect = bell ? (uint32_t)WS_BELL_ASLEEP : epoch;
  if (bell) ws_u32_store(bell, WS_BELL_ASLEEP, ws_seq_cst);
  long left = ns;
  for (;;) {
    /* Woken during a nap (ws_sleep_nap): no system call. Relaxed without
     * a bell: the futex compares the same word. */
    if (ws_u32_load(&s->epoch, bell ? ws_seq_cst : ws_relaxed) != epoch) break;
    if (!ws_fence_degraded()) {
      if (ns)
        ws_futex_wait_for(word, expect, left);
      else
        ws_futex_wait(word, expect);
      break;
    }
    /* A producer may have missed us (fence.h): look every DEGRADED_NS,
     * through hints only, so an idle pool's counters stand still. */
    long step = ns && left < DEGRADED_NS ? left : DEGRADED_NS;
    ws_futex_wait_for(word, expect, step);
    if (ws_u32_load(&s->epoch, ws_relaxed) != epoch || seen(ctx)) break;
    if (ns && (left -= step) <= 0) break;
  }
  bool quiet = ws_u32_load(&s->epoch, ws_relaxed) == epoch;
  if (bell) {
    /* AWAKE before it looks, so before it can push (design.md 5.10).
     * Acquire: pairs with the ring's seq_cst CAS, after the ringer's work,
     * which the look then sees; a fresh ringer (ws_sleep_wake_one) takes
     * no `waking` CAS that would order it otherwise. A ring says who woke
     * it, and that it was woken (a timed wait may have ended just before
     * the ring, with the epoch read unchanged). */
    uint32_t b = ws_u32_xchg(bell, WS_BELL_AWAKE, ws_acquire);
    if (b >= WS_BELL_RUNG) {
      quiet = false;
      wake_depth = b - WS_BELL_RUNG + 1 < WS_DEPTH_MAX ? b - WS_BELL_RUNG + 1 : WS_DEPTH_MAX;
    }
  }
  if (!quiet) fresh = true;
  ws_u32_fetch_add(&s->sleepers, (uint32_t)-1, ws_seq_cst);
  /* We consumed a wake (or left on a changed epoch, a timeout, or
   * spuriously): let the next producer wake someone. The caller looks
   * everywhere after this. */
  ws_u32_store(&s->waking, 0, ws_seq_cst);
  return quiet;
}

/* Go's rule, one wake whatever `fresh` says: the thread found work but
 * made none, and a single task must still cost one wake and one look
 * (test/core/scale wake_small). Its first publication then wakes two. */
void ws_sleep_chain(ws_sleep *s) {
  bool f = fresh;
  fresh = false;
  ws_sleep_notify(s);
  fresh = f;
}

void ws_sleep_wake_all(ws_sleep *s) {
  uint32_t e = ws_u32_fetch_add(&s->epoch, 1, ws_seq_cst) + 1;
  if (s->bells) ring(s, e, INT_MAX);
  ws_futex_wake(&s->epoch, INT_MAX);
}

uint32_t ws_wait_prepare(ws_sleep *s) {
  ws_u32_fetch_add(&s->waiters, 1, ws_seq_cst);
  uint32_t e = ws_u32_load(&s->wait_epoch, ws_seq_cst);
  /* The caller's last look (its condition, then the queues) comes after
   * the registration: this fence pairs with the one in ws_wait_notify, and
   * with ws_sleep_notify's producer fence, which may be a compiler fence
   * only: then the heavy barrier makes up for it (design.md 5.3). */
  ws_sleeper_fence();
  return e;
}

void ws_wait_cancel(ws_sleep *s) { ws_u32_fetch_add(&s->waiters, (uint32_t)-1, ws_seq_cst); }

void ws_wait_commit(ws_sleep *s, uint32_t epoch) {
  /* Sleeps only while wait_epoch is still `epoch`: a producer that bumped
   * it after our load, before or during this call, is not missed. */
  sleep_on(&s->wait_epoch, epoch);
  ws_u32_fetch_add(&s->waiters, (uint32_t)-1, ws_seq_cst);
}

void ws_wait_notify(ws_sleep *s) {
  /* No lost wake-up (docs/design.md 5.6): the
   * completer's store, then this fence, then its load of `waiters`; the
   * waiter's registration, then its fence, then its look at the
   * condition. The two fences are ordered in the single total order S:
   * if the completer's comes first, the waiter's look sees the store;
   * otherwise the completer's load sees the registration and bumps the
   * epoch, which the waiter's futex_wait compares against the value it
   * read before its look (or, if that load read the bump, the look sees
   * the store: the bump is a release after it). */
  ws_fence(ws_seq_cst);
  if (ws_u32_load(&s->waiters, ws_relaxed) != 0) ws_wait_wake(s);
}

void ws_event_init(ws_event *ev) {
  ws_u32_store(&ev->epoch, 0, ws_relaxed);
  ws_u32_store(&ev->waiters, 0, ws_relaxed);
}

void ws_event_prepare(ws_event *ev) { ws_u32_fetch_add(&ev->waiters, 1, ws_seq_cst); }

void ws_event_wait(ws_event *ev, uint32_t epoch) { ws_futex_wait(&ev->epoch, epoch); }

void ws_event_finish(ws_event *ev) { ws_u32_fetch_add(&ev->waiters, (uint32_t)-1, ws_seq_cst); }

void ws_event_notify(ws_event *ev) {
  /* Pairs with the seq_cst RMW in ws_event_prepare: either we see the
   * waiter, or the waiter's check (after its registration) sees our result. */
  ws_fence(ws_seq_cst);
  if (ws_u32_load(&ev->waiters, ws_relaxed) == 0) return;
  ws_u32_fetch_add(&ev->epoch, 1, ws_seq_cst);
  ws_futex_wake(&ev->epoch, INT_MAX);
}
