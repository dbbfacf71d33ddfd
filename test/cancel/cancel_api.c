/* SPDX-License-Identifier: MIT */
/* Cancellation and errors (include/wspool.h, \ref cancel): what each call
 * returns, and what a cancelled or failed unit runs and skips.
 *
 *  errors        EINVAL for a NULL or uninitialised group (the latter not
 *                in a debug_checks build, which aborts on it) and for
 *                pool_fail(err <= 0) in a child, which records nothing;
 *                pool_fail() from main and from a plain thread is ENOENT,
 *                pool_cancelled() is 0 there; an empty group cancelled
 *                waits ECANCELED, then 0; a cancel cleared by
 *                pool_group_init(); pool_parallel_for_try() arguments.
 *  before_spawn  a group cancelled before its children are spawned skips
 *                every one of them (exact: none runs, skipped grows by N),
 *                cancelling again changes nothing, and the next round of
 *                the same group runs every child and waits 0; from an
 *                outside waiter and from a task, pools of 1, 2 and 4.
 *  fail_codes    N children fail with N distinct codes: exactly one
 *                pool_fail() returns 0, the others that ran EALREADY, the
 *                wait returns the winner's code, each failer then sees
 *                pool_cancelled(); ran + skipped == N; many rounds.
 *  fail_order    cancel then fail: EALREADY, the wait says ECANCELED;
 *                pool_fail(ECANCELED) returns 0 and the wait ECANCELED;
 *                fail then fail: EALREADY, the first code wins; fail then
 *                cancel (from the child, and from main after the child
 *                finished): the failure is what the wait returns.
 *  submitted     a task pool_submit()ted from a child belongs to no unit:
 *                it is not skipped when the child's group is cancelled, sees
 *                pool_cancelled() == 0, gets ENOENT from pool_fail(), and a
 *                group it opens is nested in nothing (runs all, waits 0).
 *  frames        frames (pool_spawn, POOL_TASK) are never skipped: a fib
 *                tree of frames run in a cancelled child, cancelled in the
 *                middle of the tree, or failed by one of its frames, gives
 *                the exact result with every frame run once; a frame that
 *                starts after the cancel sees pool_cancelled() == 1, frames
 *                of a unit never cancelled see 0; pool_fail() in a frame
 *                fails the spawner's unit; frames spawned from main belong
 *                to no unit (0, ENOENT).
 *  join          pool_join() halves failing (a, b, both, neither) from an
 *                outside caller and from a task: the join returns the
 *                winning code, each half runs at most once, the failing one
 *                ran, and halves run + skipped == 2 per join; called
 *                from the only worker of a pool, a half that fails first
 *                (a) always skips b, which cannot have started; a join in a
 *                cancelled child returns ECANCELED with the same accounting.
 *  loops         pool_parallel_for_try(): a body returning EILSEQ stops the
 *                loop with EILSEQ, a negative return is EINVAL, all zero is
 *                0 with every index once; pool_fail() in a plain body and
 *                in a pool_parallel_reduce() body (deterministic or not) is
 *                returned and the reduce's result is the identity; a clean
 *                reduce after a failed one is exact; bodies of clean loops
 *                see pool_cancelled() == 0; a loop run in a cancelled child
 *                returns ECANCELED with items run + skipped_items == n;
 *                from outside and from a task, pools of 1, 2 and 4.
 * No timing assertions; stress scales the round counts (WSPOOL_STRESS). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wspool.h>

#include "cancel_util.h"
#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

/* Distinct failure codes, far from the errno values the library returns
 * (ECANCELED, EALREADY, ...), so that a code is never mistaken for one. */
enum { CODE_BASE = 10000 };

/* Runs fn(arg) as a task of pool p and waits for it (the task is then the
 * waiter "inside" the pool). */
static void run_inside(pool_t *p, pool_fn fn, void *arg) {
  CHECK_OK(pool_submit(p, fn, arg));
  CHECK_OK(pool_wait_idle(p));
}

static void count_child(void *arg) { atomic_fetch_add((atomic_uint *)arg, 1); }

/* ---- errors ---------------------------------------------------------------- */

typedef struct err_res {
  int zero, neg, min, cancelled;
} err_res;

static void errors_child(void *arg) {
  err_res *r = arg;
  r->zero = pool_fail(0);
  r->neg = pool_fail(-1);
  r->min = pool_fail(INT_MIN);
  r->cancelled = pool_cancelled();
}

static void *plain_thread(void *arg) {
  int *out = arg;
  out[0] = pool_fail(EIO);
  out[1] = pool_cancelled();
  return NULL;
}

static int try_never(size_t b, size_t e, void *ctx) {
  (void)b;
  (void)e;
  (void)ctx;
  CHECK(0);
  return 0;
}

static void case_errors(void) {
  CHECK_EQ(pool_group_cancel(NULL), EINVAL);
  if (!WSPOOL_TEST_DEBUG_CHECKS) {
    /* A debug_checks build reports a never-initialised group and aborts. */
    pool_group_t z;
    memset(&z, 0, sizeof z);
    CHECK_EQ(pool_group_cancel(&z), EINVAL);
    memset(&z, 0xa5, sizeof z);
    CHECK_EQ(pool_group_cancel(&z), EINVAL);
  }
  /* main: outside every unit. */
  CHECK_EQ(pool_cancelled(), 0);
  CHECK_EQ(pool_fail(EIO), ENOENT);
  CHECK_EQ(pool_fail(ECANCELED), ENOENT);
  /* err <= 0 outside every unit: both conditions hold, the header does not
   * order them; either way nothing is recorded. */
  int rc = pool_fail(0);
  CHECK(rc == EINVAL || rc == ENOENT);
  rc = pool_fail(-7);
  CHECK(rc == EINVAL || rc == ENOENT);
  CHECK_EQ(pool_cancelled(), 0);
  /* A plain thread: the same. */
  int out[2] = {-1, -1};
  pthread_t t;
  CHECK_OK(pthread_create(&t, NULL, plain_thread, out));
  CHECK_OK(pthread_join(t, NULL));
  CHECK_EQ(out[0], ENOENT);
  CHECK_EQ(out[1], 0);

  pool_t *p = make_pool(2);
  /* pool_fail(err <= 0) in a child: EINVAL, nothing recorded. */
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  err_res r = {-1, -1, -1, -1};
  CHECK_OK(pool_group_spawn(&g, errors_child, &r));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(r.zero, EINVAL);
  CHECK_EQ(r.neg, EINVAL);
  CHECK_EQ(r.min, EINVAL);
  CHECK_EQ(r.cancelled, 0);

  /* An empty group, cancelled: the wait says ECANCELED and clears it. */
  CHECK_OK(pool_group_cancel(&g));
  CHECK_OK(pool_group_cancel(&g));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  CHECK_OK(pool_group_wait(&g));
  /* pool_group_init() clears a cancel too. */
  CHECK_OK(pool_group_cancel(&g));
  CHECK_OK(pool_group_init(&g, p));
  atomic_uint ran = 0;
  for (int i = 0; i < 10; i++) CHECK_OK(pool_group_spawn(&g, count_child, &ran));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(atomic_load(&ran), 10);

  CHECK_EQ(pool_parallel_for_try(p, 5, 4, 1, try_never, NULL), EINVAL);
  CHECK_EQ(pool_parallel_for_try(p, 0, 4, 1, NULL, NULL), EINVAL);
  CHECK_OK(pool_parallel_for_try(p, 7, 7, 1, try_never, NULL));
  CHECK_OK(pool_parallel_for_try(p, 7, 7, 0, try_never, NULL));
  CHECK_OK(pool_destroy(p));
}

/* ---- cancelled before the children are spawned ------------------------- */

enum { BS_N = 500 };

typedef struct bs_arg {
  pool_t *pool; /* for pool_group_init; NULL inside */
  atomic_uint *flags;
} bs_arg;

static void flag_child(void *arg) { atomic_fetch_add((atomic_uint *)arg, 1); }

/* Round 1: cancel, spawn BS_N, wait -> ECANCELED, none ran. Round 2 of
 * the same group: spawn BS_N, wait -> 0, each ran once. */
static void before_spawn_rounds(void *v) {
  bs_arg *a = v;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, a->pool));
  CHECK_OK(pool_group_cancel(&g));
  for (size_t i = 0; i < BS_N; i++) {
    CHECK_OK(pool_group_spawn(&g, flag_child, &a->flags[i]));
    if (i == BS_N / 2) CHECK_OK(pool_group_cancel(&g)); /* idempotent */
  }
  CHECK_OK(pool_group_cancel(&g));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  for (size_t i = 0; i < BS_N; i++)
    if (atomic_load(&a->flags[i]) != 0) FAIL("child %zu of a cancelled group ran\n", i);
  for (size_t i = 0; i < BS_N; i++) CHECK_OK(pool_group_spawn(&g, flag_child, &a->flags[i]));
  CHECK_OK(pool_group_wait(&g));
  flags_check_once(a->flags, BS_N, "child of the round after the cancel");
  CHECK_OK(pool_group_wait(&g)); /* nothing: 0 */
}

static void before_spawn(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    bs_arg a = {inside ? NULL : p, flags_alloc(BS_N)};
    if (inside)
      run_inside(p, before_spawn_rounds, &a);
    else
      before_spawn_rounds(&a);
    skip_expect(p, base, BS_N, 0, "cancelled before spawn");
    free(a.flags);
  }
}

static void case_before_spawn(void) { ON_POOLS(before_spawn, 1, 2, 4); }

/* ---- N children fail with N codes ----------------------------------------- */

enum { FC_N = 48 };

typedef struct failer {
  atomic_int ran;
  int code;
  int rc;
  int cancelled_after;
} failer;

static void fail_child(void *arg) {
  failer *f = arg;
  atomic_fetch_add(&f->ran, 1);
  busy_work((unsigned)(f->code % 5) * 200);
  f->rc = pool_fail(f->code);
  f->cancelled_after = pool_cancelled();
}

typedef struct fc_arg {
  pool_t *pool;
  failer f[FC_N];
  unsigned long rounds;
  uint64_t total_ran;
} fc_arg;

static void fail_codes_rounds(void *v) {
  fc_arg *a = v;
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, a->pool));
  for (unsigned long r = 0; r < a->rounds; r++) {
    for (int i = 0; i < FC_N; i++) {
      atomic_store(&a->f[i].ran, 0);
      a->f[i].code = CODE_BASE + (int)r * FC_N + i;
      a->f[i].rc = -1;
      a->f[i].cancelled_after = -1;
    }
    for (int i = 0; i < FC_N; i++) CHECK_OK(pool_group_spawn(&g, fail_child, &a->f[i]));
    int rc = pool_group_wait(&g);
    int winners = 0, winner = -1;
    for (int i = 0; i < FC_N; i++) {
      int ran = atomic_load(&a->f[i].ran);
      CHECK(ran == 0 || ran == 1);
      a->total_ran += (uint64_t)ran;
      if (!ran) continue;
      CHECK(a->f[i].rc == 0 || a->f[i].rc == EALREADY);
      CHECK_EQ(a->f[i].cancelled_after, 1);
      if (a->f[i].rc == 0) {
        winners++;
        winner = i;
      }
    }
    CHECK_EQ(winners, 1);
    CHECK_EQ(rc, a->f[winner].code);
  }
  /* The group is clean again: a round without failures waits 0. */
  atomic_uint ran = 0;
  for (int i = 0; i < FC_N; i++) CHECK_OK(pool_group_spawn(&g, count_child, &ran));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(atomic_load(&ran), FC_N);
}

static void fail_codes(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    fc_arg *a = calloc(1, sizeof *a);
    CHECK(a);
    a->pool = inside ? NULL : p;
    a->rounds = check_iters(200);
    if (inside)
      run_inside(p, fail_codes_rounds, a);
    else
      fail_codes_rounds(a);
    skip_expect(p, base, a->rounds * FC_N - a->total_ran, 0, "fail_codes");
    free(a);
  }
}

static void case_fail_codes(void) { ON_POOLS(fail_codes, 1, 2, 4); }

/* ---- the order of cancel and fail ------------------------------------------- */

typedef struct order_res {
  pool_group_t *g;
  int a, b, c, cancelled;
  atomic_int done;
} order_res;

static void cancel_then_fail(void *v) {
  order_res *o = v;
  o->a = pool_group_cancel(o->g);
  o->b = pool_fail(EIO);
  o->c = pool_fail(ECANCELED);
  o->cancelled = pool_cancelled();
}

static void fail_ecanceled(void *v) {
  order_res *o = v;
  o->a = pool_fail(ECANCELED);
  o->b = pool_fail(EIO);
  o->cancelled = pool_cancelled();
}

static void fail_fail_cancel(void *v) {
  order_res *o = v;
  o->a = pool_fail(EIO);
  o->b = pool_fail(EPERM);
  o->c = pool_group_cancel(o->g);
  o->cancelled = pool_cancelled();
}

static void fail_only(void *v) {
  order_res *o = v;
  o->a = pool_fail(EPIPE);
  atomic_store(&o->done, 1);
}

static void fail_order(pool_t *p) {
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  order_res o = {&g, -1, -1, -1, -1, 0};
  CHECK_OK(pool_group_spawn(&g, cancel_then_fail, &o));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  CHECK_OK(o.a);
  CHECK_EQ(o.b, EALREADY);
  CHECK_EQ(o.c, EALREADY);
  CHECK_EQ(o.cancelled, 1);

  o = (order_res){&g, -1, -1, -1, -1, 0};
  CHECK_OK(pool_group_spawn(&g, fail_ecanceled, &o));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  CHECK_OK(o.a);
  CHECK_EQ(o.b, EALREADY);
  CHECK_EQ(o.cancelled, 1);

  o = (order_res){&g, -1, -1, -1, -1, 0};
  CHECK_OK(pool_group_spawn(&g, fail_fail_cancel, &o));
  CHECK_EQ(pool_group_wait(&g), EIO);
  CHECK_OK(o.a);
  CHECK_EQ(o.b, EALREADY);
  CHECK_OK(o.c);
  CHECK_EQ(o.cancelled, 1);

  /* Failed by a child, then cancelled from main before the wait. */
  o = (order_res){&g, -1, -1, -1, -1, 0};
  CHECK_OK(pool_group_spawn(&g, fail_only, &o));
  while (!atomic_load(&o.done)) sched_yield();
  CHECK_OK(pool_group_cancel(&g));
  CHECK_EQ(pool_group_wait(&g), EPIPE);
  CHECK_OK(o.a);

  /* And clean after all that. */
  atomic_uint ran = 0;
  CHECK_OK(pool_group_spawn(&g, count_child, &ran));
  CHECK_OK(pool_group_wait(&g));
  CHECK_EQ(atomic_load(&ran), 1);
}

static void case_fail_order(void) { ON_POOLS(fail_order, 1, 2, 4); }

/* ---- a task submitted from a child ------------------------------------------ */

typedef struct sub_state {
  pool_group_t *g;
  atomic_int go, ran;
  int cancelled, fail_rc, group_rc, child_cancelled;
  atomic_uint kids;
} sub_state;

static void submitted_task(void *v) {
  sub_state *s = v;
  atomic_fetch_add(&s->ran, 1);
  while (!atomic_load(&s->go)) sched_yield();
  /* The child's cancel happened before `go`: were this task in the unit,
   * it would see it. */
  s->cancelled = pool_cancelled();
  s->fail_rc = pool_fail(EIO);
  pool_group_t g2;
  CHECK_OK(pool_group_init(&g2, NULL));
  for (int i = 0; i < 100; i++) CHECK_OK(pool_group_spawn(&g2, count_child, &s->kids));
  s->group_rc = pool_group_wait(&g2);
}

static void submitting_child(void *v) {
  sub_state *s = v;
  CHECK_OK(pool_submit(NULL, submitted_task, s));
  CHECK_OK(pool_group_cancel(s->g));
  s->child_cancelled = pool_cancelled();
  atomic_store(&s->go, 1);
}

static void submitted(pool_t *p) {
  for (int round = 0; round < 20; round++) {
    pool_group_t g;
    CHECK_OK(pool_group_init(&g, p));
    sub_state s = {&g, 0, 0, -1, -1, -1, -1, 0};
    CHECK_OK(pool_group_spawn(&g, submitting_child, &s));
    CHECK_EQ(pool_group_wait(&g), ECANCELED);
    CHECK_OK(pool_wait_idle(p));
    CHECK_EQ(s.child_cancelled, 1);
    CHECK_EQ(atomic_load(&s.ran), 1);
    CHECK_EQ(s.cancelled, 0);
    CHECK_EQ(s.fail_rc, ENOENT);
    CHECK_OK(s.group_rc);
    CHECK_EQ(atomic_load(&s.kids), 100);
  }
}

static void case_submitted(void) { ON_POOLS(submitted, 1, 2, 4); }

/* ---- frames ------------------------------------------------------------------ */

typedef struct fstate {
  pool_group_t *g;
  atomic_long run;         /* frames (fib calls) run */
  atomic_long saw_cancel;  /* frames that saw pool_cancelled() */
  atomic_long missed;      /* frames that started after the cancel and did not */
  atomic_int cancel_done;  /* the cancel returned (set after it) */
  long cancel_at;          /* the frame run with this number cancels g (-1: none) */
  long fail_at;            /* the frame run with this number fails (-1: none) */
  int fail_code;
  atomic_int fail_rc;      /* what that pool_fail returned */
} fstate;

static fstate *fs; /* the current scenario's */

static long fib_calls(int n) { return n < 2 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2); }

typedef struct fibc {
  int n;
  long r;
} fibc;

static void fibc_task(void *v) {
  fibc *f = v;
  long me = atomic_fetch_add(&fs->run, 1);
  /* Read the flag before asking: if the cancel returned before, this
   * frame started after it and must see it. */
  int after = atomic_load(&fs->cancel_done);
  int c = pool_cancelled();
  if (c) atomic_fetch_add(&fs->saw_cancel, 1);
  if (after && !c) atomic_fetch_add(&fs->missed, 1);
  if (me == fs->cancel_at) {
    CHECK_OK(pool_group_cancel(fs->g));
    atomic_store(&fs->cancel_done, 1);
    CHECK_EQ(pool_cancelled(), 1);
  }
  if (me == fs->fail_at) {
    int frc = pool_fail(fs->fail_code);
    atomic_store(&fs->fail_rc, frc);
    if (frc == 0) {
      atomic_store(&fs->cancel_done, 1);
      CHECK_EQ(pool_cancelled(), 1);
    }
  }
  if (f->n < 2) {
    f->r = f->n;
    return;
  }
  fibc x = {f->n - 1, 0}, y = {f->n - 2, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, fibc_task, &x));
  fibc_task(&y);
  CHECK_OK(pool_sync(&t));
  f->r = x.r + y.r;
}

/* Typed frames: a POOL_TASK fib that counts its runs. */
static atomic_long typed_runs, typed_saw;
static long tfib(int n);
POOL_TASK(long, tfib, int);
static long tfib(int n) {
  atomic_fetch_add(&typed_runs, 1);
  if (pool_cancelled()) atomic_fetch_add(&typed_saw, 1);
  if (n < 2) return n;
  tfib_frame f;
  CHECK_OK(tfib_spawn(&f, n - 1));
  long y = tfib(n - 2);
  return tfib_sync(&f) + y;
}

enum { FIB_N = 17 };

typedef struct fchild {
  int cancel_first; /* cancel g before the tree */
  long result;
  long typed;
} fchild;

static void frames_child(void *v) {
  fchild *c = v;
  if (c->cancel_first) {
    CHECK_OK(pool_group_cancel(fs->g));
    atomic_store(&fs->cancel_done, 1);
  }
  fibc root = {FIB_N, 0};
  fibc_task(&root);
  c->result = root.r;
  if (c->cancel_first) c->typed = tfib(FIB_N - 3);
}

/* One scenario: a group with one child running a tree of frames. */
static void frames_scenario(pool_t *p, int cancel_first, long cancel_at, long fail_at,
                            int expect_rc) {
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  fstate st;
  memset(&st, 0, sizeof st);
  st.g = &g;
  st.cancel_at = cancel_at;
  st.fail_at = fail_at;
  st.fail_code = EXDEV;
  atomic_store(&st.fail_rc, -1);
  fs = &st;
  atomic_store(&typed_runs, 0);
  atomic_store(&typed_saw, 0);
  fchild c = {cancel_first, -1, -1};
  CHECK_OK(pool_group_spawn(&g, frames_child, &c));
  CHECK_EQ(pool_group_wait(&g), expect_rc);
  CHECK_EQ(c.result, fib_seq(FIB_N));
  CHECK_EQ(atomic_load(&st.run), fib_calls(FIB_N));
  CHECK_EQ(atomic_load(&st.missed), 0);
  if (cancel_first) {
    CHECK_EQ(atomic_load(&st.saw_cancel), fib_calls(FIB_N));
    CHECK_EQ(c.typed, fib_seq(FIB_N - 3));
    CHECK_EQ(atomic_load(&typed_runs), fib_calls(FIB_N - 3));
    CHECK_EQ(atomic_load(&typed_saw), fib_calls(FIB_N - 3));
  }
  if (!cancel_first && cancel_at < 0 && fail_at < 0) CHECK_EQ(atomic_load(&st.saw_cancel), 0);
  if (fail_at >= 0) CHECK_OK(atomic_load(&st.fail_rc));
}

/* Frames spawned from main belong to no unit. */
static void frames_outside(pool_t *p) {
  fstate st;
  memset(&st, 0, sizeof st);
  st.cancel_at = -1;
  st.fail_at = 100;
  st.fail_code = EXDEV;
  atomic_store(&st.fail_rc, -1);
  fs = &st;
  fibc root = {FIB_N, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(p, &t, fibc_task, &root));
  CHECK_OK(pool_sync(&t));
  CHECK_EQ(root.r, fib_seq(FIB_N));
  CHECK_EQ(atomic_load(&st.run), fib_calls(FIB_N));
  CHECK_EQ(atomic_load(&st.saw_cancel), 0);
  CHECK_EQ(atomic_load(&st.fail_rc), ENOENT);
}

static void frames(pool_t *p) {
  long calls = fib_calls(FIB_N);
  for (int rep = 0; rep < 3; rep++) {
    frames_scenario(p, 0, -1, -1, 0);                 /* never cancelled */
    frames_scenario(p, 1, -1, -1, ECANCELED);         /* cancelled before the tree */
    frames_scenario(p, 0, calls / 3, -1, ECANCELED);  /* cancelled by a frame, midway */
    frames_scenario(p, 0, calls - 1, -1, ECANCELED);  /* by the last frame to start */
    frames_scenario(p, 0, -1, calls / 2, EXDEV);      /* failed by a frame */
    frames_scenario(p, 0, -1, 0, EXDEV);              /* by the first */
  }
  frames_outside(p);
}

static void case_frames(void) { ON_POOLS(frames, 1, 2, 4); }

/* ---- pool_join ------------------------------------------------------------------ */

typedef struct half {
  atomic_int ran;
  int code; /* 0: does not fail */
  int fail_rc;
  int cancelled_after;
} half;

static void half_fn(void *v) {
  half *h = v;
  atomic_fetch_add(&h->ran, 1);
  if (!h->code) return;
  busy_work((unsigned)(h->code & 7) * 100);
  h->fail_rc = pool_fail(h->code);
  h->cancelled_after = pool_cancelled();
}

typedef struct join_arg {
  pool_t *pool; /* for pool_join: NULL inside */
  int only_worker; /* inside a pool of one worker: b cannot start before a ends */
  unsigned long rounds;
  uint64_t halves, ran;
  uint64_t b_skipped_when_a_failed; /* how often b was skipped: information */
} join_arg;

static void join_rounds(void *v) {
  join_arg *j = v;
  for (unsigned long r = 0; r < j->rounds; r++) {
    int kind = (int)(r % 4); /* 0: neither fails, 1: a, 2: b, 3: both */
    half a = {0, (kind & 1) ? CODE_BASE + 1 : 0, -1, -1};
    half b = {0, (kind & 2) ? CODE_BASE + 2 : 0, -1, -1};
    int rc = pool_join(j->pool, half_fn, &a, half_fn, &b);
    int ra = atomic_load(&a.ran), rb = atomic_load(&b.ran);
    CHECK(ra == 0 || ra == 1);
    CHECK(rb == 0 || rb == 1);
    j->halves += 2;
    j->ran += (uint64_t)(ra + rb);
    switch (kind) {
    case 0:
      CHECK_OK(rc);
      CHECK_EQ(ra + rb, 2);
      break;
    case 1:
      /* b never fails, so nothing can skip a. */
      CHECK_EQ(ra, 1);
      CHECK_OK(a.fail_rc);
      CHECK_EQ(a.cancelled_after, 1);
      CHECK_EQ(rc, a.code);
      if (!rb) j->b_skipped_when_a_failed++;
      /* The only worker runs a: b had not started when a failed. */
      if (j->only_worker) CHECK_EQ(rb, 0);
      break;
    case 2:
      CHECK_EQ(rb, 1);
      CHECK_OK(b.fail_rc);
      CHECK_EQ(b.cancelled_after, 1);
      CHECK_EQ(rc, b.code);
      break;
    case 3: {
      /* Whichever failed first won; the other failed late or was skipped. */
      CHECK(ra + rb >= 1);
      int wins = (ra && a.fail_rc == 0) + (rb && b.fail_rc == 0);
      CHECK_EQ(wins, 1);
      if (ra) CHECK(a.fail_rc == 0 || a.fail_rc == EALREADY);
      if (rb) CHECK(b.fail_rc == 0 || b.fail_rc == EALREADY);
      CHECK_EQ(rc, (ra && a.fail_rc == 0) ? a.code : b.code);
      if (j->only_worker) {
        CHECK_EQ(rc, a.code);
        CHECK_EQ(rb, 0);
      }
      break;
    }
    }
  }
}

/* Joins run in a child whose group is already cancelled. */
typedef struct cj_arg {
  pool_group_t *g;
  unsigned long rounds;
  uint64_t halves, ran;
} cj_arg;

static void cancelled_joins(void *v) {
  cj_arg *c = v;
  CHECK_OK(pool_group_cancel(c->g));
  for (unsigned long r = 0; r < c->rounds; r++) {
    half a = {0, 0, -1, -1}, b = {0, 0, -1, -1};
    CHECK_EQ(pool_join(NULL, half_fn, &a, half_fn, &b), ECANCELED);
    int ra = atomic_load(&a.ran), rb = atomic_load(&b.ran);
    CHECK(ra == 0 || ra == 1);
    CHECK(rb == 0 || rb == 1);
    c->halves += 2;
    c->ran += (uint64_t)(ra + rb);
  }
}

static void joins(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    join_arg j = {inside ? NULL : p, inside && pool_threads(p) == 1,
                  check_iters(inside ? 4000 : 1000), 0, 0, 0};
    if (inside)
      run_inside(p, join_rounds, &j);
    else
      join_rounds(&j);
    skip_expect(p, base, j.halves - j.ran, 0, "joins");
    fprintf(stderr, "join, %u workers, %s: b skipped in %llu of %lu joins whose a failed alone\n",
            pool_threads(p), inside ? "inside" : "outside",
            (unsigned long long)j.b_skipped_when_a_failed, (j.rounds + 2) / 4);
  }
  skip_count base = skip_read(p);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  cj_arg c = {&g, 200, 0, 0};
  CHECK_OK(pool_group_spawn(&g, cancelled_joins, &c));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  skip_expect(p, base, c.halves - c.ran, 0, "joins in a cancelled child");
}

static void case_join(void) { ON_POOLS(joins, 1, 2, 4); }

/* ---- loops ------------------------------------------------------------------------ */

enum { LN = 20000, LBAD = 7777 };

typedef struct lctx {
  atomic_uchar *seen;
  atomic_size_t ran;     /* items run */
  atomic_size_t calls;   /* body calls */
  atomic_int fails_won;  /* pool_fail() calls that returned 0 */
  atomic_int saw_cancel; /* bodies that saw pool_cancelled() */
  int code;
} lctx;

static void lctx_reset(lctx *c, int code) {
  memset((void *)c->seen, 0, LN);
  atomic_store(&c->ran, 0);
  atomic_store(&c->calls, 0);
  atomic_store(&c->fails_won, 0);
  atomic_store(&c->saw_cancel, 0);
  c->code = code;
}

static void lmark(lctx *c, size_t b, size_t e) {
  for (size_t i = b; i < e; i++)
    if (atomic_fetch_add(&c->seen[i], 1) != 0) FAIL("loop index %zu ran twice\n", i);
  atomic_fetch_add(&c->ran, e - b);
  atomic_fetch_add(&c->calls, 1);
  if (pool_cancelled()) atomic_fetch_add(&c->saw_cancel, 1);
}

/* Indices run at most once (lmark), those of `must` ran. */
static void lcheck_ran(lctx *c, size_t must) {
  if (must < LN) CHECK_EQ(atomic_load(&c->seen[must]), 1);
}

static int try_body(size_t b, size_t e, void *v) {
  lctx *c = v;
  lmark(c, b, e);
  return (b <= LBAD && LBAD < e) ? c->code : 0;
}

static void plain_body(size_t b, size_t e, void *v) {
  lctx *c = v;
  lmark(c, b, e);
  if (b <= LBAD && LBAD < e && c->code) {
    if (pool_fail(c->code) == 0) atomic_fetch_add(&c->fails_won, 1);
    CHECK_EQ(pool_cancelled(), 1);
  }
}

typedef struct racc {
  uint64_t sum;
} racc;

static void rbody(size_t b, size_t e, void *acc, void *v) {
  lctx *c = v;
  lmark(c, b, e);
  for (size_t i = b; i < e; i++) ((racc *)acc)->sum += i;
  if (b <= LBAD && LBAD < e && c->code) {
    if (pool_fail(c->code) == 0) atomic_fetch_add(&c->fails_won, 1);
  }
}

static void rcombine(void *into, const void *from, void *ctx) {
  (void)ctx;
  ((racc *)into)->sum += ((const racc *)from)->sum;
}

typedef struct loops_arg {
  pool_t *pool; /* NULL inside */
  lctx c;
  uint64_t skipped_expected;
} loops_arg;

static void loops_run(void *v) {
  loops_arg *a = v;
  lctx *c = &a->c;
  static const size_t grains[] = {0, 1, 7, 1000};
  for (size_t gi = 0; gi < sizeof grains / sizeof *grains; gi++) {
    size_t grain = grains[gi];
    /* try: EILSEQ stops it */
    lctx_reset(c, EILSEQ);
    CHECK_EQ(pool_parallel_for_try(a->pool, 0, LN, grain, try_body, c), EILSEQ);
    lcheck_ran(c, LBAD);
    a->skipped_expected += LN - atomic_load(&c->ran);
    /* try: a negative return counts as EINVAL */
    lctx_reset(c, -3);
    CHECK_EQ(pool_parallel_for_try(a->pool, 0, LN, grain, try_body, c), EINVAL);
    lcheck_ran(c, LBAD);
    a->skipped_expected += LN - atomic_load(&c->ran);
    /* try: all zero */
    lctx_reset(c, 0);
    CHECK_OK(pool_parallel_for_try(a->pool, 0, LN, grain, try_body, c));
    CHECK_EQ(atomic_load(&c->ran), LN);
    CHECK_EQ(atomic_load(&c->saw_cancel), 0);
    /* plain body with pool_fail */
    lctx_reset(c, EDOM);
    CHECK_EQ(pool_parallel_for(a->pool, 0, LN, grain, plain_body, c), EDOM);
    CHECK_EQ(atomic_load(&c->fails_won), 1);
    lcheck_ran(c, LBAD);
    a->skipped_expected += LN - atomic_load(&c->ran);
    /* plain, clean */
    lctx_reset(c, 0);
    CHECK_OK(pool_parallel_for(a->pool, 0, LN, grain, plain_body, c));
    CHECK_EQ(atomic_load(&c->ran), LN);
    CHECK_EQ(atomic_load(&c->saw_cancel), 0);
    for (int det = 0; det < 2; det++) {
      racc id = {0}, out;
      pool_reducer_t r = {sizeof(racc), &id, rbody, rcombine, c, det};
      lctx_reset(c, ERANGE);
      memset(&out, 0x5a, sizeof out);
      CHECK_EQ(pool_parallel_reduce(a->pool, 0, LN, grain, &r, &out), ERANGE);
      CHECK_EQ(out.sum, 0); /* the identity */
      CHECK_EQ(atomic_load(&c->fails_won), 1);
      lcheck_ran(c, LBAD);
      a->skipped_expected += LN - atomic_load(&c->ran);
      /* a clean reduce after the failed one */
      lctx_reset(c, 0);
      memset(&out, 0x5a, sizeof out);
      CHECK_OK(pool_parallel_reduce(a->pool, 0, LN, grain, &r, &out));
      CHECK_EQ(out.sum, (uint64_t)LN * (LN - 1) / 2);
      CHECK_EQ(atomic_load(&c->ran), LN);
      CHECK_EQ(atomic_load(&c->saw_cancel), 0);
    }
  }
}

/* Loops run by a child whose group it cancelled first. */
typedef struct cl_arg {
  pool_group_t *g;
  lctx *c;
  uint64_t skipped_expected;
} cl_arg;

static void cancelled_loops(void *v) {
  cl_arg *a = v;
  lctx *c = a->c;
  CHECK_OK(pool_group_cancel(a->g));
  lctx_reset(c, 0);
  CHECK_EQ(pool_parallel_for(NULL, 0, LN, 0, plain_body, c), ECANCELED);
  a->skipped_expected += LN - atomic_load(&c->ran);
  /* The cancel happened before the loop: a body that runs sees it. */
  CHECK_EQ(atomic_load(&c->saw_cancel), atomic_load(&c->calls));
  lctx_reset(c, 0);
  CHECK_EQ(pool_parallel_for_try(NULL, 0, LN, 10, try_body, c), ECANCELED);
  a->skipped_expected += LN - atomic_load(&c->ran);
  CHECK_EQ(atomic_load(&c->saw_cancel), atomic_load(&c->calls));
  racc id = {0}, out;
  pool_reducer_t r = {sizeof(racc), &id, rbody, rcombine, c, 1};
  lctx_reset(c, 0);
  CHECK_EQ(pool_parallel_reduce(NULL, 0, LN, 10, &r, &out), ECANCELED);
  a->skipped_expected += LN - atomic_load(&c->ran);
  CHECK_EQ(atomic_load(&c->saw_cancel), atomic_load(&c->calls));
}

static void loops(pool_t *p) {
  for (int inside = 0; inside < 2; inside++) {
    skip_count base = skip_read(p);
    loops_arg *a = calloc(1, sizeof *a);
    CHECK(a);
    a->pool = inside ? NULL : p;
    a->c.seen = calloc(LN, 1);
    CHECK(a->c.seen);
    if (inside)
      run_inside(p, loops_run, a);
    else
      loops_run(a);
    skip_expect(p, base, 0, a->skipped_expected, inside ? "loops inside" : "loops outside");
    free((void *)a->c.seen);
    free(a);
  }
  skip_count base = skip_read(p);
  lctx c;
  c.seen = calloc(LN, 1);
  CHECK(c.seen);
  pool_group_t g;
  CHECK_OK(pool_group_init(&g, p));
  cl_arg a = {&g, &c, 0};
  CHECK_OK(pool_group_spawn(&g, cancelled_loops, &a));
  CHECK_EQ(pool_group_wait(&g), ECANCELED);
  skip_expect(p, base, 0, a.skipped_expected, "loops in a cancelled child");
  free((void *)c.seen);
}

static void case_loops(void) { ON_POOLS(loops, 1, 2, 4); }

TEST_MAIN(240, TEST_CASE(errors), TEST_CASE(before_spawn), TEST_CASE(fail_codes),
          TEST_CASE(fail_order), TEST_CASE(submitted), TEST_CASE(frames), TEST_CASE(join),
          TEST_CASE(loops))
