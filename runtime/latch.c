/* SPDX-License-Identifier: MIT */
/* The completion latch's wait (latch.h; docs/design.md 5.6, 5.7). */
#include "latch.h"

#include <sched.h>

#include "split.h"

/* A waiting worker's looks for work before it sleeps: paused, then yielding;
 * about 0.1 ms in all (design.md 5.6). */
enum { WAIT_RELAX_ROUNDS = 32, WAIT_SPIN_ROUNDS = 96 };

/* seq_cst for an outside waiter (its half of the event's Dekker pair),
 * acquire for a worker (ws_wait_prepare's fence is its half). */
static bool holds(struct pool *p, const ws_latch *l, ws_order mo) {
  switch (l->kind) {
  case WS_LATCH_VALUE:
    return ws_u32_load(l->word, mo) == l->value;
  case WS_LATCH_ZERO:
    return (ws_i64_load(l->count, mo) & l->mask) == 0;
  default:
    return ws_submits_idle(p);
  }
}

/* Its own deque always; foreign work only while its stack allows (7.3).
 * Isolated (ws_isolation): its own deque from the floor up, nothing else. */
static ws_task *help_find(ws_worker *w, ws_worker *hint, const ws_scope *iso) {
  if (iso) {
    ws_task *t = ws_pop_own_from(w, iso->floor);
    if (t) ws_counter_add(&w->stats.local_pops, 1);
    return t;
  }
  return ws_may_help(w) ? ws_find_work(w, hint) : ws_find_own_work(w);
}

/* What pool_dump_state shows of a worker's wait (scheduler.h). */
typedef struct wait_note {
  uint32_t doing, kind;
  void *word;
  uint64_t value;
} wait_note;

/* Relaxed: read only by a diagnostic. */
static wait_note note_get(ws_worker *w) {
  return (wait_note){ws_u32_load(&w->doing, ws_relaxed), ws_u32_load(&w->wait_kind, ws_relaxed),
                     ws_ptr_load(&w->wait_word, ws_relaxed),
                     ws_u64_load(&w->wait_value, ws_relaxed)};
}

static void note_set(ws_worker *w, wait_note n) {
  ws_u32_store(&w->wait_kind, n.kind, ws_relaxed);
  ws_ptr_store(&w->wait_word, n.word, ws_relaxed);
  ws_u64_store(&w->wait_value, n.value, ws_relaxed);
  ws_u32_store(&w->doing, n.doing, ws_relaxed);
}

/* What a wait on `l` shows in pool_dump_state. */
static wait_note note_of(const ws_latch *l) {
  return (wait_note){WS_DOING_WAIT, l->kind,
                     l->kind == WS_LATCH_ZERO ? (void *)l->count : (void *)l->word, l->value};
}

/* A worker helps until the latch holds; after WAIT_SPIN_ROUNDS empty looks
 * it publishes its private frames and sleeps on the pool's waiter word.
 * Isolated, it returns false there instead: it may run only its own deque
 * above the floor, which no other thread pushes to, so nothing more will
 * come within its reach (design.md 7.5). */
static bool help(ws_worker *w, const ws_latch *l, ws_worker *hint) {
  struct pool *p = w->pool;
  ws_sleep *s = &p->sleep;
  unsigned idle = 0;
  bool held = true;
  /* For pool_dump_state: relaxed, read only by a diagnostic. Tasks run
   * while helping may wait in turn: the outer wait is restored after. */
  wait_note outer = note_get(w);
  const ws_scope *iso = ws_isolation();
  note_set(w, note_of(l));
  while (!holds(p, l, ws_acquire)) {
    ws_task *t = help_find(w, hint, iso);
    if (t) {
      ws_run(w, t);
      idle = 0;
      continue;
    }
    if (++idle < WAIT_SPIN_ROUNDS) {
      if (idle < WAIT_RELAX_ROUNDS)
        ws_cpu_relax();
      else
        sched_yield();
      continue;
    }
    size_t npriv = (size_t)(ws_top() - w->priv_lo);
    if (npriv) {
      ws_publish(w, npriv);
      /* Published (now in the deque, where help_find sees them): look
       * again. If the deque could not grow, sleep all the same. */
      if ((size_t)(ws_top() - w->priv_lo) < npriv) {
        idle = 0;
        continue;
      }
    }
    if (iso) {
      held = false;
      break;
    }
    uint32_t e = ws_wait_prepare(s);
    if (holds(p, l, ws_acquire)) {
      ws_wait_cancel(s);
      break;
    }
    t = help_find(w, hint, iso);
    if (t || (ws_may_help(w) && ws_global_maybe_nonempty(p))) {
      /* Work, or a lane that filled since the look. */
      ws_wait_cancel(s);
      if (t) ws_run(w, t);
      idle = 0;
      continue;
    }
    ws_wait_commit(s, e);
    idle = 0;
  }
  note_set(w, outer);
  return held;
}

/* Sets the waiter bit of a ZERO latch after the registration (a completer
 * that sees it sees the registration), or clears it once the count is zero
 * (no completer decides on it then; a reused object wakes nobody). */
static void mark_waiter(const ws_latch *l, bool set) {
  int64_t v = ws_i64_load(l->count, ws_relaxed);
  if (set) {
    while ((v & l->mask) != 0 && !(v & l->waiter_bit) &&
           !ws_i64_cas(l->count, &v, v | l->waiter_bit, ws_seq_cst)) {
    }
  } else {
    while ((v & l->waiter_bit) && (v & l->mask) == 0 &&
           !ws_i64_cas(l->count, &v, v & ~l->waiter_bit, ws_acq_rel)) {
    }
  }
}

/* Any other thread blocks on the pool's event (sleep.h). */
void ws_latch_block(struct pool *p, const ws_latch *l) {
  if (holds(p, l, ws_seq_cst)) return;
  ws_event_prepare(&p->ext);
  bool flag = l->kind == WS_LATCH_ZERO && l->waiter_bit;
  if (flag) mark_waiter(l, true);
  for (;;) {
    uint32_t e = ws_event_epoch(&p->ext);
    if (holds(p, l, ws_seq_cst)) break;
    ws_event_wait(&p->ext, e);
  }
  ws_event_finish(&p->ext);
  if (flag) mark_waiter(l, false);
}

bool ws_latch_help(struct pool *p, const ws_latch *l, ws_worker *hint) {
  ws_worker *w = ws_self();
  if (w && w->pool == p) return help(w, l, hint);
  ws_latch_block(p, l);
  return true;
}

ws_slept ws_latch_sleep_once(ws_worker *w, const ws_latch *l, bool check_free) {
  ws_sleep *s = &w->pool->sleep;
  wait_note outer = note_get(w);
  ws_slept r = WS_SLEPT_WOKEN;
  note_set(w, note_of(l));
  uint32_t e = ws_wait_prepare(s);
  if (holds(w->pool, l, ws_acquire))
    r = WS_SLEPT_HELD;
  else if (check_free && ws_none_free(w->pool))
    r = WS_SLEPT_NONE_FREE;
  if (r == WS_SLEPT_WOKEN)
    ws_wait_commit(s, e);
  else
    ws_wait_cancel(s);
  note_set(w, outer);
  return r;
}
