/* SPDX-License-Identifier: MIT */
/* sleep.pml: the idle sleep/wake protocol (docs/design.md 5.1-5.4).
 *
 * Models (line numbers at commit 8a659a1; follow the names if they move):
 *   runtime/sleep.h   ws_sleep_notify     53-58  (its waiters check is in
 *                                                 wait.pml; waiters = 0 here)
 *   runtime/sleep.c   ws_sleep_wake_one   130-154 (its fence: 137)
 *                     ws_sleep_prepare    156-170 (its fence: seq_cst)
 *                     ws_sleep_nap        (after ws_sleep_prepare)
 *                     ws_sleep_cancel     172
 *                     ws_sleep_commit     183-189 (sleep_on 176-181; the
 *                                                 degraded timed wait is not modelled)
 *                     ws_sleep_chain      191 (passes one wake on,
 *                                                 whatever `fresh` says)
 *                     ring, wake_n        the bells (BELLS = 1, a pool
 *                                                 of more than WS_BELLS_MIN
 *                                                 workers): a wake rings an
 *                                                 ASLEEP one, else wakes the
 *                                                 epoch's waiters (nappers);
 *                                                 a thread woken rings two
 *                                                 at its first publication.
 *                                                 BELLS = 0: every sleeper
 *                                                 waits on the epoch
 *   runtime/fence.h   ws_light_fence      22-27
 *   runtime/fence.c   heavy_barrier 46-57, ws_sleeper_fence 63-66
 *   runtime/worker.c  ws_worker_loop      224-261: find_work and idle_search
 *                     are one look; last_look's re-look on a held lane
 *                     lock and its stop check are left out
 *   runtime/deque.h   ws_deque_pop 132, ws_deque_steal 154: a look fences
 *                     only at a deque that looks non-empty (design 2.2)
 * ws_sleep_commit may be a wait bounded by `ns` (worker.c idle_sleep: the
 * idle trim) that returns unwoken on a timeout, then clears `waking` and
 * looks as before: TIMED = 1 lets each worker's futex_wait return once
 * without a wake (also EINTR). Not modelled: wake_all (destroy, resize),
 * the degraded path's timed waits, the wake depth.
 *
 * Threads: NW workers running ws_worker_loop; NP producers that each push
 * NI tasks, each push followed by ws_sleep_notify (ws_after_push). With
 * SPAWN > 0 the first SPAWN tasks to run push a child from their worker
 * and notify (a worker as producer).
 *
 * Fences assumed. ASYM = 1 (membarrier works, the default): a producer's
 * ws_light_fence is a compiler fence only (no effect here); the sleeper's
 * last look follows a seq_cst fence, and a nap (a futex_wait whose timer
 * may fire at any moment) whose timeout runs ws_sleeper_fence, a seq_cst
 * fence plus membarrier, and looks once more (NAP = 0: a worker that has
 * run no task and was never woken, whose prepare runs ws_sleeper_fence
 * and which does not nap); ws_sleep_wake_one
 * starts with a seq_cst fence; a look fences only when it sees work (look);
 * futex_wait is a full barrier (the kernel's smp_mb before it reads the
 * word). ASYM = 0 (no membarrier): ws_light_fence is a seq_cst fence and
 * ws_sleeper_fence a seq_cst fence alone.
 *
 * Weak memory. Promela is sequentially consistent, so each thread has a
 * FIFO store buffer (bv/bd/bn) for the variables whose order matters: the
 * queue q (a push is a release store of a deque's bottom or of a lane),
 * `sleepers` and `waking`. Stores go into the buffer, and so does the store
 * half of an RMW whose result is unused (sleepers += 1 / -= 1: a seq_cst
 * RMW does not order later relaxed or acquire loads on arm64); counters are
 * buffered as deltas, so concurrent RMWs stay atomic. The `memory` process
 * drains the oldest entry of any buffer at any time. A thread reads its own
 * newest buffered value first (store forwarding). A seq_cst fence drains
 * the thread's buffer; membarrier drains every thread's buffer in one step
 * (each thread passes a full barrier at some moment of the call; draining
 * them all as the call starts leaves the stores made during the call
 * buffered, which promises no more than the kernel does). RMWs whose
 * result is used (CAS of waking, epoch += 1, the take of a task) drain the
 * own buffer and act on memory atomically. Loads stay in program order, so
 * this is TSO plus buffered RMW stores: store->load reordering, the one the
 * fences here exist for. A fence is merged into the thread's next shared
 * step (fence then load back to back is a real schedule; the memory
 * process may drain any buffer earlier). The queues are one counter.
 *
 * Property (no lost wake-up): when nothing can move any more (`timeout`:
 * producers finished, every buffer drained, every worker blocked in
 * futex_wait), no task is left and every task ran; also `waking` is 0 then
 * (no wake stuck "in flight", design 5.4). A safety check of the
 * quiescent states, so pan runs with -DSAFETY, which also reports any other
 * deadlock as an invalid end state. An LTL formula ("always eventually the
 * queue is empty") says the same but needs weak fairness for the memory
 * process and a cycle search, for no stronger result on a terminating model.
 *
 * Seeded faults (each must give a counterexample):
 *   NO_SLEEPER_FENCE   no fence before the last look, nor after the nap
 *                      (also with ASYM=0: a look that finds nothing does
 *                      not fence)
 *   NO_MEMBARRIER      ws_sleeper_fence without membarrier (its seq_cst
 *                      fence only) while producers fence the compiler only
 *   NO_NAP_LOOK        a nap that timed out commits without looking again
 *   NO_PRODUCER_FENCE  ASYM=0: ws_light_fence fences nothing
 *   NO_RECHECK         commit without the last look after prepare (with
 *                      ASYM=0; with ASYM=1 the nap's look covers it)
 *   LATE_EPOCH         e = epoch read after the last look
 *   NO_PREPARE_CLEAR   ws_sleep_prepare does not clear `waking`
 *   NO_EPOCH_FALLBACK  a wake that rang too few bells does not wake the
 *                      epoch's waiters (a stand-in without a bell, NBELL <
 *                      NW, then sleeps on with the task queued)
 *   NO_BELL_EPOCH      ws_sleep_commit blocks on its bell without reading
 *                      the epoch after storing ASLEEP (a wake that rang
 *                      before the store rang nobody)
 *   NO_RING_WAKE       a ring claims a bell (RUNG) and never wakes its
 *                      futex
 * Not faults under this property (no counterexample; README.md):
 *   NO_COMMIT_CLEAR    ws_sleep_commit does not clear `waking` (the next
 *                      ws_sleep_prepare does; its look may pass the clear
 *                      anyway, design 5.4)
 *   NO_WAKE_ONE_FENCE  ws_sleep_wake_one without its seq_cst fence
 *   NO_CHAIN           no ws_sleep_chain after a look that found work */

#ifndef NW
#define NW 2            /* workers, 1..4 */
#endif
#ifndef NP
#define NP 1            /* producers */
#endif
#ifndef NI
#define NI 2            /* tasks per producer */
#endif
#ifndef SPAWN
#define SPAWN 0         /* tasks whose run pushes a child */
#endif
#ifndef ASYM
#define ASYM 1          /* 1: membarrier works, light fence = compiler fence */
#endif
#ifndef NAP
#define NAP 1           /* 0: a worker never used nor woken (no nap) */
#endif
#ifndef BELLS
#define BELLS 0         /* 1: workers sleep on bells (a pool of > 8 workers) */
#endif
#ifndef NBELL
#define NBELL NW        /* with BELLS: workers 0..NBELL-1 have a bell, the
                           others (stand-ins) sleep on the epoch */
#endif
#ifndef BATCH
#define BATCH 0         /* 1 (with BELLS): a producer rings a sleeper of its
                           own before its notify (ws_sleep_wake_more) */
#endif
#ifndef TIMED
#define TIMED 0         /* 1: each worker's futex_wait may return once unwoken */
#endif
#define NT (NW + NP)    /* threads, at most 6; workers are 0..NW-1 */
#define BS 5            /* store buffer entries per thread (asserted) */
#define TOTAL (NP * NI + SPAWN)

#define V_Q        1
#define V_SLEEPERS 2
#define V_WAKING   3

/* shared memory */
byte q;                 /* tasks visible in the queues */
byte sleepers;
byte waking;
byte epoch;             /* futex word; changed by RMWs only */
bit asleep[NW];         /* blocked in futex_wait(bell[i], ASLEEP) */
byte bell[NW];          /* 0 AWAKE, 1 ASLEEP, 3 RUNG (sleep.h); seq_cst
                           stores, loads and CASes only: never buffered */
#if TIMED
bit timed[NW];          /* its one unwoken return is used */
#endif
byte ran;               /* tasks run */
byte spawns = SPAWN;

/* store buffers: thread t owns entries t*BS .. t*BS+bn[t]-1, oldest first */
byte bv[NT * BS];       /* variable */
short bd[NT * BS];      /* value (waking) or delta (q, sleepers) */
byte bn[NT];
byte fk, ft;             /* scratch for d_steps, 0 between steps */

inline apply(v, d) {
  if
  :: v == V_Q -> q = q + d
  :: v == V_SLEEPERS -> sleepers = sleepers + d
  :: v == V_WAKING -> waking = d
  fi
}

/* drain the oldest entry of t's buffer */
inline flush1(t) {
  apply(bv[t * BS], bd[t * BS]);
  fk = 1;
  do
  :: fk < bn[t] -> bv[t * BS + fk - 1] = bv[t * BS + fk]; bd[t * BS + fk - 1] = bd[t * BS + fk]; fk++
  :: else -> break
  od;
  bn[t]--;
  bv[t * BS + bn[t]] = 0;
  bd[t * BS + bn[t]] = 0;
  fk = 0
}

/* a seq_cst fence of thread t */
inline flushall(t) {
  do
  :: bn[t] > 0 -> flush1(t)
  :: else -> break
  od
}

/* membarrier: every thread's buffer */
inline flush_every() {
  ft = 0;
  do
  :: ft < NT -> flushall(ft); ft++
  :: else -> break
  od;
  ft = 0
}

/* a store, or the store half of an RMW whose result is unused (a delta) */
inline bput(t, v, d) {
  d_step {
    assert(bn[t] < BS);
    bv[t * BS + bn[t]] = v;
    bd[t * BS + bn[t]] = d;
    bn[t]++
  }
}

/* a relaxed load with store forwarding (use inside a d_step) */
inline rd(t, v, r) {
  if
  :: v == V_Q -> r = q
  :: v == V_SLEEPERS -> r = sleepers
  :: v == V_WAKING -> r = waking
  fi;
  fk = 0;
  do
  :: fk < bn[t] ->
     if
     :: bv[t * BS + fk] == v && v == V_WAKING -> r = bd[t * BS + fk]
     :: bv[t * BS + fk] == v && v != V_WAKING -> r = r + bd[t * BS + fk]
     :: else -> skip
     fi;
     fk++
  :: else -> break
  od;
  fk = 0
}

/* ws_light_fence (fence.h 22-27) */
#if ASYM || defined(NO_PRODUCER_FENCE)
#define LIGHT_FENCE(t) skip     /* compiler fence: nothing for the hardware */
#else
#define LIGHT_FENCE(t) flushall(t)
#endif


/* ws_sleeper_fence (fence.c 63-66): seq_cst fence, then heavy_barrier */
#if ASYM && !defined(NO_MEMBARRIER)
#define SLEEPER_FENCE(t) flush_every()
#else
#define SLEEPER_FENCE(t) flushall(t)
#endif

/* ws_sleep_prepare's fence: seq_cst when the heavy barrier follows the nap,
 * else ws_sleeper_fence (below) */
#if NAP
#define PREPARE_FENCE(t) flushall(t)
#else
#define PREPARE_FENCE(t) SLEEPER_FENCE(t)
#endif

/* ws_sleep_wake_one's own seq_cst fence (sleep.c 137) */
#ifdef NO_WAKE_ONE_FENCE
#define WAKE_ONE_FENCE(t) skip
#else
#define WAKE_ONE_FENCE(t) flushall(t)
#endif

/* wake_n(1) (sleep.c). With bells: after the waker's RMW of epoch, an
 * ASLEEP bell (any: its scan's start varies) is CASed to RUNG, and in a
 * later step (ring claims all its bells before it wakes any) its futex is
 * woken if it still reads RUNG; none ASLEEP: futex_wake(epoch), which
 * wakes a napper if one waits (nappers wait on the epoch; a sleeper not yet
 * ASLEEP reads the new epoch before it would block). Without bells:
 * futex_wake(epoch, 1). Two calls stand for wake_n(2), which wakes up to
 * two of the epoch's waiters once it rang fewer than two bells: the model
 * may wake one napper fewer there, and a napper's timer may end its nap
 * at any moment anyway; it wakes the first bell before it claims the
 * second, where the code claims both first: that only delays a wake the
 * model already lets any step come before. Uses the caller's local r (the
 * bell claimed, plus one). */
inline ring_one() {
  atomic {
    r = 0;
    if
#if BELLS
    :: bell[0] == 1 -> bell[0] = 3; r = 1
#if NW > 1
    :: bell[1] == 1 -> bell[1] = 3; r = 2
#endif
#if NW > 2
    :: bell[2] == 1 -> bell[2] = 3; r = 3
#endif
#if NW > 3
    :: bell[3] == 1 -> bell[3] = 3; r = 4
#endif
    :: else ->
#else
    :: true ->
#endif
#ifdef NO_EPOCH_FALLBACK
       skip
#else
       if
       :: asleep[0] && bell[0] == 0 -> asleep[0] = 0
#if NW > 1
       :: asleep[1] && bell[1] == 0 -> asleep[1] = 0
#endif
#if NW > 2
       :: asleep[2] && bell[2] == 0 -> asleep[2] = 0
#endif
#if NW > 3
       :: asleep[3] && bell[3] == 0 -> asleep[3] = 0
#endif
       :: else -> skip
       fi
#endif
    fi
  };
#if BELLS
  /* The wake: its owner blocked before the claim (or it finds the bell
   * rung and does not block; it read AWAKE or ASLEEP again: it took the
   * ring already). */
  d_step {
    if
#ifndef NO_RING_WAKE
    :: r > 0 && bell[r - 1] >= 3 -> asleep[r - 1] = 0
#endif
    :: else
    fi;
    r = 0
  }
#endif
}

/* ws_sleep_notify (sleep.h) and ws_sleep_wake_one (sleep.c); `fr`: the
 * caller's `fresh` (woken, has not published since: two rings past the
 * one-in-flight rule); ws_sleep_chain passes 0. Uses the caller's locals
 * r, ok. */
inline notify(t, fr) {
  d_step { LIGHT_FENCE(t); rd(t, V_SLEEPERS, r) }
  if
  :: r == 0
#if BELLS
  :: r != 0 && fr ->
     d_step { WAKE_ONE_FENCE(t); fr = 0; epoch++ };
     ring_one();
     ring_one()
#endif
  :: else ->
     d_step {
       WAKE_ONE_FENCE(t);
       rd(t, V_WAKING, r);                  /* a wake in flight: skip */
       if
       :: r == 0 ->
          flushall(t);                      /* CAS waking 0 -> 1 */
          if
          :: waking == 0 -> waking = 1; ok = 1
          :: else -> ok = 0
          fi
       :: else -> ok = 0
       fi
     };
     if
     :: ok -> d_step { epoch++; ok = 0 };   /* seq_cst RMW */
              ring_one()
     :: else
     fi
  fi;
  r = 0
}

/* A task taken if one is visible; its run is counted with the take. */
inline take(t) {
  if
  :: q > 0 -> q--; ran++; found = 1
  :: else -> found = 0
  fi
}

/* A look (find_work; use inside a d_step, with the caller's local r): each
 * pop and steal compares its deque's indices relaxed first and fences only
 * when the deque looks non-empty (deque.h, design 2.2), so a look that
 * finds nothing may pass the thread's own buffered stores; what it finds
 * it takes after a fence (the steal's, or a lane's lock). */
inline look(t) {
  rd(t, V_Q, r);
  if
  :: r > 0 -> flushall(t); take(t)
  :: else -> found = 0
  fi;
  r = 0
}

/* The task just taken runs: it may push a child (ws_push: push, notify). */
inline run_task(t) {
  found = 0;
  if
  :: d_step { spawns > 0 -> spawns-- };
     bput(t, V_Q, 1);
     notify(t, fresh)
  :: else
  fi
}

/* ws_sleep_commit without a bell: futex_wait(epoch, e) compares and
 * sleeps atomically, after the kernel's full barrier */
inline commit_epoch(t) {
  d_step {
    flushall(t);
    if
    :: epoch == e -> asleep[t] = 1
    :: else
    fi
  }
}

proctype worker(byte me) {
  byte e, r;
  bit ok, found, fresh, nofresh;
  do
  :: d_step { look(me) };                   /* find_work, idle_search */
     if
     :: found -> run_task(me)
     :: else ->
        /* ws_sleep_prepare */
        fresh = 0;
        bput(me, V_SLEEPERS, 1);            /* sleepers += 1 (seq_cst RMW) */
#ifndef LATE_EPOCH
        e = epoch;                          /* seq_cst load */
#endif
#ifndef NO_PREPARE_CLEAR
        bput(me, V_WAKING, 0);              /* waking = 0 (seq_cst store) */
#endif
        /* ws_sleep_prepare's seq_cst fence, then the last look */
        d_step {
#ifndef NO_SLEEPER_FENCE
          PREPARE_FENCE(me);
#endif
#ifndef NO_RECHECK
          look(me)
#else
          skip
#endif
        };
#if ASYM && NAP
        /* ws_sleep_nap: futex_wait(epoch, e) bounded by a timer, which may
         * fire at any moment; unwoken: the heavy barrier, one more look */
        if
        :: !found ->
           d_step {
             flushall(me);
             if
             :: epoch == e -> asleep[me] = 1
             :: else
             fi
           };
           if
           :: (asleep[me] == 0)             /* woken (or a stale wake) */
           :: d_step { asleep[me] -> asleep[me] = 0 }  /* the timeout */
           fi;
           /* a changed epoch: the commit returns at once; else the heavy
            * barrier and one more look */
           d_step {
             if
             :: epoch == e ->
#ifndef NO_SLEEPER_FENCE
                SLEEPER_FENCE(me);
#endif
#ifndef NO_NAP_LOOK
                look(me)
#else
                skip
#endif
             :: else
             fi
           }
        :: else
        fi;
#endif
        if
        :: found ->
           bput(me, V_SLEEPERS, -1);        /* ws_sleep_cancel */
           notify(me, nofresh);             /* ws_sleep_chain */
           run_task(me)
        :: else ->
#ifdef LATE_EPOCH
           e = epoch;
#endif
#if BELLS
           if
           :: me < NBELL ->
           /* ws_sleep_commit with a bell: ASLEEP (seq_cst store), the
            * epoch (seq_cst load), then futex_wait(bell, ASLEEP), which
            * compares and sleeps atomically (a later step: a ring may
            * come between) */
           d_step { flushall(me); bell[me] = 1 };
           if
#ifndef NO_BELL_EPOCH
           :: epoch == e ->
#else
           :: true ->
#endif
              d_step {
                if
                :: bell[me] == 1 -> asleep[me] = 1
                :: else
                fi
              }
           :: else
           fi
           :: else -> commit_epoch(me)      /* a stand-in: no bell */
           fi;
#else
           commit_epoch(me);
#endif
endsleep:  if
           :: (asleep[me] == 0)             /* woken */
#if TIMED
           :: d_step { asleep[me] && !timed[me] -> asleep[me] = 0; timed[me] = 1 }
#endif
           fi;
           /* xchg AWAKE (acquire: a bell is never buffered here, and a
            * ring skips RUNG as it skips AWAKE); woken: fresh */
           d_step {
#if BELLS
             bell[me] = 0;
             if
             :: epoch != e -> fresh = 1
             :: else
             fi;
#endif
             e = 0
           };
           bput(me, V_SLEEPERS, -1);        /* sleepers -= 1 */
#ifndef NO_COMMIT_CLEAR
           bput(me, V_WAKING, 0);           /* waking = 0 */
#endif
           d_step { look(me) };             /* look again */
           if
           :: found ->
#ifndef NO_CHAIN
              notify(me, nofresh);          /* ws_sleep_chain */
#endif
              run_task(me)
           :: else
           fi
        fi
     fi
  od
}

proctype producer(byte me) {
  byte k, r;
  bit ok, nofresh;
  do
  :: k < NI ->
     bput(me, V_Q, 1);                      /* publish the task */
#if BATCH
     /* ws_sleep_wake_more (a batch's own rings, before its notify): the
      * sleepers count as a hint, the epoch's RMW, a ring */
     d_step { rd(me, V_SLEEPERS, r) };
     if
     :: r != 0 -> d_step { flushall(me); epoch++; r = 0 }; ring_one()
     :: else -> r = 0
     fi;
#endif
     notify(me, nofresh);                   /* ws_after_push */
     k++
  :: else -> break
  od;
  k = 0
}

/* The memory system: drains the oldest store of any buffer, at any time. */
active proctype memory() {
end:
  do
  :: d_step { bn[0] > 0 -> flush1(0) }
  :: d_step { bn[1] > 0 -> flush1(1) }
#if NT > 2
  :: d_step { bn[2] > 0 -> flush1(2) }
#endif
#if NT > 3
  :: d_step { bn[3] > 0 -> flush1(3) }
#endif
#if NT > 4
  :: d_step { bn[4] > 0 -> flush1(4) }
#endif
#if NT > 5
  :: d_step { bn[5] > 0 -> flush1(5) }
#endif
  od
}

/* Quiescence: nothing else can move. No task may be left behind, and no
 * wake is left "in flight" (design 5.4: `waking` cannot stick). */
active proctype monitor() {
  timeout ->
  assert(q == 0 && ran == TOTAL);
  assert(waking == 0)
}

init {
  byte i;
  atomic {
    do
    :: i < NW -> run worker(i); i++
    :: else -> break
    od;
    do
    :: i < NT -> run producer(i); i++
    :: else -> break
    od;
    i = 0
  }
}
