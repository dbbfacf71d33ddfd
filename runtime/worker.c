/* SPDX-License-Identifier: MIT */
/* The worker: its search order and its idle and sleep path. The waits of
 * everything else (help while waiting, block outside) are latch.c.
 *
 * Search order (Duffy's work-stealing thread pool; Blumofe and Leiserson's
 * randomized work stealing):
 *   1. own deque, LIFO end (no lock; hot in cache)
 *   2. the global queue (a lane's lock, only when its hint says non-empty,
 *      full lanes first: take_global; never waited for: ws_gqueue_pop_batch)
 *   3. steal, FIFO end, from victims in random order, nearest level first
 * An idle worker repeats this with sched_yield() between failed rounds
 * (the multiprogramming variant of Arora, Blumofe and Plaxton) for the
 * pool's idle poll, then sleeps (sleep.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "busy.h"
#include "profile.h"
#include "split.h"

/* The default idle poll (POOL_IDLE_POLL_AUTO): failed rounds before an
 * idle worker sleeps, about 0.1 ms with one worker (more when workers
 * outnumber CPUs, as each round yields): long enough for the next task of
 * a burst or a loop's next round to find the worker awake (a look, not a
 * futex wake), short enough that an idle pool costs nothing measurable.
 * A flood from outside threads on a full machine relies on these yields:
 * they hand the CPU to the producer, whose next tasks the worker then
 * finds (bench_submit's rows fell 26-156 % when the poll stopped there). */
enum { SPIN_ROUNDS = 64 };
/* The default poll's neighbour rule (docs/design.md 4). A yield that
 * returns after SLOW_YIELD_NS ran another thread on this CPU that long:
 * the CPUs are full. Polling on would queue the worker behind that thread
 * at every look, so that its next task waits a scheduler slice
 * (milliseconds) where a sleeping worker is woken and run at once. */
enum { SLOW_YIELD_NS = 100 * 1000 };
/* An idle wait (a slow yield, or a quiet worker's sleep) fed the worker
 * when, from its start, outside submissions and tasks run here came at one
 * per DENSE_NS (after a sleep, and DENSE_MIN or more: a burst of a late
 * producer is not a flood): a producer flooding the pool, to which the
 * yield handed the CPU, and not a neighbour's own work. 30 us, not less:
 * a bounded pool's producer waits for room, so after a 1 ms stall a
 * worker finds about one task per 10 us (bench_submit's "bound 64" row
 * was 10 % slower at 10 us); a job every 100 us is not a flood. */
enum { DENSE_NS = 30 * 1000, DENSE_MIN = 64 };
/* A quiet spell, when the worker sleeps without polling: the first lasts
 * QUIET_MIN_NS, each later one twice the last, up to QUIET_MAX_NS: the
 * probe that follows a spell (a few slow yields) delays whatever arrives
 * during it, once a spell; a spell costs only wake-ups if the neighbours
 * leave meanwhile. */
enum { QUIET_MIN_NS = 10 * 1000 * 1000, QUIET_MAX_NS = 1000 * 1000 * 1000 };
/* Two verdicts of one worker this close begin a spell (go_quiet). */
enum { STRIKE_NS = 20 * 1000 * 1000 };
/* Victims of each level an idle round looks at (the last look before a
 * sleep looks at all): a round touches a bounded number of lines however
 * large the pool, and a pool of up to 9 workers still looks at everyone
 * each round (design.md 5.10). */
enum { IDLE_VICTIMS = 8 };
/* POOL_IDLE_POLL_ADAPTIVE: the poll while no other thread wants a CPU. */
enum { AUTO_POLL_NS = 100 * 1000 };
/* What the adaptive poll keeps while other threads fill the CPUs: a few
 * looks without a yield, so that a producer in mid-flood (its next batch
 * a microsecond away) finds the worker awake rather than paying a wake and
 * the worker a sleep per gap; a few microseconds of a CPU, given back at
 * once when nothing comes. */
enum { BUSY_LOOK_NS = 5 * 1000 };

static inline uint32_t next_rand(ws_worker *w) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w->rng = x;
  return (uint32_t)(x >> 32);
}

/* Most entries one visit to the global queue takes: it bounds the time the
 * lock is held and the stack buffer, and leaves work for the other workers
 * when a flood arrives (Go caps its global-queue grabs likewise). A visit
 * takes that many when there are, all otherwise: the lock is the
 * producers' too, and each visit pulls its line, the lane's count and the
 * ring's last lines away from them (docs/design.md 3).
 * For the same reason a worker that is not idle yet takes only from lanes
 * whose hint says full (GQ_BATCH entries or more), and one that found
 * nothing else takes from a shorter lane only after PARTIAL_AFTER idle
 * rounds (a yield each, about a microsecond here): a producer that keeps a
 * lane short then hands over GQ_BATCH entries a visit rather than a few
 * dozen, and a lone task waits those few yields at most. */
enum { GQ_BATCH = WS_GQ_FULL, PARTIAL_AFTER = 4 };

/* Takes from the first lane of the global queue that holds work, starting
 * one past the lane it last took from, so that every lane is served under
 * a flood in all of them. When `full`, a short lane other than that first
 * one is passed over for a full one, and is the first one next time: it
 * waits one take at most, however long the flood in the others lasts. */
static size_t take_global(ws_worker *w, ws_gitem *it, bool full) {
  struct pool *p = w->pool;
  unsigned passed = WS_LANES; /* the first short lane passed over */
  for (unsigned k = 0; k < WS_LANES; k++) {
    unsigned l = (w->lane_next + k) % WS_LANES;
    ws_gqueue *q = &p->gq[l];
    if (!ws_gqueue_maybe_nonempty(q)) continue;
    if (full && k > 0 && !ws_gqueue_maybe_full(q)) {
      if (passed == WS_LANES) passed = l;
      continue;
    }
    size_t n = ws_gqueue_pop_batch(q, it, GQ_BATCH);
    if (n) {
      w->lane_next = passed < WS_LANES ? passed : (l + 1) % WS_LANES;
      return n;
    }
  }
  return 0;
}

/* Entries [0, n) taken off the global queue, run on the spot in queue
 * order: there was no memory for their batches, and they are ours now. */
static void run_taken(ws_worker *w, const ws_gitem *it, size_t n) {
  bool bounded = w->pool->cfg.max_queued != 0;
  for (size_t i = 0; i < n; i++) {
    ws_task *task = ws_gitem_task(&it[i]);
    if (!task) {
      ws_submit_run_direct(w, it[i].fn, it[i].arg, &w->stats.global_pops, bounded);
      continue;
    }
    ws_counter_add(&w->stats.global_pops, 1);
    ws_run(w, task);
  }
}

/* What a look finds after running tasks inside it: the newest on our
 * deque. The deque was empty when find_work called from_global, so all
 * of it came from those tasks (a loop's steal handle, a submit batch);
 * NULL would tell the worker loop it is empty, and it would sleep, or
 * leave a destroyed pool, with them stranded (design.md 5.5). */
static ws_task *left_here(ws_worker *w) {
  ws_task *own = ws_pop_own(w);
  if (own) ws_counter_add(&w->stats.local_pops, 1);
  return own;
}

/* One lock acquisition takes up to GQ_BATCH entries of a lane of the
 * global queue: the oldest start running now, the others go on this
 * worker's deque, where thieves spread them further. Returns the task to
 * run first: NULL only when it took nothing, or ran all of it here and
 * the deque is empty. */
static ws_task *from_global(ws_worker *w, bool full) {
  ws_gitem it[GQ_BATCH];
  size_t n = take_global(w, it, full);
  if (!n) return NULL;
  ws_counter_add(&w->stats.global_taken, n);
  /* Outside submissions are stored by value: each run of them becomes
   * submit batches (submit.c), one allocation per WS_BATCH_CAP entries;
   * runtime tasks go as they are. The deque pops newest first, so the
   * tasks are collected from the end of what was taken: the owner runs
   * them in queue order. A batch that cannot be allocated stops the
   * collection: that run and everything older run here first, in order. */
  ws_task *t[GQ_BATCH];
  size_t k = 0, end = n;
  while (end > 0) {
    ws_task *task = ws_gitem_task(&it[end - 1]);
    if (task) {
      t[k++] = task;
      end--;
      continue;
    }
    size_t start = end - 1;
    while (start > 0 && it[start - 1].fn && end - start < WS_BATCH_CAP) start--;
    ws_task *b = ws_submit_batch_of(w, it + start, end - start);
    if (!b) break;
    t[k++] = b;
    end = start;
  }
  run_taken(w, it, end);
  if (k == 0) return left_here(w);
  /* What runs straight from the queue counts as a global pop; the rest
   * count as local pops or steals when they leave the deque. */
  ws_task *first = t[--k];
  if (k && ws_push_n(w, t, k) != 0) {
    /* The deque cannot grow: run them here, oldest first. */
    ws_counter_add(&w->stats.global_pops, k + 1);
    ws_run(w, first);
    while (k) ws_run(w, t[--k]);
    return left_here(w);
  }
  ws_counter_add(&w->stats.global_pops, 1);
  return first;
}


/* Steals from victim v; NULL when it found nothing. Counted a steal (and a
 * remote one across NUMA nodes), or a steal failure. */
static ws_task *steal_from(ws_worker *w, ws_worker *v) {
  /* Profiled: a successful steal's time is the burden (profile.h). */
  uint64_t t0 = ws_prof_on(w->pool) ? ws_prof_now() : 0;
  for (;;) {
    int lost;
    ws_task *t = ws_deque_steal(&v->dq, &lost);
    if (t) {
      if (t0) ws_prof_steal(w, t0);
      /* Took its last public task: its owner's next spawn should publish. */
      if (ws_deque_empty_after_steal(&v->dq)) ws_ask_publish(v);
      ws_counter_add(&w->stats.steals, 1);
      if (w->trace) ws_trace_record(w->trace, WS_EV_STEAL, NULL, ws_trace_now(), v->id);
      if (ws_across_nodes(w, v)) ws_counter_add(&w->stats.steals_remote, 1);
      return t;
    }
    ws_counter_add(&w->stats.steal_failures, 1);
    /* Found it empty: ask the owner to publish its private frames at its
     * next spawn. */
    if (!lost) ws_ask_publish(v);
    /* Lost a race: someone took an item, but more may be there. Retry while
     * the victim looks non-empty, so one round is a complete look. */
    if (!lost) return NULL;
    if (ws_deque_size_hint(&v->dq) <= 0) {
      ws_ask_publish(v);
      return NULL;
    }
  }
}

/* One round of steals: the hint, then victims from a random start, nearest
 * level first, at most `cap` of each level and of the stand-ins. A
 * complete round (cap UINT_MAX) is what the sleep protocol's last look
 * needs (docs/design.md 5.2); the rounds before it sample, so that a
 * round's cost does not grow with the pool (design.md 5.10). */
static ws_task *steal_round(ws_worker *w, ws_worker *hint, unsigned cap) {
  struct pool *p = w->pool;
  if (hint && hint != w) {
    ws_task *t = steal_from(w, hint);
    if (t) return t;
  }
  unsigned lo = 0;
  for (unsigned l = 0; l < w->nlevels; l++) {
    unsigned hi = w->level_end[l], n = hi - lo;
    if (n) {
      unsigned at = next_rand(w) % n, m = n < cap ? n : cap;
      /* A wrapping index, not a division a victim: a last look over
       * thousands of workers is mostly this loop. */
      for (unsigned k = 0; k < m; k++, at = at + 1 < n ? at + 1 : 0) {
        unsigned vi = w->victims[lo + at];
        /* Relaxed: the fences of the sleep protocol order it (5.10). */
        if (vi == w->id || ws_u32_load(&p->asleep[vi], ws_relaxed)) continue;
        ws_worker *v = p->workers[vi];
        if (v == hint) continue;
        ws_task *t = steal_from(w, v);
        if (t) return t;
      }
    }
    lo = hi;
  }
  /* Then the stand-ins (docs/design.md 5.9), which push what their tasks
   * spawn and submit, and keep what they held when they parked: one relaxed
   * load while the pool has none. */
  unsigned ns = ws_standins_count(p);
  if (ns) {
    unsigned start = next_rand(w) % ns, m = ns < cap ? ns : cap;
    for (unsigned k = 0; k < m; k++) {
      ws_worker *v = ws_standin_at(p, (start + k) % ns);
      if (v == w || v == hint) continue;
      ws_task *t = steal_from(w, v);
      if (t) return t;
    }
  }
  return NULL;
}

/* A search found nothing. If pool_submit tasks finished here since the
 * last time, tell outside waiters (pool_wait_idle, destroy's drain) now:
 * the fence in ws_event_notify orders our `finished` stores before the
 * load of the waiter count, and pairs with the waiter's registration, so a
 * waiter either is seen or sees the counts (submit.c). Doing it here rather
 * than after every task keeps the fence off the per-task path; a worker
 * that ran the last task of a burst finds nothing right after it. */
static ws_task *nothing_found(ws_worker *w) {
  /* Room its started tasks made, for producers of a bounded pool. */
  if (w->bound_credit) ws_bound_flush(w);
  if (w->announce_idle) {
    w->announce_idle = false;
    ws_event_notify(&w->pool->ext);
  }
  return NULL;
}

/* One look: own deque, the global queue (only full lanes when `full`),
 * one round of steals (at most `cap` victims a level). */
static ws_task *find_work(ws_worker *w, ws_worker *hint, bool full, unsigned cap) {
  ws_task *t = ws_pop_own(w);
  if (t) {
    ws_counter_add(&w->stats.local_pops, 1);
    return t;
  }
  if (ws_global_maybe_nonempty(w->pool) && (t = from_global(w, full)) != NULL) return t;
  t = steal_round(w, hint, cap);
  return t ? t : nothing_found(w);
}

ws_task *ws_find_work(ws_worker *w, ws_worker *hint) { return find_work(w, hint, false, UINT_MAX); }

ws_task *ws_find_own_work(ws_worker *w) {
  ws_task *t = ws_pop_own(w);
  if (!t) return nothing_found(w);
  ws_counter_add(&w->stats.local_pops, 1);
  return t;
}

/* A pool whose global queue grew in a burst gives that memory back once it
 * has been idle IDLE_TRIM_NS: the last worker to fall asleep sleeps that
 * long first and, if nobody woke it, trims every lane before it sleeps for
 * good. A pool busy again sooner (the next round of a loop) keeps its
 * rings. */
enum { IDLE_TRIM_NS = 100 * 1000 * 1000 };

/* A sleeper's hint, once the heavy barrier has failed (sleep.h): a lane or
 * a deque of the pool holds work. */
static bool work_visible(void *ctx) {
  struct pool *p = ctx;
  if (ws_global_maybe_nonempty(p)) return true;
  for (unsigned i = 0; i < p->nthreads; i++)
    if (ws_deque_size_hint(&p->workers[i]->dq) > 0) return true;
  for (unsigned k = 0, ns = ws_standins_count(p); k < ns; k++)
    if (ws_deque_size_hint(&ws_standin_at(p, k)->dq) > 0) return true;
  return false;
}

/* Sleeps; true when a wake ended the sleep (ws_sleep_commit). */
static bool idle_sleep(struct pool *p, uint32_t e, ws_u32 *bell) {
  bool grown = false;
  for (unsigned l = 0; l < WS_LANES; l++) grown |= ws_gqueue_grown(&p->gq[l]);
  /* The last to sleep: awake stand-ins sleep here too (5.9). Relaxed: a
   * hint; a wrong guess trims early (a ring grows again) or not at all. */
  uint32_t threads = ws_u32_load(&p->size, ws_relaxed) + ws_u32_load(&p->active, ws_relaxed);
  if (!grown || ws_u32_load(&p->sleep.sleepers, ws_relaxed) < threads)
    return !ws_sleep_commit(&p->sleep, e, 0, work_visible, p, bell);
  if (!ws_sleep_commit(&p->sleep, e, IDLE_TRIM_NS, work_visible, p, bell)) return true;
  for (unsigned l = 0; l < WS_LANES; l++) ws_gqueue_trim(&p->gq[l]);
  return false;
}

/* How long an idle worker of p polls, in nanoseconds (0: not at all;
 * not called for POOL_IDLE_POLL_AUTO, which counts rounds).
 * Adaptive: not while the machine's other runnable threads fill every CPU
 * (busy.h). Each of them is what sched_yield() would run: the poll would
 * then hand our CPU to a thread the program or the machine needs, and
 * leave us queued behind it, runnable but not running, when our next task
 * arrives (a producer sees no sleeper and wakes nobody), where a sleeping
 * worker is woken and the scheduler runs it promptly. The pool's own awake
 * workers do not count: they are ours, and poll or work. The sleepers
 * count is a hint (relaxed): a wrong guess polls or sleeps once. */
static uint64_t idle_poll_ns(struct pool *p) {
  int us = p->cfg.idle_poll_us;
  if (us != POOL_IDLE_POLL_ADAPTIVE) return us > 0 ? (uint64_t)us * 1000u : 0;
  uint32_t asleep = ws_u32_load(&p->sleep.sleepers, ws_relaxed);
  /* Workers in use (pool_resize parks the others) and awake stand-ins. */
  uint32_t threads = ws_u32_load(&p->size, ws_relaxed) + ws_u32_load(&p->active, ws_relaxed);
  unsigned own = threads > asleep ? threads - asleep : 1;
  return ws_cpus_busy(own) ? 0 : AUTO_POLL_NS;
}

/* How long the last quiet spell lasted, for every worker of the process:
 * other threads filling the CPUs are the machine's state, not a pool's, so
 * a new pool's spells start where the others are. 0: none since the last
 * sign of a free CPU (a poll whose every yield came back at once).
 * Relaxed: a hint, written at verdicts; a lost update makes one spell
 * shorter or longer. */
static ws_u64 quiet_ns;

/* A slow yield that nothing fed: the poll ends. Alone it ends only this
 * poll: a stall of the whole machine (a virtual CPU taken away, a burst of
 * other work) looks the same, once. A second within STRIKE_NS of this
 * worker's last begins a quiet spell, each one twice the last (until a
 * free CPU is seen). */
static void go_quiet(ws_worker *w, uint64_t now) {
  if (now - w->strike_at > STRIKE_NS) {
    w->strike_at = now;
    return;
  }
  uint64_t q = ws_u64_load(&quiet_ns, ws_relaxed);
  q = q < QUIET_MIN_NS ? QUIET_MIN_NS : q >= QUIET_MAX_NS / 2 ? QUIET_MAX_NS : 2 * q;
  ws_u64_store(&quiet_ns, q, ws_relaxed);
  w->quiet_until = now + q;
}

/* Outside submissions to p so far: every lane's count. Relaxed: a rate,
 * read by one worker's decision to poll. */
static uint64_t outside_pushed(struct pool *p) {
  uint64_t n = 0;
  for (unsigned l = 0; l < WS_LANES; l++) n += ws_u64_load(&p->gq[l].fns_pushed, ws_relaxed);
  return n;
}

/* An idle wait begins: the pool's work from now on judges it. */
static void wait_begins(ws_worker *w, uint64_t now, bool slept) {
  w->waited_at = now;
  w->waited_pushed = outside_pushed(w->pool);
  w->waited_tasks = ws_u64_load(&w->stats.tasks, ws_relaxed);
  w->waited_slept = slept;
}

/* Since the wait began, outside submissions and tasks run here came at a
 * flood's rate: one per DENSE_NS (and at least `min`). */
static bool fed(ws_worker *w, uint64_t now, uint64_t min) {
  uint64_t n = outside_pushed(w->pool) - w->waited_pushed +
               (ws_u64_load(&w->stats.tasks, ws_relaxed) - w->waited_tasks);
  return n >= min && n * DENSE_NS >= now - w->waited_at;
}

/* Judges the last idle wait (a slow yield that found work, or a quiet
 * spell's sleep) by what came since; true when this idle search may poll. */
static bool may_poll(ws_worker *w, uint64_t now) {
  if (w->waited_at != 0) {
    if (fed(w, now, w->waited_slept ? DENSE_MIN : 1)) /* a flood: this worker polls */
      w->quiet_until = 0;
    else if (!w->waited_slept)
      go_quiet(w, now);
    w->waited_at = 0;
  }
  return now >= w->quiet_until;
}

/* POOL_IDLE_POLL_AUTO: SPIN_ROUNDS failed rounds with a yield before each,
 * unless the neighbour rule ends the poll: none in a quiet spell. A slow
 * yield is judged by what comes from its start on: one that found work,
 * when that busy spell ends (may_poll); one that did not, at the next
 * slow yield of the poll. The pool's lanes are read at the first slow
 * yield only (not at each look: producers write those lines), which
 * misses the submissions made during that yield; the tasks run here since
 * its start count them once they run. */
static ws_task *auto_poll(ws_worker *w) {
  uint64_t now = ws_mono_ns();
  w->quiet_sleep = !may_poll(w, now);
  if (w->quiet_sleep) return NULL;
  unsigned r = 0;
  bool slow = false; /* a yield of this poll took SLOW_YIELD_NS */
  for (; r < SPIN_ROUNDS; r++) {
    /* Relaxed: a hint to stop polling for a pool being destroyed, a
     * shrink waiting for this worker or a surplus stand-in, as in
     * idle_search. */
    if (ws_u32_load(&w->pool->stop, ws_relaxed) || ws_stepping_down(w)) break;
    uint64_t before = now;
    sched_yield();
    now = ws_mono_ns();
    ws_task *t = find_work(w, NULL, r < PARTIAL_AFTER, IDLE_VICTIMS);
    /* More workers of the process's pools awake than CPUs: the yield may
     * have run one of them, as the poll means to (Arora, Blumofe and
     * Plaxton, design.md 4), and proves no neighbour. */
    bool was_slow = now - before >= SLOW_YIELD_NS;
    slow |= was_slow;
    if (!was_slow || ws_awake() > ws_usable_cpus()) {
      if (!t) continue;
      w->waited_at = 0; /* a look found it: nothing to judge */
      return t;
    }
    if (w->waited_at == 0) {
      wait_begins(w, before, false);
    } else if (!t && !fed(w, now, 1)) { /* fed: a flood, poll on */
      go_quiet(w, now);
      w->quiet_sleep = true;
      w->waited_at = 0;
      return NULL;
    }
    if (t) return t;
  }
  /* Every yield came back at once, and nothing came: the CPUs have room
   * (a yield also returns at once while the scheduler owes this thread
   * time, so a fast yield that finds work proves nothing). */
  if (r == SPIN_ROUNDS && !slow) ws_u64_store(&quiet_ns, 0, ws_relaxed);
  w->waited_at = 0;
  return NULL;
}

/* Idle: failed rounds with a yield between them for the pool's poll
 * (POOL_IDLE_POLL_AUTO: auto_poll; ADAPTIVE on busy CPUs: a few
 * microseconds without yields), then the sleep protocol.
 * The first PARTIAL_AFTER rounds leave short lanes to fill up; the
 * sleeper's last look takes them. */
static ws_task *idle_search(ws_worker *w) {
  if (w->pool->cfg.idle_poll_us == POOL_IDLE_POLL_AUTO) return auto_poll(w);
  uint64_t poll = idle_poll_ns(w->pool);
  bool yield = poll != 0;
  if (!yield && w->pool->cfg.idle_poll_us == POOL_IDLE_POLL_ADAPTIVE) poll = BUSY_LOOK_NS;
  if (poll == 0) return NULL;
  uint64_t end = ws_mono_ns() + poll;
  for (unsigned r = 0;; r++) {
    if (yield)
      sched_yield();
    else
      ws_cpu_relax();
    ws_task *t = find_work(w, NULL, r < PARTIAL_AFTER, IDLE_VICTIMS);
    if (t) return t;
    /* Relaxed: hints to stop polling for a pool being destroyed, a
     * shrink waiting for this worker or a stand-in no region needs (a poll
     * may last a second); the checks after its last look decide
     * (docs/design.md 5.5, 5.9, 10.4). */
    if (ws_mono_ns() >= end || ws_u32_load(&w->pool->stop, ws_relaxed) || ws_stepping_down(w))
      return NULL;
  }
}

/* Stand-ins (docs/design.md 5.9, where the argument is). */
/* A surplus stand-in, between tasks, parks until a region wakes it or the
 * pool stops. What its deque holds stays there for thieves (steal_round
 * looks at every stand-in); its open submit batch is let go. False when it
 * did not park: still needed after all, or the pool is closing (then it
 * leaves through the loop's stop check, as a worker). */
static bool standin_park(ws_worker *w) {
  struct pool *p = w->pool;
  bool park = false;
  pthread_mutex_lock(&p->standin_lock);
  uint32_t a = ws_u32_load(&p->active, ws_relaxed); /* exact: written under the lock */
  uint32_t lim = ws_u32_load(&p->standin_limit, ws_relaxed);
  if (!p->standin_closing && a > 0) {
    /* Dekker's pattern with pool_blocking_begin (blocked += 1, then load
     * active), all seq_cst: our store of the decrement, then our load of
     * `blocked`. Whichever comes later in S sees the other: we see the new
     * region and stay, or it sees the decrement and wakes a stand-in. */
    ws_u32_store(&p->active, a - 1, ws_seq_cst);
    uint32_t b = ws_u32_load(&p->blocked, ws_seq_cst);
    park = a - 1 >= b || a - 1 >= lim; /* the others cover every region */
    if (park)
      ws_u32_store(&w->park, 1, ws_relaxed); /* read by its owner, and under the lock */
    else
      ws_u32_store(&p->active, a, ws_relaxed); /* still needed; nothing to publish */
  }
  pthread_mutex_unlock(&p->standin_lock);
  if (!park) return false;
  /* One thread fewer free: isolated sleepers look again (ws_none_free). */
  ws_wait_notify(&p->sleep);
  ws_submit_drop_open(w);
  /* Tell outside waiters about the submitted tasks it finished, as a
   * worker does once it finds nothing (a parked stand-in never does). */
  nothing_found(w);
  ws_u32_store(&w->doing, WS_DOING_PARKED, ws_relaxed); /* for pool_dump_state */
  ws_awake_add(-1);
  /* Acquire: pairs with the release store of 0 by whoever woke us (a
   * region's begin, or destroy after `stop`). */
  while (ws_u32_load(&w->park, ws_acquire) != 0) ws_futex_wait(&w->park, 1);
  ws_awake_add(1);
  ws_u32_store(&w->doing, WS_DOING_WORK, ws_relaxed);
  return true;
}

/* A worker beyond the pool's size (pool_resize, docs/design.md 10.4),
 * between tasks: parks until a grow or destroy clears `off`. */
static void resize_park(ws_worker *w) {
  /* Its reports and announcements first, as a sleeper's (nothing_found),
   * and its open batch let go (the entries stay on the deque for
   * thieves). */
  nothing_found(w);
  ws_submit_drop_open(w);
  /* What its tasks left on its deque goes to the global queue, where the
   * others take it in turn with outside submissions: a thief looks there
   * before it steals, so a stream of submissions would hold it back for
   * as long as the stream lasts. Flags 0: counted where they were made;
   * FORCE: a destroy that closed the queue still drains it (design.md
   * 10.4). Without memory for the queue, the rest stays for thieves. */
  for (ws_task *t; (t = ws_pop_own(w)) != NULL;) {
    if (ws_push_global(w->pool, t, WS_GQ_FORCE) != 0) {
      if (ws_push(w, t) != 0) ws_run(w, t); /* where it came from, or here */
      break;
    }
  }
  uint32_t told = 1;
  /* seq_cst: release, its last task happens before the resizer's acquire
   * load of 2 (the shrink returns after it); acquire, pairs with the
   * resizer's store; and Dekker with destroy (below). Fails when a grow
   * cleared it meanwhile. */
  if (!ws_u32_cas(&w->off, &told, 2, ws_seq_cst)) return;
  ws_futex_wake(&w->off, INT_MAX);
  ws_u32_store(&w->doing, WS_DOING_PARKED, ws_relaxed); /* for pool_dump_state */
  /* A shrink that entered before destroy's close may store its 1 after
   * destroy's exchange of 0 (design.md 10.4): destroy then never clears
   * this 2. seq_cst load of `stop` after the CAS, against destroy's store
   * of `stop` before its exchange: we see `stop`, or the exchange sees our
   * 2 and wakes us. Acquire on `off`: pairs with the grow's release store
   * or destroy's exchange. Left at 2 on a stop: the loop's next
   * resize_park fails its CAS and returns, and the loop leaves through its
   * `stop` check. */
  ws_awake_add(-1);
  while (ws_u32_load(&w->off, ws_acquire) == 2 && !ws_u32_load(&w->pool->stop, ws_seq_cst))
    ws_futex_wait(&w->off, 2);
  ws_awake_add(1);
  ws_u32_store(&w->doing, WS_DOING_WORK, ws_relaxed);
}

/* Worker w's word of p->asleep, for its deque (docs/design.md 5.10):
 * QUIET only while its deque is empty and before it sleeps or leaves,
 * AWAKE before it looks for work again (any push follows). Relaxed: the
 * sleep protocol's fences order it. Stand-ins have none. With bells the
 * word is also its bell (sleep.h), which ws_sleep_commit makes ASLEEP. */
static void set_asleep(ws_worker *w, uint32_t v) {
  /* Asleep, or leaving, after a look that found nothing: its deque is
   * empty (ws_find_work's contract; design.md 5.5 rests on it). */
  WS_ASSERT(v == WS_BELL_AWAKE || ws_deque_size_hint(&w->dq) <= 0);
  if (w->id < w->pool->nthreads) ws_u32_store(&w->pool->asleep[w->id], v, ws_relaxed);
}

/* The bell w sleeps on: its word of p->asleep when the pool has bells. */
static ws_u32 *bell_of(ws_worker *w) {
  struct pool *p = w->pool;
  return p->sleep.bells && w->id < p->nthreads ? &p->asleep[w->id] : NULL;
}

/* What a worker registered to sleep does after its last look. */
typedef enum look_after { LOOK_SLEEP, LOOK_RUN, LOOK_AGAIN, LOOK_LEAVE } look_after;

/* The look after the sleep registration (design.md 5.1): SLEEP when it
 * found nothing; otherwise the registration is cancelled and the worker
 * runs *t (RUN), goes round the loop (AGAIN) or leaves (LEAVE). */
static look_after last_look(ws_worker *w, ws_task **t) {
  struct pool *p = w->pool;
  look_after how = LOOK_AGAIN;
  if ((*t = ws_find_work(w, NULL)) != NULL)
    how = LOOK_RUN;
  /* A lane holds entries pushed since our look (or passed over: a short
   * lane, ws_find_work takes any): look again rather than sleep. */
  else if (ws_global_maybe_nonempty(p))
    how = LOOK_AGAIN;
  else if (ws_u32_load(&p->stop, ws_seq_cst))
    how = LOOK_LEAVE;
  /* seq_cst, after the registration: either the resizer's wake (after
   * its seq_cst store of `off`) finds us registered, or we see it. */
  else if (!ws_u32_load(&w->off, ws_seq_cst))
    return LOOK_SLEEP;
  ws_sleep_cancel(&p->sleep);
  return how;
}

void ws_worker_loop(ws_worker *w) {
  struct pool *p = w->pool;
  bool ran = false;
  set_asleep(w, WS_BELL_AWAKE);
  ws_awake_add(1);

  for (;;) {
    /* After each task: a worker beyond the size parks; a stand-in no
     * region needs any more parks. Relaxed: its own word, read again
     * seq_cst before it sleeps (below). */
    if (ws_u32_load(&w->off, ws_relaxed)) resize_park(w);
    if (w->standin && ws_standin_surplus(p)) standin_park(w);
    ws_task *t = find_work(w, NULL, true, IDLE_VICTIMS);
    /* A worker that has run no task and was never woken (a new pool, a
     * grow) sleeps without the poll: the poll waits for the rest of a
     * burst it took part in, and a new pool of thousands of workers
     * polling at once would take the CPUs from the threads with work
     * (design.md 5.10). */
    if (!t && ran) t = idle_search(w);
    if (t) {
      ran = true;
      ws_run(w, t);
      continue;
    }
    /* Park rather than sleep here (an awake stand-in sleeps as a worker). */
    if (w->standin && ws_standin_surplus(p) && standin_park(w)) continue;
    /* A nap (design.md 5.3) once the worker ran a task: a new pool's
     * workers sleep until it is used, and a nap would wake each once. */
    uint32_t e = ws_sleep_prepare(&p->sleep, ran);
    look_after how = last_look(w, &t);
    if (how == LOOK_SLEEP) {
      ws_counter_add(&w->stats.sleeps, 1);
      uint64_t t0 = ws_trace_t0(w);
      if (w->quiet_sleep) wait_begins(w, ws_mono_ns(), true); /* judged by may_poll */
      ws_u32_store(&w->doing, ran ? WS_DOING_NAP : WS_DOING_SLEEP, ws_relaxed);
      set_asleep(w, WS_BELL_QUIET); /* not ringable in the nap */
      ws_awake_add(-1);
      /* The nap: a sleep that ends by a wake within it needs no heavy
       * barrier; past it, the barrier, and one more look. */
      if (ran && ws_sleep_nap(&p->sleep, e)) how = last_look(w, &t);
      if (how == LOOK_SLEEP) {
        ws_u32_store(&w->doing, WS_DOING_SLEEP, ws_relaxed);
        /* Woken (not on a timeout, spuriously or to stop): work was
         * published, and if others take it first this worker polls
         * before it sleeps again, as one that ran a task does, rather
         * than wait for another wake (a burst: design.md 5.4). */
        if (idle_sleep(p, e, bell_of(w)) && !ws_u32_load(&p->stop, ws_relaxed)) ran = true;
      }
      ws_awake_add(1);
      set_asleep(w, WS_BELL_AWAKE);
      ws_u32_store(&w->doing, WS_DOING_WORK, ws_relaxed);
      if (w->trace) ws_trace_record(w->trace, WS_EV_SLEEP, NULL, t0, 0);
    }
    if (how == LOOK_RUN) {
      ws_sleep_chain(&p->sleep);
      ran = true;
      ws_run(w, t);
      continue;
    }
    if (how == LOOK_AGAIN) continue;
    if (how == LOOK_LEAVE) {
      set_asleep(w, WS_BELL_QUIET); /* its deque is empty for good */
      break;
    }
    /* Woken to stop (docs/design.md 5.5): its deque is still empty (it
     * slept after an empty last look, and only it pushes), each other
     * thread's holds only what that thread runs or hands on before it
     * leaves, so it leaves at once unless a lane holds entries; then it
     * goes to the last look, which counts. Acquire: pairs with destroy's
     * seq_cst store; every push to a lane before the lane's close (or a
     * reserved one before the drain) happens before, so the hint shows it. */
    if (ws_u32_load(&p->stop, ws_acquire)) {
      if (ws_global_maybe_nonempty(p)) continue;
      set_asleep(w, WS_BELL_QUIET); /* its deque is empty for good */
      break;
    }
    t = ws_find_work(w, NULL);
    if (t) {
      ws_sleep_chain(&p->sleep);
      ran = true;
      ws_run(w, t);
    }
  }
  /* Thieves close a victim's fast path through a pointer into the
   * victim's thread-local block (ws_ask_publish), which goes away with its
   * thread: no thread ends until every worker of the pool has stopped
   * looking for work. */
  ws_awake_add(-1);
  uint32_t n = ws_u32_fetch_add(&p->stopped, 1, ws_acq_rel) + 1;
  if (n == p->nstarted) {
    ws_futex_wake(&p->stopped, INT_MAX);
  } else {
    /* Acquire: the other workers' last steals happen before we go on. */
    while ((n = ws_u32_load(&p->stopped, ws_acquire)) != p->nstarted) ws_futex_wait(&p->stopped, n);
  }
}
