/* SPDX-License-Identifier: MIT */
/* wait.pml: a waiting worker's sleep (docs/design.md 5.6).
 *
 * Models (line numbers at commit 8a659a1; follow the names if they move):
 *   runtime/latch.c   help                33-77: the condition (holds, 37 and
 *                     62), help_find (38, 66), ws_wait_prepare (61), cancel
 *                     (63, 69), ws_wait_commit (74). The pause/yield rounds
 *                     (44-50), the publication of private frames (51-60)
 *                     and the lane-lock re-look (67) are left out.
 *   runtime/latch.h   ws_latch_notify     41-44 (WS_WAKE_WORKER part)
 *   runtime/sleep.c   ws_wait_wake        123-128
 *                     ws_wait_prepare     198-207
 *                     ws_wait_cancel      209
 *                     ws_wait_commit      211-216 (sleep_on: no degraded wait)
 *                     ws_wait_notify      218-230
 *   runtime/sleep.h   ws_sleep_notify     53-58: its waiters check (55); the
 *                     idle sleepers are sleep.pml's (sleepers = 0 here)
 *   runtime/fence.h/.c ws_light_fence 22-27, ws_sleeper_fence 63-66
 *
 * Threads: waiter 0 waits for cond[0], which the completer sets (a release
 * store, then ws_latch_notify -> ws_wait_notify). With NWT = 2, waiter 1
 * waits for cond[1], which a task sets when it runs; the producer pushes
 * that task (ws_after_push -> ws_sleep_notify). Only the waiters run tasks
 * (no idle worker), so waiter 1 returns only if some waiter is woken for
 * the task: the waiters check in ws_sleep_notify is what this shows. With
 * NWT = 1 the task still exists and waiter 0 may run it (it completes
 * cond[1] then, its notify included). TC = 1 makes waiter 0 wait for the
 * task's cond[1] instead (no completer thread).
 *
 * Fences assumed (ASYM = 1, membarrier works): the producer's
 * ws_light_fence is a compiler fence only; ws_sleeper_fence in
 * ws_wait_prepare is a seq_cst fence plus membarrier; ws_wait_notify has a
 * seq_cst fence; a look (help_find) starts with the pop's seq_cst fence;
 * futex_wait is a full barrier. ASYM = 0: light fence = seq_cst fence,
 * ws_sleeper_fence = seq_cst fence.
 *
 * Weak memory as in sleep.pml: a FIFO store buffer per thread for q (the
 * task push), `waiters` (its RMWs' results are unused: buffered deltas) and
 * cond[] (the completing release store); the `memory` process drains them
 * at any time; a thread reads its own newest buffered value first; a
 * seq_cst fence drains the own buffer, membarrier every buffer (one step,
 * merged into the thread's next shared step); wait_epoch changes by RMWs
 * only, atomically. Loads stay in program order (TSO plus buffered RMW
 * stores).
 *
 * Property: the waiter never sleeps forever once its condition is set. At
 * quiescence (`timeout`: nothing can move) every waiter has returned. Run
 * with -DSAFETY; any other deadlock is an invalid end state.
 *
 * Seeded faults (each must give a counterexample):
 *   NO_WAITER_FENCE     ws_wait_prepare without ws_sleeper_fence
 *   NO_MEMBARRIER       ws_sleeper_fence without membarrier while the
 *                       producer's fence is a compiler fence (ASYM=1)
 *   NO_COMPLETER_FENCE  ASYM=0: ws_wait_notify without its seq_cst fence
 *   NO_WAITERS_CHECK    ws_sleep_notify does not wake waiting workers
 *   LATE_EPOCH          e = wait_epoch read after the condition check
 * Not a fault when ASYM=1: NO_COMPLETER_FENCE (the waiter's membarrier
 * drains the completer's buffer; README.md). */

#ifndef NWT
#define NWT 2           /* waiting workers, 1 or 2 */
#endif
#ifndef TC
#define TC 0            /* 1: waiter 0 waits for the task's cond[1] */
#endif
#ifndef ASYM
#define ASYM 1
#endif
#define C_ID NWT        /* the completer's thread id */
#define P_ID (NWT + 1)  /* the producer's */
#define NT (NWT + 2)
#define BS 3

#define V_Q       1
#define V_WAITERS 2
#define V_COND0   3
#define V_COND1   4

/* shared memory */
byte q;                 /* tasks visible (at most the one) */
byte waiters;
bit cond0, cond1;       /* the awaited words */
byte wait_epoch;        /* futex word; RMWs only */
bit asleep[NWT];        /* blocked in futex_wait(wait_epoch) */
byte returned;          /* waiters whose help() returned */
bit task_ran;

byte bv[NT * BS];
short bd[NT * BS];
byte bn[NT];
byte fk, ft;             /* scratch for d_steps, 0 between steps */

inline apply(v, d) {
  if
  :: v == V_Q -> q = q + d
  :: v == V_WAITERS -> waiters = waiters + d
  :: v == V_COND0 -> cond0 = d
  :: v == V_COND1 -> cond1 = d
  fi
}

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

inline flushall(t) {
  do
  :: bn[t] > 0 -> flush1(t)
  :: else -> break
  od
}

inline flush_every() {
  ft = 0;
  do
  :: ft < NT -> flushall(ft); ft++
  :: else -> break
  od;
  ft = 0
}

inline bput(t, v, d) {
  d_step {
    assert(bn[t] < BS);
    bv[t * BS + bn[t]] = v;
    bd[t * BS + bn[t]] = d;
    bn[t]++
  }
}

/* a load with store forwarding (inside a d_step); q and waiters are deltas */
inline rd(t, v, r) {
  if
  :: v == V_Q -> r = q
  :: v == V_WAITERS -> r = waiters
  :: v == V_COND0 -> r = cond0
  :: v == V_COND1 -> r = cond1
  fi;
  fk = 0;
  do
  :: fk < bn[t] ->
     if
     :: bv[t * BS + fk] == v && (v == V_COND0 || v == V_COND1) -> r = bd[t * BS + fk]
     :: bv[t * BS + fk] == v && v != V_COND0 && v != V_COND1 -> r = r + bd[t * BS + fk]
     :: else -> skip
     fi;
     fk++
  :: else -> break
  od;
  fk = 0
}

#if ASYM
#define LIGHT_FENCE(t) skip
#else
#define LIGHT_FENCE(t) flushall(t)
#endif

#if ASYM && !defined(NO_MEMBARRIER)
#define SLEEPER_FENCE(t) flush_every()
#else
#define SLEEPER_FENCE(t) flushall(t)
#endif

#if defined(NO_COMPLETER_FENCE)
#define COMPLETER_FENCE(t) skip
#else
#define COMPLETER_FENCE(t) flushall(t)
#endif

inline futex_wake_all() {
  d_step {
    asleep[0] = 0;
#if NWT > 1
    asleep[1] = 0
#endif
  }
}

/* ws_wait_wake (sleep.c 123-128) */
inline wait_wake(t) {
  d_step { flushall(t); wait_epoch++ };     /* seq_cst RMW */
  futex_wake_all()                          /* futex_wake(wait_epoch, INT_MAX) */
}

/* ws_wait_notify (sleep.c 218-230): fence, waiters load. Caller's local r. */
inline wait_notify(t) {
  d_step { COMPLETER_FENCE(t); rd(t, V_WAITERS, r) };
  if
  :: r != 0 -> r = 0; wait_wake(t)
  :: else
  fi
}

/* ws_sleep_notify's waiters check (sleep.h 54-55) */
inline sleep_notify(t) {
  d_step { LIGHT_FENCE(t); rd(t, V_WAITERS, r) };
#ifndef NO_WAITERS_CHECK
  if
  :: r != 0 -> r = 0; wait_wake(t)
  :: else
  fi
#else
  r = 0
#endif
  /* sleepers == 0: return (idle sleepers are sleep.pml's) */
}

/* help_find: the pop fences, then a task is taken if visible */
inline look(t) {
  d_step {
    flushall(t);
    if
    :: q > 0 -> q--; found = 1
    :: else -> found = 0
    fi
  }
}

/* the task runs on waiter t: it completes cond[1] (release store), then
 * ws_latch_notify(WS_WAKE_WORKER) */
inline run_task(t) {
  found = 0;
  d_step { assert(!task_ran); task_ran = 1 };
  bput(t, V_COND1, 1);
  wait_notify(t)
}

/* latch.c help(): wait until cond[c] holds */
proctype waiter(byte me; byte c) {
  byte e, r;
  bit found;
  do
  :: d_step { rd(me, V_COND0 + c, r) };     /* holds (acquire) */
     if
     :: r != 0 -> break
     :: else
     fi;
     look(me);                              /* help_find */
     if
     :: found -> run_task(me)
     :: else ->
        /* ws_wait_prepare */
        bput(me, V_WAITERS, 1);             /* waiters += 1 (seq_cst RMW) */
#ifndef LATE_EPOCH
        e = wait_epoch;                     /* seq_cst load */
#endif
        d_step {
#ifndef NO_WAITER_FENCE
          SLEEPER_FENCE(me);                /* ws_sleeper_fence */
#endif
          rd(me, V_COND0 + c, r)            /* holds */
        };
        if
        :: r != 0 ->
           r = 0;
           bput(me, V_WAITERS, -1);         /* ws_wait_cancel */
           break
        :: else
        fi;
#ifdef LATE_EPOCH
        e = wait_epoch;
#endif
        look(me);                           /* help_find */
        if
        :: found ->
           bput(me, V_WAITERS, -1);         /* ws_wait_cancel */
           run_task(me)
        :: else ->
           /* ws_wait_commit: futex_wait(wait_epoch, e), then waiters -= 1 */
           d_step {
             flushall(me);
             if
             :: wait_epoch == e -> asleep[me] = 1
             :: else
             fi;
             e = 0
           };
endsleep:  (asleep[me] == 0);
           bput(me, V_WAITERS, -1)
        fi
     fi
  od;
  r = 0;
  e = 0;
  returned++
}

/* A completer: the store that makes cond[0] true, then ws_latch_notify. */
proctype completer(byte me) {
  byte r;
  bput(me, V_COND0, 1);                     /* release store */
  wait_notify(me)
}

/* An outside producer: pushes the task, then ws_sleep_notify. */
proctype producer(byte me) {
  byte r;
  bput(me, V_Q, 1);
  sleep_notify(me)
}

active proctype memory() {
end:
  do
  :: d_step { bn[0] > 0 -> flush1(0) }
  :: d_step { bn[1] > 0 -> flush1(1) }
  :: d_step { bn[2] > 0 -> flush1(2) }
#if NT > 3
  :: d_step { bn[3] > 0 -> flush1(3) }
#endif
  od
}

/* Quiescence: no waiter may still be waiting. */
active proctype monitor() {
  timeout ->
  assert(returned == NWT)
}

init {
  atomic {
#if TC
    run waiter(0, 1);
#else
    run waiter(0, 0);
    run completer(C_ID);
#endif
#if NWT > 1
    run waiter(1, 1);
#endif
    run producer(P_ID)
  }
}
