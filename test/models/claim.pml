/* SPDX-License-Identifier: MIT */
/* claim.pml: the submit batch claim, Cilk's THE protocol with the
 * asymmetric barrier (docs/design.md 9.1).
 *
 * Models (line numbers at commit 8a659a1; follow the names if they move):
 *   runtime/submit.c  claim        121-137  the runner's claim of entry i
 *                     batch_run    149-175  entry 0, then claims 1..end-1;
 *                                           the initial next = 1,
 *                                           claim_end = end, final = 0 (154-156)
 *                     take_rest    188-201  the handle's taker
 *                     handle_exec  203-227  the taker runs [i, end) (its own
 *                                           batch; here: marked run by it)
 *   runtime/fence.h/.c ws_light_fence 22-27, ws_heavy_fence 68-75 (the
 *                     degraded grace period is not modelled)
 *
 * Threads: the runner (thread 0) runs entries 0..END-1 of a closed batch;
 * the thief (thread 1) may take the handle at any moment, or never. The
 * handle may also be taken on the runner's own thread (an entry that
 * helps pops it: test own_handle; or the runner's pop after batch_run
 * returns): take_rest then skips the heavy fence (b->runner == w). Taking
 * the handle off a deque is exclusive (the deque's CAS): one taker.
 *
 * Fences assumed (ASYM = 1, membarrier works): the runner's light fence
 * is a compiler fence only; the taker's ws_heavy_fence is a seq_cst fence
 * plus membarrier. ASYM = 0: both are seq_cst fences.
 *
 * Weak memory: Promela is sequentially consistent, so each thread has a
 * FIFO store buffer: the runner's stores of `next` (relaxed), the thief's
 * of `claim_end` (relaxed) and `final` (release: FIFO keeps it after
 * claim_end). The `memory` process drains the oldest entry of either
 * buffer at any time; a thread reads its own newest buffered value first.
 * A seq_cst fence drains the own buffer, membarrier both (one step, merged
 * with the taker's following load of `next`). Loads stay in program order
 * (TSO): the store->load reordering the two fences exist for. On the
 * runner's own thread the taker's stores go straight to memory: only that
 * thread reads them (the handle is gone), so forwarding would give the same.
 *
 * Property: every entry runs exactly once, by the runner or by the taker.
 * Each run asserts the entry had not run (no double run); at quiescence
 * (`timeout`) every entry has run (none lost). pan -DSAFETY.
 *
 * Seeded faults (each must give a counterexample):
 *   NO_TAKER_FENCE   take_rest without ws_heavy_fence
 *   NO_MEMBARRIER    ws_heavy_fence without membarrier (seq_cst fence only)
 *                    while the runner fences the compiler only (ASYM=1)
 *   NO_RUNNER_FENCE  ASYM=0: claim's ws_light_fence fences nothing
 *   NO_RECHECK       take_rest keeps its first read of next (no second load)
 *   NO_FINAL_WAIT    claim gives up when it sees claim_end <= i, without
 *                    waiting for `final` */

#ifndef END
#define END 4           /* entries in the batch */
#endif
#ifndef ASYM
#define ASYM 1
#endif
#define R 0             /* the runner's thread */
#define T 1             /* the thief's thread */
#define NT 2
#define BS 4

#define V_NEXT  1
#define V_CEND  2
#define V_FINAL 3

/* shared memory, as batch_run leaves it before pushing the handle */
byte next = 1;
byte claim_end = END;
byte final = 0;
bit taken;              /* the handle has been taken off a deque */
byte ran[END];          /* runs of each entry */

byte bv[NT * BS];
byte bd[NT * BS];
byte bn[NT];
byte fk, ft;             /* scratch for d_steps, 0 between steps */

inline apply(v, d) {
  if
  :: v == V_NEXT -> next = d
  :: v == V_CEND -> claim_end = d
  :: v == V_FINAL -> final = d
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

inline bput(t, v, d) {
  d_step {
    assert(bn[t] < BS);
    bv[t * BS + bn[t]] = v;
    bd[t * BS + bn[t]] = d;
    bn[t]++
  }
}

/* a load with store forwarding (inside a d_step) */
inline rd(t, v, r) {
  if
  :: v == V_NEXT -> r = next
  :: v == V_CEND -> r = claim_end
  :: v == V_FINAL -> r = final
  fi;
  fk = 0;
  do
  :: fk < bn[t] ->
     if
     :: bv[t * BS + fk] == v -> r = bd[t * BS + fk]
     :: else -> skip
     fi;
     fk++
  :: else -> break
  od;
  fk = 0
}

/* the runner's ws_light_fence in claim (submit.c 125) */
#if ASYM || defined(NO_RUNNER_FENCE)
#define LIGHT_FENCE(t) skip
#else
#define LIGHT_FENCE(t) flushall(t)
#endif

/* the taker's ws_heavy_fence (submit.c 195) */
#if defined(NO_TAKER_FENCE)
#define HEAVY_FENCE(t) skip
#elif ASYM && !defined(NO_MEMBARRIER)
#define HEAVY_FENCE(t) flushall(0); flushall(1)
#else
#define HEAVY_FENCE(t) flushall(t)
#endif

/* entry k runs once (run_entry) */
inline run_entry(k) {
  d_step { assert(ran[k] == 0); ran[k]++ }
}

/* the taker runs its entries [from, END) (handle_exec: its own batch) */
inline run_rest(from) {
  do
  :: from < END -> run_entry(from); from++
  :: else -> break
  od
}

/* take_rest + handle_exec on the runner's own thread: no fence; the
 * runner's stores of next are its own (forwarded). */
inline self_take() {
  d_step { rd(R, V_NEXT, n) };
  if
  :: n >= END -> skip                       /* all claimed: nothing */
  :: else ->
     d_step { claim_end = n; final = n + 1 };
     run_rest(n)
  fi;
  n = 0
}

proctype runner() {
  byte i, ce, n;
  bit ok;
  run_entry(0);                                   /* entry 0 is the runner's */
  i = 1;
  do
  :: i < END ->
     /* claim(b, i) */
     bput(R, V_NEXT, i + 1);                /* next = i + 1 (relaxed) */
     d_step { LIGHT_FENCE(R); rd(R, V_CEND, ce) };
     if
     :: i < ce -> ok = 1
     :: else ->
#ifdef NO_FINAL_WAIT
        ok = 0
#else
        (final != 0);                       /* the taker is deciding */
        d_step { ok = (i < final - 1) }
#endif
     fi;
     ce = 0;
     if
     :: ok ->
        ok = 0;
        run_entry(i);
        /* the entry may help and pop its own batch's handle */
        if
        :: d_step { !taken -> taken = 1 }; self_take()
        :: skip
        fi;
        i++
     :: else -> break
     fi
  :: else -> break
  od;
  i = 0;
  /* batch_run returned; the handle, if still there, is popped later */
  if
  :: d_step { !taken -> taken = 1 }; self_take()
  :: else
  fi
}

/* Another worker steals the handle (or never does) and runs take_rest. */
proctype thief() {
  byte n0, n1;
  if
  :: d_step { !taken -> taken = 1 };
     d_step { rd(T, V_NEXT, n0) };          /* i = next (relaxed) */
     if
     :: n0 >= END -> skip                   /* all claimed: no fence */
     :: else ->
        bput(T, V_CEND, n0);                /* claim_end = i */
#ifndef NO_RECHECK
        d_step { HEAVY_FENCE(T); rd(T, V_NEXT, n1) };  /* fence; i = next */
#else
        d_step { HEAVY_FENCE(T); n1 = n0 };
#endif
        bput(T, V_FINAL, n1 + 1);           /* final = i + 1 (release) */
        run_rest(n1)
     fi
  :: skip                                   /* no steal */
  fi;
  n0 = 0;
  n1 = 0
}

active proctype memory() {
end:
  do
  :: d_step { bn[0] > 0 -> flush1(0) }
  :: d_step { bn[1] > 0 -> flush1(1) }
  od
}

/* Quiescence: every entry ran (each run already asserted "only once"). */
active proctype monitor() {
  byte k;
  timeout;
  do
  :: k < END -> assert(ran[k] == 1); k++
  :: else -> break
  od
}

init {
  atomic {
    run runner();
    run thief()
  }
}
