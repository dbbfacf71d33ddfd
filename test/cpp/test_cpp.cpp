/* SPDX-License-Identifier: MIT */
/* The C++ layer (wspool.hpp).
 *
 *  - join: fib on pools of 1 and 3 workers and on the default pool, from
 *    outside (pool::join, free join) and recursively inside, exact results;
 *    move-only callables from outside and inside;
 *  - exceptions: the first one thrown comes out of join (f's when both
 *    throw on a one-worker pool, where g is taken back and dropped), of
 *    parallel_for, parallel_reduce, task_group::wait and pool::wait_idle;
 *    the waiter is reset afterwards (the next wait throws nothing); a
 *    parallel_for whose every index throws still returns, once;
 *  - parallel_for: per index and per subrange, int / size_t / negative
 *    ranges, empty ranges, each index exactly once;
 *  - parallel_reduce: sums, a non-commutative combine (index order kept),
 *    deterministic mode bit-identical across pools;
 *  - task_group: many tasks, nested groups, reuse after an exception;
 *  - submit + wait_idle; wait_idle from two threads at once after a
 *    task threw: one of them rethrows;
 *  - C errors become wspool::error with the errno value;
 *  - no allocation: join, parallel_for and parallel_reduce make no call to
 *    operator new (counted by a replacement below);
 *  - cancellation (the C API's units, wspool.h "Cancellation and errors";
 *    every outcome below is exact whatever the schedule, every wait for
 *    another thread bounded by a deadline):
 *    group_exception: a task throws while 10^4 siblings are queued: wait()
 *    rethrows it, and the tasks that ran plus the workers' `skipped`
 *    counts make every task spawned (on one worker: only the thrower ran);
 *    the same in a tree of tasks spawned into the group by its own tasks;
 *    group_cancel: cancel() from outside while a task runs (it sees
 *    is_cancelled()), tasks run after it are skipped, wait() returns false,
 *    the next round runs; an exception after the cancel is dropped; a task
 *    that calls pool_fail(EIO) makes wait() throw wspool::error(EIO) and its
 *    own exception is dropped; a submitted task is in no unit;
 *    nested_cancel: a sibling's exception cancels a group made in another
 *    task of the outer group: its queued tasks are skipped (at most a few
 *    per worker started) and its wait returns false; a group made in a
 *    task once cancel() reached the outer one runs nothing;
 *    parallel_for_cancel: index k throws: rethrown, every index at most
 *    once (per index and per subrange); a parallel_for, a
 *    parallel_reduce and a join from outside its pool inside a cancelled
 *    group throw wspool::error(ECANCELED), uncaught they end the task and
 *    the group's wait returns false; an inline join there runs both halves;
 *    join_cancel: f throws: g is skipped (one worker: taken back) or ran
 *    once (stolen: waited for, its own exception dropped), f's exception
 *    comes out; from outside the pool (pool_join) too;
 *    is_cancelled: false in main, in a plain task and in a submitted task,
 *    true in a cancelled group's task and in both halves of a join it runs;
 *  - isolate: f's result (value, move-only, reference, void) from main and
 *    on pools of 1 and 3; f's exception and those of a loop, a group, a
 *    join and a nested isolate inside it come out; a C failure is
 *    wspool::error(EIO); nested in a cancelled group it throws
 *    wspool::error(ECANCELED) after f ran, unless f threw; while f runs on a
 *    worker, no unrelated task (submitted, or queued on that worker before)
 *    runs on it, whatever the schedule;
 *  - blocking: regions outside a pool do nothing; the stand-in limit set,
 *    read (also from a task, free functions) and refused above
 *    POOL_MAX_THREADS; on a one-worker pool a task blocked in a region (the
 *    outer of three nested ones, the inner ones ended) or in blocking(f)
 *    gets the task queued behind it run by a stand-in; with limit 0 that
 *    task cannot run meanwhile; blocking(f) returns f's result, its
 *    exception passes;
 *  - job_order: a logical clock stamps each job's start and end; chains of
 *    211 jobs started forward, backward and scattered, a diamond started
 *    successors first, a fan-out/fan-in of 100 (past the two inline edges),
 *    on pools of 1 and 3: every job ran once, after every predecessor's
 *    end; jobs on the default pool, across pools, after a complete job, made
 *    and waited inside a task; misuse (after itself, after or start once
 *    started) is wspool::error(EINVAL);
 *  - job_exceptions: wait() rethrows a job's exception every time, from two
 *    threads; in a chain and a diamond the jobs after the thrower are
 *    skipped (wspool::error(ECANCELED)) and the others run; a C failure
 *    travels down as wspool::error(EIO) and the exception after it is
 *    dropped; cancel() before the start skips the chain, while running it
 *    is seen by is_cancelled() and the exception after it is dropped; a job
 *    made in a cancelled group's task is not cancelled;
 *  - job_destroy: the destructor waits for a started job (and drops its
 *    exception); jobs never started, alone or in a graph abandoned by an
 *    exception (declared in either order), are dropped without running or
 *    touching the pool (its skipped count unchanged); a never-started
 *    predecessor of a started job, or a never-started job whose C handle a
 *    C job was put after, is cancelled and started so that the successor
 *    is skipped with ECANCELED; a never-started job put after a running one
 *    waits for it; the callable is copied once and destroyed with the job,
 *    run or not, inline or on the heap, and a small one is not allocated.
 * Cases: join, join_exceptions, parallel_for, reduce, group, submit,
 * errors, no_allocation, group_exception, group_cancel, nested_cancel,
 * parallel_for_cancel, join_cancel, is_cancelled, isolate, blocking,
 * job_order, job_exceptions, job_destroy. */
#include <wspool.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"

/* operator new counted, over malloc/free. GCC sees the replacement
 * operator delete inlined into a caller of the replacement operator new and
 * takes free() on it for a mismatch; the two are a matched pair. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
static std::atomic<long> news{0};

/* Not under the sanitizers: their runtimes define operator new themselves
 * (clang links them statically, so a second definition fails to link), and
 * the allocation count below is then not checked. */
#if !TEST_UNDER_ASAN && !TEST_UNDER_TSAN
void *operator new(std::size_t n) {
  news.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
#endif

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

static long fib(int n) {
  if (n < 2) return n;
  long x, y;
  wspool::join([&] { y = fib(n - 2); }, [&] { x = fib(n - 1); });
  return x + y;
}

struct boom : std::runtime_error {
  int who;
  explicit boom(int w) : std::runtime_error("boom"), who(w) {}
};

/* The `who` of the boom `f` throws, -1 for none, -2 for another type. */
template <class F>
static int thrown_by(F &&f) {
  try {
    f();
  } catch (const boom &b) {
    return b.who;
  } catch (...) {
    return -2;
  }
  return -1;
}

static void test_join(wspool::pool &p) {
  long r = 0;
  p.join([&] { r = fib(20); }, [] {});
  CHECK_EQ(r, fib_seq(20));
  long a = 0, b = 0;
  p.join([&] { a = fib(15); }, [&] { b = fib(16); });
  CHECK_EQ(a + b, fib_seq(17));
  /* move-only callables, from outside (f is passed on, not copied) and
   * inside */
  std::atomic<int> got{0};
  p.join([u = std::make_unique<int>(5), &got] { got += *u; },
         [u = std::make_unique<int>(7), &got, &p] {
           /* The two halves may run at once (the second stolen): each
            * writes its own variable. */
           int in1 = 0, in2 = 0;
           p.join([v = std::make_unique<int>(1), &in1] { in1 += *v; }, [&in2] { in2 += 2; });
           got += *u + in1 + in2;
         });
  CHECK_EQ(got.load(), 5 + 7 + 3);
}

static void test_join_exceptions(wspool::pool &one) {
  /* From outside: each half's exception, and no exception. */
  CHECK_EQ(thrown_by([&] { one.join([] { throw boom(1); }, [] {}); }), 1);
  CHECK_EQ(thrown_by([&] { one.join([] {}, [] { throw boom(2); }); }), 2);
  CHECK_EQ(thrown_by([&] { one.join([] {}, [] {}); }), -1);
  /* Inside a one-worker pool g is always taken back and runs after f: f's
   * exception is the first thrown. Deeper in a recursion too. */
  int who = 0;
  one.join(
      [&] {
        who = thrown_by([] { wspool::join([] { throw boom(10); }, [] { throw boom(11); }); });
      },
      [] {});
  CHECK_EQ(who, 10);
  one.join([&] { who = thrown_by([] { wspool::join([] { (void)fib(10); }, [] { throw boom(12); }); }); },
           [] {});
  CHECK_EQ(who, 12);
  one.join(
      [&] {
        who = thrown_by([] {
          wspool::join([] { wspool::join([] {}, [] { throw boom(13); }); }, [] { (void)fib(5); });
        });
      },
      [] {});
  CHECK_EQ(who, 13);
  /* Not a std::exception at all. */
  CHECK_EQ(thrown_by([&] { one.join([] { throw 42; }, [] {}); }), -2);
}

static void test_parallel_for(wspool::pool &p) {
  const int n = 10000;
  std::vector<std::atomic<int>> hits(n);
  p.parallel_for(0, n, [&](int i) { hits[(size_t)i].fetch_add(1); });
  for (int i = 0; i < n; i++) CHECK_EQ(hits[(size_t)i].load(), 1);
  /* subranges, size_t, a grain */
  std::atomic<long> sum{0};
  p.parallel_for(std::size_t{0}, std::size_t(n), 7, [&](std::size_t lo, std::size_t hi) {
    CHECK(lo < hi && hi <= (std::size_t)n);
    long s = 0;
    for (std::size_t i = lo; i < hi; i++) s += (long)i;
    sum += s;
  });
  CHECK_EQ(sum.load(), (long)n * (n - 1) / 2);
  /* negative indices, mixed int / long bounds */
  sum = 0;
  p.parallel_for(-500, 500L, [&](long i) { sum += i; });
  CHECK_EQ(sum.load(), -500);
  /* empty */
  p.parallel_for(5, 5, [&](int) { CHECK(0); });
  /* free function on the caller's pool, nested */
  sum = 0;
  p.join([&] { wspool::parallel_for(0, 100, [&](int i) { wspool::parallel_for(0, i, [&](int) { sum++; }); }); },
         [] {});
  CHECK_EQ(sum.load(), 100 * 99 / 2);
  /* begin > end is an error */
  bool threw = false;
  try {
    p.parallel_for(10, 0, [](int) {});
  } catch (const wspool::error &e) {
    threw = e.code() == EINVAL;
  }
  CHECK(threw);
  /* exceptions: one index, then every index (the loop still returns, once) */
  CHECK_EQ(thrown_by([&] { p.parallel_for(0, 1000, [](int i) { if (i == 777) throw boom(777); }); }), 777);
  std::atomic<int> ran{0};
  int who = thrown_by([&] { p.parallel_for(0, 1000, 1, [&](int i) { ran++; throw boom(i); }); });
  CHECK(who >= 0 && who < 1000);
  CHECK(ran.load() >= 1 && ran.load() <= 1000);
  CHECK_EQ(thrown_by([&] { p.parallel_for(0, 1000, [](int) {}); }), -1); /* reset */
}

/* Non-commutative: "is the concatenation sorted?" over index order. */
struct run {
  long first, last;
  int sorted, empty;
};

static void test_reduce(wspool::pool &p, wspool::pool &q) {
  long s = p.parallel_reduce(0, 100000, 0L, [](long acc, int i) { return acc + (long)i * i % 7; },
                             [](long a, long b) { return a + b; });
  long want = 0;
  for (long i = 0; i < 100000; i++) want += i * i % 7;
  CHECK_EQ(s, want);
  /* range form */
  s = p.parallel_reduce(0, 1000, 0L, [](int lo, int hi, long acc) {
        for (int i = lo; i < hi; i++) acc += i;
        return acc;
      },
      [](long a, long b) { return a + b; });
  CHECK_EQ(s, 999L * 1000 / 2);
  /* index order: combine(left, right) */
  run id = {0, 0, 1, 1};
  auto body = [](run acc, int i) {
    if (acc.empty) return run{i, i, 1, 0};
    return run{acc.first, i, acc.sorted && acc.last < i, 0};
  };
  auto combine = [](run a, run b) {
    if (a.empty) return b;
    if (b.empty) return a;
    return run{a.first, b.last, a.sorted && b.sorted && a.last < b.first, 0};
  };
  run r = p.parallel_reduce(0, 50000, id, body, combine, 3);
  CHECK(r.sorted && !r.empty && r.first == 0 && r.last == 49999);
  /* empty range: the identity */
  CHECK_EQ(p.parallel_reduce(3, 3, 17L, [](long a, int) { return a + 1; }, [](long a, long b) { return a + b; }), 17);
  /* deterministic floating point: the same bits on pools of 1 and 3 */
  auto fb = [](double acc, int i) { return acc + 1.0 / (1.0 + i); };
  auto fc = [](double a, double b) { return a + b; };
  double d1 = p.parallel_reduce(0, 200000, 0.0, fb, fc, 0, true);
  double d2 = q.parallel_reduce(0, 200000, 0.0, fb, fc, 0, true);
  CHECK(std::memcmp(&d1, &d2, sizeof d1) == 0);
  /* exceptions from body and combine */
  CHECK_EQ(thrown_by([&] {
             (void)p.parallel_reduce(0, 1000, 0L, [](long a, int i) { if (i == 5) throw boom(5); return a + i; },
                                     [](long a, long b) { return a + b; });
           }),
           5);
  CHECK_EQ(thrown_by([&] {
             (void)p.parallel_reduce(0, 1000, 0L, [](long a, int i) { return a + i; },
                                     [](long, long) -> long { throw boom(6); });
           }),
           6);
}

static void test_group(wspool::pool &p) {
  std::atomic<int> count{0};
  {
    wspool::task_group g(p);
    for (int i = 0; i < 1000; i++) g.run([&count] { count++; });
    g.wait();
    CHECK_EQ(count.load(), 1000);
    /* nested groups inside tasks, on the caller's pool */
    count = 0;
    for (int i = 0; i < 10; i++)
      g.run([&count] {
        wspool::task_group inner;
        for (int j = 0; j < 10; j++) inner.run([&count] { count++; });
        inner.wait();
      });
    g.wait();
    CHECK_EQ(count.load(), 100);
    /* an exception, then reuse */
    for (int i = 0; i < 50; i++) g.run([i] { if (i == 20) throw boom(20); });
    CHECK_EQ(thrown_by([&] { g.wait(); }), 20);
    count = 0;
    for (int i = 0; i < 10; i++) g.run([&count] { count++; });
    g.wait();
    CHECK_EQ(count.load(), 10);
    /* a callable bigger than a pointer, moved in */
    std::vector<int> v(100, 1);
    std::atomic<long> total{0};
    g.run([v, &total] {
      long s = 0;
      for (int x : v) s += x;
      total += s;
    });
    g.wait();
    CHECK_EQ(total.load(), 100);
  }
}

static void test_submit(wspool::pool &p) {
  std::atomic<int> count{0};
  for (int i = 0; i < 500; i++) p.submit([&count] { count++; });
  p.wait_idle();
  CHECK_EQ(count.load(), 500);
  count = 0;
  for (int i = 0; i < 100; i++) p.submit([&count, i] { count++; if (i == 50) throw boom(50); });
  CHECK_EQ(thrown_by([&] { p.wait_idle(); }), 50);
  CHECK_EQ(count.load(), 100); /* fire-and-forget tasks are not cancelled */
  CHECK_EQ(thrown_by([&] { p.wait_idle(); }), -1);
}

static void test_errors(void) {
  pool_config_t c = wspool::pool::default_config();
  c.threads = POOL_MAX_THREADS + 1;
  int code = 0;
  try {
    wspool::pool bad(c);
  } catch (const wspool::error &e) {
    code = e.code();
  }
  CHECK_EQ(code, EINVAL);
}

static void test_no_allocation(wspool::pool &p) {
  long r = 0;
  std::atomic<long> sum{0};
  p.join([&] { r = fib(18); }, [] {}); /* warm up */
  long before = news.load();
  p.join([&] { r = fib(20); }, [] {});
  p.parallel_for(0, 10000, [&](int i) { sum += i; });
  long red = p.parallel_reduce(0, 10000, 0L, [](long a, int i) { return a + i; },
                               [](long a, long b) { return a + b; });
  long after = news.load();
  CHECK_EQ(r, fib_seq(20));
  CHECK_EQ(sum.load(), 10000L * 9999 / 2);
  CHECK_EQ(red, 10000L * 9999 / 2);
  CHECK_EQ(after - before, 0);
}

/* Wait (yielding) until `done()`, at most `seconds`: false on the deadline. */
template <class P>
static bool spin_until(P &&done, double seconds = 20.0) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

static bool cancelled() { return wspool::is_cancelled(); }

/* The pool's workers' `skipped` counts, summed. */
static unsigned long long skipped_now(wspool::pool &p) {
  unsigned long long sum = 0;
  for (unsigned w = 0; w < p.threads(); w++) {
    pool_worker_stats_t st;
    CHECK_OK(pool_worker_stats(p.get(), w, &st));
    sum += st.skipped;
  }
  return sum;
}

/* How many group tasks the pool skipped since `base`, once that is at least
 * `want` (the counters may lag the wait for an instant; 10 s at most). */
static unsigned long long skipped_since(wspool::pool &p, unsigned long long base,
                                        unsigned long long want) {
  p.wait_idle();
  unsigned long long d = 0;
  (void)spin_until([&] { return (d = skipped_now(p) - base) >= want; }, 10.0);
  return d;
}

/* A task throws while `n` siblings are queued behind it: wait() rethrows
 * it, and ran + skipped == every task. On one worker no sibling can start
 * before the throw (the worker is in the thrower until they are all
 * queued), so every sibling is skipped. */
static void test_group_exception(wspool::pool &p, long n) {
  unsigned long long base = skipped_now(p);
  std::atomic<bool> started{false}, queued{false}, waited{true};
  std::atomic<long> ran{0};
  wspool::task_group g(p);
  g.run([&] {
    ran++;
    started = true;
    waited = spin_until([&] { return queued.load(); });
    throw boom(1);
  });
  CHECK(spin_until([&] { return started.load(); }));
  for (long i = 0; i < n; i++) g.run([&ran] { ran++; });
  queued = true;
  CHECK_EQ(thrown_by([&] { (void)g.wait(); }), 1);
  CHECK(waited.load());
  if (p.threads() == 1) CHECK_EQ(ran.load(), 1);
  unsigned long long skipped = skipped_since(p, base, (unsigned long long)(n + 1 - ran.load()));
  CHECK_EQ((long long)ran.load() + (long long)skipped, n + 1);
  /* the group is reusable, with nothing left of the failure */
  ran = 0;
  for (int i = 0; i < 100; i++) g.run([&ran] { ran++; });
  CHECK(g.wait());
  CHECK_EQ(ran.load(), 100);
}

/* A binary tree of tasks spawned into one group by its own tasks (so the
 * copies are pushed and swept on every worker); the `throw_at`-th task to
 * start throws (0: none). Every run() counts as spawned: ran + skipped ==
 * spawned, and without the throw every task ran. */
struct tree_state {
  wspool::task_group *g;
  long throw_at;
  std::atomic<long> spawned{0}, ran{0};
};

static void tree_task(tree_state &t, int depth) {
  long k = t.ran.fetch_add(1) + 1;
  if (k == t.throw_at) throw boom(9);
  if (depth == 0) return;
  for (int c = 0; c < 2; c++) {
    t.g->run([&t, depth] { tree_task(t, depth - 1); });
    t.spawned++;
  }
}

static void test_group_tree(wspool::pool &p, long throw_at) {
  const int depth = 14; /* 2^15 - 1 tasks when none is skipped */
  unsigned long long base = skipped_now(p);
  wspool::task_group g(p);
  tree_state t;
  t.g = &g;
  t.throw_at = throw_at;
  g.run([&t] { tree_task(t, depth); });
  t.spawned++;
  if (throw_at == 0) {
    CHECK(g.wait());
    CHECK_EQ(t.ran.load(), (1L << (depth + 1)) - 1);
    CHECK_EQ(t.spawned.load(), t.ran.load());
    return;
  }
  CHECK_EQ(thrown_by([&] { (void)g.wait(); }), 9);
  long ran = t.ran.load(), spawned = t.spawned.load();
  CHECK(ran >= throw_at && ran <= spawned);
  unsigned long long skipped = skipped_since(p, base, (unsigned long long)(spawned - ran));
  CHECK_EQ((long long)ran + (long long)skipped, spawned);
}

static void case_group_exception() {
  wspool::pool one(1), three(3);
  test_group_exception(one, 10000);
  test_group_exception(three, 10000);
  for (wspool::pool *p : {&one, &three}) {
    test_group_tree(*p, 0);
    test_group_tree(*p, 3000);
    test_group_tree(*p, 1);
  }
}

static void case_group_cancel() {
  wspool::pool three(3);
  wspool::task_group g(three);
  std::atomic<bool> started{false};
  std::atomic<int> saw{-1}, after{0}, sub_ran{0}, sub_fail{0}, sub_saw{-1};
  /* cancel() from outside while a task runs; tasks run after it are skipped */
  unsigned long long base = skipped_now(three);
  g.run([&] {
    started = true;
    saw = spin_until(cancelled);
    /* a task submitted from a cancelled task: in no unit, runs */
    three.submit([&] {
      sub_fail = pool_fail(EIO);
      sub_saw = wspool::is_cancelled();
      sub_ran++;
    });
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  g.cancel(); /* idempotent */
  for (int i = 0; i < 100; i++) g.run([&after] { after++; });
  CHECK(!g.wait());
  CHECK_EQ(saw.load(), 1);
  CHECK_EQ(after.load(), 0);
  CHECK_EQ(skipped_since(three, base, 100), 100);
  three.wait_idle();
  CHECK_EQ(sub_ran.load(), 1);
  CHECK_EQ(sub_fail.load(), ENOENT);
  CHECK_EQ(sub_saw.load(), 0);
  /* the wait cleared the cancellation: the next round runs */
  after = 0;
  for (int i = 0; i < 100; i++) g.run([&after] { after++; });
  CHECK(g.wait());
  CHECK_EQ(after.load(), 100);
  /* a cancel with nothing running still makes the round's wait false */
  g.cancel();
  CHECK(!g.wait());
  CHECK(g.wait());
  /* an exception thrown after the cancel is dropped */
  started = false;
  g.run([&] {
    started = true;
    (void)spin_until(cancelled);
    throw boom(3);
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  bool result = true;
  CHECK_EQ(thrown_by([&] { result = g.wait(); }), -1);
  CHECK(!result);
  /* a C failure: wspool::error with its code; the exception after it is
   * dropped, and a task spawned after it is skipped */
  after = 0;
  g.run([&] {
    CHECK_EQ(pool_fail(EIO), 0);
    g.run([&after] { after++; });
    throw boom(4);
  });
  int code = 0;
  try {
    (void)g.wait();
  } catch (const wspool::error &e) {
    code = e.code();
  }
  CHECK_EQ(code, EIO);
  CHECK_EQ(after.load(), 0);
  CHECK(g.wait());
}

/* A sibling's exception cancels the outer group, and with it a group made
 * inside another of its tasks: the inner tasks queued then are skipped. */
static void case_nested_cancel() {
  wspool::pool three(3);
  const long n = 10000;
  unsigned long long base = skipped_now(three);
  std::atomic<bool> b_started{false}, a_queued{false}, timed_out{false};
  std::atomic<long> inner_ran{0}, late_ran{0};
  std::atomic<int> inner_result{-1}, late_result{-1};
  std::atomic<bool> started{false};
  wspool::task_group outer(three);
  outer.run([&] { /* A: the inner group */
    if (!spin_until([&] { return b_started.load(); })) timed_out = true;
    wspool::task_group inner; /* on the caller's pool, nested in outer */
    for (long i = 0; i < n; i++)
      inner.run([&] {
        inner_ran++;
        /* Each task started before the cancel holds its worker until it:
         * so only a few can. */
        if (!spin_until(cancelled)) timed_out = true;
      });
    a_queued = true;
    inner_result = inner.wait() ? 1 : 0;
  });
  outer.run([&] { /* B: throws once A's inner tasks are queued */
    b_started = true;
    if (!spin_until([&] { return a_queued.load(); })) timed_out = true;
    throw boom(7);
  });
  CHECK_EQ(thrown_by([&] { (void)outer.wait(); }), 7);
  CHECK(!timed_out.load());
  CHECK_EQ(inner_result.load(), 0);
  /* Before the cancel: at most one per worker not in B; at the cancel at
   * most one more per worker may still start (wspool.h). */
  CHECK(inner_ran.load() >= 0 && inner_ran.load() <= 2 * (long)three.threads());
  unsigned long long skipped = skipped_since(three, base, (unsigned long long)(n - inner_ran.load()));
  CHECK_EQ((long long)inner_ran.load() + (long long)skipped, n);
  /* a group made in a task once the outer group is cancelled runs nothing */
  base = skipped_now(three);
  outer.run([&] {
    started = true;
    if (!spin_until(cancelled)) timed_out = true;
    wspool::task_group late;
    for (int i = 0; i < 100; i++) late.run([&late_ran] { late_ran++; });
    late_result = late.wait() ? 1 : 0;
  });
  CHECK(spin_until([&] { return started.load(); }));
  outer.cancel();
  CHECK(!outer.wait());
  CHECK(!timed_out.load());
  CHECK_EQ(late_result.load(), 0);
  CHECK_EQ(late_ran.load(), 0);
  CHECK_EQ(skipped_since(three, base, 100), 100);
  /* the outer group runs again */
  std::atomic<int> count{0};
  outer.run([&count] {
    wspool::task_group inner;
    for (int j = 0; j < 10; j++) inner.run([&count] { count++; });
    CHECK(inner.wait());
  });
  CHECK(outer.wait());
  CHECK_EQ(count.load(), 10);
}

static void test_parallel_for_throws(wspool::pool &p) {
  const int n = 20000;
  for (int k : {0, 777, n - 1}) {
    std::vector<std::atomic<int>> hits((size_t)n);
    CHECK_EQ(thrown_by([&] {
               p.parallel_for(0, n, [&, k](int i) {
                 hits[(size_t)i].fetch_add(1);
                 if (i == k) throw boom(k);
               });
             }),
             k);
    for (int i = 0; i < n; i++) CHECK(hits[(size_t)i].load() <= 1);
    CHECK_EQ(hits[(size_t)k].load(), 1);
    /* per subrange, grain 1 */
    for (auto &h : hits) h = 0;
    CHECK_EQ(thrown_by([&] {
               p.parallel_for(0, n, 1, [&, k](int lo, int hi) {
                 for (int i = lo; i < hi; i++) hits[(size_t)i].fetch_add(1);
                 if (lo <= k && k < hi) throw boom(k);
               });
             }),
             k);
    for (int i = 0; i < n; i++) CHECK(hits[(size_t)i].load() <= 1);
    CHECK_EQ(hits[(size_t)k].load(), 1);
  }
  /* parallel_reduce: a body's exception, then the same loop runs whole */
  CHECK_EQ(thrown_by([&] {
             (void)p.parallel_reduce(0, n, 0L, [](long a, int i) { if (i == 4242) throw boom(4242); return a + i; },
                                     [](long a, long b) { return a + b; });
           }),
           4242);
  CHECK_EQ(p.parallel_reduce(0, n, 0L, [](long a, int i) { return a + i; }, [](long a, long b) { return a + b; }),
           (long)n * (n - 1) / 2);
}

static void case_parallel_for_cancel() {
  wspool::pool one(1), three(3);
  test_parallel_for_throws(one);
  test_parallel_for_throws(three);
  /* inside a cancelled group: the loops throw wspool::error(ECANCELED)
   * without running a body, a join from outside its pool too; an inline
   * join runs both halves (frames are never skipped) */
  wspool::task_group g(three);
  std::atomic<bool> started{false}, saw{false}, reached{false};
  std::atomic<int> for_code{0}, reduce_code{0}, join_code{0}, halves{0}, inline_halves{0};
  std::atomic<long> bodies{0};
  g.run([&] {
    started = true;
    saw = spin_until(cancelled);
    try {
      wspool::parallel_for(0, 1000, [&](int) { bodies++; });
    } catch (const wspool::error &e) {
      for_code = e.code();
    }
    try {
      (void)wspool::parallel_reduce(0, 1000, 0L, [&](long a, int i) { bodies++; return a + i; },
                                    [](long a, long b) { return a + b; });
    } catch (const wspool::error &e) {
      reduce_code = e.code();
    }
    try {
      one.join([&] { halves++; }, [&] { halves++; }); /* pool_join, nested across pools */
    } catch (const wspool::error &e) {
      join_code = e.code();
    }
    wspool::join([&] { inline_halves++; }, [&] { inline_halves++; });
    /* uncaught: ends this task; the group is cancelled already */
    wspool::parallel_for(0, 1000, [&](int) { bodies++; });
    reached = true;
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  bool result = true;
  CHECK_EQ(thrown_by([&] { result = g.wait(); }), -1);
  CHECK(!result);
  CHECK(saw.load());
  CHECK_EQ(for_code.load(), ECANCELED);
  CHECK_EQ(reduce_code.load(), ECANCELED);
  CHECK_EQ(join_code.load(), ECANCELED);
  CHECK(halves.load() <= 2);
  CHECK_EQ(inline_halves.load(), 2);
  CHECK_EQ(bodies.load(), 0);
  CHECK(!reached.load());
}

/* join where f throws, on a worker of p (inside p.join) and from outside. */
static void test_join_cancel(wspool::pool &p) {
  /* on a worker, f throws at once: g is skipped (taken back) unless a
   * thief started it; on one worker it always is taken back */
  std::atomic<int> g_ran{0};
  int who = 0;
  p.join([&] { who = thrown_by([&] { wspool::join([] { throw boom(1); }, [&] { g_ran++; }); }); }, [] {});
  CHECK_EQ(who, 1);
  CHECK(g_ran.load() <= 1);
  if (p.threads() == 1) CHECK_EQ(g_ran.load(), 0);
  /* f throws once a thief runs g: join waits for g, which ran once; g's own
   * exception is dropped. Without a thief in time (or on one worker) g is
   * taken back and skipped. */
  std::atomic<bool> g_started{false}, f_threw{false};
  g_ran = 0;
  bool stolen = false;
  p.join(
      [&] {
        who = thrown_by([&] {
          wspool::join(
              [&] {
                stolen = p.threads() > 1 && spin_until([&] { return g_started.load(); }, 5.0);
                f_threw = true;
                throw boom(2);
              },
              [&] {
                g_started = true;
                g_ran++;
                (void)spin_until([&] { return f_threw.load(); });
                throw boom(3);
              });
        });
      },
      [] {});
  CHECK_EQ(who, 2);
  if (stolen) CHECK_EQ(g_ran.load(), 1);
  CHECK(g_ran.load() <= 1); /* a thief may take g just after f gave up */
  if (p.threads() == 1) CHECK_EQ(g_ran.load(), 0);
  /* from outside: pool_join, a unit: the other half skipped or ran once */
  g_ran = 0;
  CHECK_EQ(thrown_by([&] { p.join([] { throw boom(4); }, [&] { g_ran++; }); }), 4);
  CHECK(g_ran.load() <= 1);
  g_ran = 0;
  CHECK_EQ(thrown_by([&] { p.join([&] { g_ran++; }, [] { throw boom(5); }); }), 5);
  CHECK(g_ran.load() <= 1);
  who = thrown_by([&] { p.join([] { throw boom(6); }, [] { throw boom(7); }); });
  CHECK(who == 6 || who == 7);
  CHECK_EQ(thrown_by([&] { p.join([] {}, [] {}); }), -1);
}

static void case_join_cancel() {
  wspool::pool one(1), three(3);
  test_join_cancel(one);
  test_join_cancel(three);
}

static void case_is_cancelled() {
  wspool::pool three(3);
  CHECK(!wspool::is_cancelled()); /* main: no unit */
  std::atomic<int> in_task{-1}, in_sub{-1}, saw{-1}, in_f{-1}, in_g{-1}, in_body{-1};
  wspool::task_group g(three);
  g.run([&] {
    in_task = wspool::is_cancelled();
    wspool::parallel_for(0, 10, [&](int) { in_body = wspool::is_cancelled(); });
  });
  CHECK(g.wait());
  CHECK_EQ(in_task.load(), 0);
  CHECK_EQ(in_body.load(), 0);
  three.submit([&] { in_sub = wspool::is_cancelled(); });
  three.wait_idle();
  CHECK_EQ(in_sub.load(), 0);
  std::atomic<bool> started{false};
  g.run([&] {
    started = true;
    saw = spin_until(cancelled);
    wspool::join([&] { in_f = wspool::is_cancelled(); }, [&] { in_g = wspool::is_cancelled(); });
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  CHECK(!g.wait());
  CHECK_EQ(saw.load(), 1);
  CHECK_EQ(in_f.load(), 1);
  CHECK_EQ(in_g.load(), 1);
  CHECK(!wspool::is_cancelled());
}

/* The errno of the wspool::error `f` throws, -1 for none, -2 for another
 * exception. */
template <class F>
static int code_of(F &&f) {
  try {
    f();
  } catch (const wspool::error &e) {
    return e.code();
  } catch (...) {
    return -2;
  }
  return -1;
}

/* Set on a thread while it runs an isolated computation's `f` (saved and
 * restored, as isolations nest). */
static thread_local bool t_isolated = false;

static void test_isolate(wspool::pool &p) {
  /* on a worker: the result, and the exceptions of f, of a loop, a group
   * and a join inside it */
  long r = 0;
  p.join([&] { r = wspool::isolate([] { return fib(18); }); }, [] {});
  CHECK_EQ(r, fib_seq(18));
  int who = 0;
  p.join([&] { who = thrown_by([] { (void)wspool::isolate([]() -> int { throw boom(2); }); }); },
         [] {});
  CHECK_EQ(who, 2);
  p.join(
      [&] {
        who = thrown_by([] {
          wspool::isolate([] {
            wspool::parallel_for(0, 1000, [](int i) {
              if (i == 500) throw boom(3);
            });
          });
        });
      },
      [] {});
  CHECK_EQ(who, 3);
  who = thrown_by([&] {
    wspool::isolate([&] {
      wspool::task_group g(p);
      for (int i = 0; i < 100; i++) g.run([i] { if (i == 40) throw boom(4); });
      (void)g.wait();
    });
  });
  CHECK_EQ(who, 4);
  p.join(
      [&] {
        who = thrown_by([] {
          wspool::isolate([] { wspool::join([] { (void)fib(10); }, [] { throw boom(5); }); });
        });
      },
      [] {});
  CHECK_EQ(who, 5);
  /* nested isolations, the inner one's exception through the outer */
  p.join(
      [&] {
        who = thrown_by([] {
          wspool::isolate([] {
            (void)wspool::isolate([] { return fib(8); });
            wspool::isolate([] { throw boom(6); });
          });
        });
      },
      [] {});
  CHECK_EQ(who, 6);
  /* a C failure of f: wspool::error(EIO), through the join that ran it */
  CHECK_EQ(code_of([&] {
             p.join([] { wspool::isolate([] { CHECK_EQ(pool_fail(EIO), 0); }); }, [] {});
           }),
           EIO);
}

/* While f runs on a worker, that worker runs nothing from outside it:
 * unrelated tasks (submitted from main, and group tasks queued before the
 * isolation on the very worker) check the flag of the thread they run on,
 * while isolated loops wait for their stolen pieces. */
static void test_isolation(wspool::pool &p) {
  std::atomic<long> violations{0}, unrelated{0}, pieces{0};
  auto unrelated_task = [&] {
    if (t_isolated) violations++;
    unrelated++;
  };
  wspool::task_group outer(p);
  for (int k = 0; k < 6; k++)
    outer.run([&] {
      if (t_isolated) violations++;
      for (int i = 0; i < 50; i++) outer.run(unrelated_task);
      for (int rep = 0; rep < 10; rep++) {
        long got = wspool::isolate([&] {
          bool saved = t_isolated;
          t_isolated = true;
          long s = wspool::parallel_reduce(
              0, 64, 0L,
              [&](long a, int i) {
                pieces++;
                return a + fib(12) - fib_seq(12) + i;
              },
              [](long a, long b) { return a + b; }, 1);
          t_isolated = saved;
          return s;
        });
        CHECK_EQ(got, 64L * 63 / 2);
      }
    });
  for (int i = 0; i < 2000; i++) p.submit(unrelated_task);
  CHECK(outer.wait());
  p.wait_idle();
  CHECK_EQ(violations.load(), 0);
  CHECK_EQ(unrelated.load(), 6 * 50 + 2000);
  CHECK_EQ(pieces.load(), 6 * 10 * 64);
}

static void case_isolate() {
  /* from main (no pool): results of every kind */
  CHECK_EQ(wspool::isolate([] { return 42; }), 42);
  std::unique_ptr<int> up = wspool::isolate([] { return std::make_unique<int>(7); });
  CHECK_EQ(*up, 7);
  int x = 1;
  int &rx = wspool::isolate([&x]() -> int & { return x; });
  CHECK(&rx == &x);
  int calls = 0;
  wspool::isolate([&calls] { calls++; });
  CHECK_EQ(calls, 1);
  CHECK_EQ(thrown_by([] { wspool::isolate([] { throw boom(1); }); }), 1);
  CHECK_EQ(code_of([] { wspool::isolate([] { CHECK_EQ(pool_fail(EIO), 0); }); }), EIO);
  CHECK_EQ(thrown_by([] { wspool::isolate([] { (void)fib(12); }); }), -1);
  wspool::pool one(1), three(3);
  test_isolate(one);
  test_isolate(three);
  test_isolation(three);
  /* nested in a cancelled group: wspool::error(ECANCELED) once f returned
   * (f itself runs); f's own exception wins */
  wspool::task_group g(three);
  std::atomic<bool> started{false};
  std::atomic<int> iso_code{0}, iso_ran{0}, iso_who{0};
  g.run([&] {
    started = true;
    (void)spin_until(cancelled);
    iso_code = code_of([&] { wspool::isolate([&] { iso_ran++; }); });
    iso_who = thrown_by([] { wspool::isolate([] { throw boom(9); }); });
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  CHECK(!g.wait());
  CHECK_EQ(iso_ran.load(), 1);
  CHECK_EQ(iso_code.load(), ECANCELED);
  CHECK_EQ(iso_who.load(), 9);
}

static void case_blocking() {
  /* outside every pool: regions do nothing, blocking() returns f's result */
  {
    wspool::blocking_region r1;
    wspool::blocking_region r2;
  }
  CHECK_EQ(wspool::blocking([] { return 5; }), 5);
  int v = 0;
  int &rv = wspool::blocking([&v]() -> int & { return v; });
  CHECK(&rv == &v);
  CHECK_EQ(thrown_by([] { wspool::blocking([] { throw boom(8); }); }), 8);
  /* the limit */
  wspool::pool one(1);
  one.set_standin_limit(2);
  CHECK_EQ(one.standin_limit(), 2);
  CHECK_EQ(code_of([&] { one.set_standin_limit(POOL_MAX_THREADS + 1); }), EINVAL);
  CHECK_EQ(one.standin_limit(), 2);
  std::atomic<unsigned> in_task{0};
  one.submit([&] { in_task = wspool::standin_limit(); }); /* the caller's pool */
  one.wait_idle();
  CHECK_EQ(in_task.load(), 2);
  /* The lone worker blocks in a region until a task queued behind it on
   * its own deque has run: only a stand-in can run it. Regions nest: the
   * inner ones have ended, the outer one still counts. (Group tasks, not
   * submitted ones, and waited for by the group.) */
  wspool::task_group g(one);
  std::atomic<bool> second{false};
  std::atomic<int> seen{-1};
  g.run([&] {
    g.run([&] { second = true; });
    wspool::blocking_region outer;
    {
      wspool::blocking_region inner;
      { wspool::blocking_region innermost; }
    }
    seen = spin_until([&] { return second.load(); });
  });
  CHECK(g.wait());
  CHECK_EQ(seen.load(), 1);
  /* blocking(f) on a worker: the same, f's result returned; an exception
   * leaves f and ends the region */
  std::atomic<bool> third{false};
  std::atomic<int> got{0}, who{0};
  g.run([&] {
    g.run([&] { third = true; });
    got = wspool::blocking([&] { return spin_until([&] { return third.load(); }) ? 7 : -7; });
    who = thrown_by([] { wspool::blocking([] { throw boom(9); }); });
  });
  CHECK(g.wait());
  CHECK_EQ(got.load(), 7);
  CHECK_EQ(who.load(), 9);
  /* limit 0: regions are off, the blocked task holds the lone worker (a
   * fresh pool, whose stand-ins never started) */
  wspool::pool solo(1);
  solo.set_standin_limit(0);
  wspool::task_group h(solo);
  std::atomic<bool> fourth{false};
  std::atomic<int> early{-1};
  h.run([&] {
    h.run([&] { fourth = true; });
    wspool::blocking_region region;
    early = spin_until([&] { return fourth.load(); }, 0.2);
  });
  CHECK(h.wait());
  CHECK_EQ(early.load(), 0);
  CHECK(fourth.load());
}

/* A logical clock: each job takes a tick as it starts and one as it ends;
 * an edge pred -> succ holds when pred's end comes before succ's start. */
struct stamp {
  std::atomic<long> start{-1}, end{-1}, runs{0};
};

struct job_clock {
  std::atomic<long> now{0};
  std::function<void()> tick(stamp &s) {
    return [this, &s] {
      s.start = now++;
      s.runs++;
      s.end = now++;
    };
  }
};

static void check_edge(const stamp &pred, const stamp &succ) {
  CHECK(pred.end.load() >= 0);
  CHECK(succ.start.load() > pred.end.load());
}

/* A chain of n jobs started in `order` (0: forward, 1: backward, 2:
 * scattered): each runs once, after the one before it. */
static void test_job_chain(wspool::pool &p, int order) {
  const int n = 211; /* prime: i * 37 % n visits every job */
  job_clock clk;
  std::vector<stamp> st((size_t)n);
  std::deque<wspool::job> jobs;
  for (int i = 0; i < n; i++) jobs.emplace_back(p, clk.tick(st[(size_t)i]));
  for (int i = 1; i < n; i++) jobs[(size_t)i].after(jobs[(size_t)i - 1]);
  for (int k = 0; k < n; k++) {
    int i = order == 0 ? k : order == 1 ? n - 1 - k : k * 37 % n;
    jobs[(size_t)i].start();
  }
  jobs.back().wait();
  for (int i = 0; i < n; i++) {
    CHECK_EQ(st[(size_t)i].runs.load(), 1);
    CHECK_EQ(jobs[(size_t)i].status(), 0);
    if (i > 0) check_edge(st[(size_t)i - 1], st[(size_t)i]);
  }
}

/* a -> b, a -> c, b -> d, c -> d; then a fan-out and fan-in of m jobs (past
 * the two edges a job holds). */
static void test_job_diamond(wspool::pool &p) {
  job_clock clk;
  stamp sa, sb, sc, sd;
  wspool::job a(p, clk.tick(sa)), b(p, clk.tick(sb)), c(p, clk.tick(sc)), d(p, clk.tick(sd));
  b.after(a);
  c.after(a);
  d.after(b);
  d.after(c);
  d.start();
  c.start();
  b.start();
  CHECK_EQ(b.status(), EINPROGRESS); /* a is not started */
  a.start();
  d.wait();
  for (stamp *s : {&sa, &sb, &sc, &sd}) CHECK_EQ(s->runs.load(), 1);
  check_edge(sa, sb);
  check_edge(sa, sc);
  check_edge(sb, sd);
  check_edge(sc, sd);
  const int m = 100;
  stamp src, sink;
  std::vector<stamp> mid((size_t)m);
  wspool::job first(p, clk.tick(src)), last(p, clk.tick(sink));
  std::deque<wspool::job> middle;
  for (int i = 0; i < m; i++) {
    middle.emplace_back(p, clk.tick(mid[(size_t)i]));
    middle.back().after(first);
    last.after(middle.back());
  }
  last.start();
  for (auto &j : middle) j.start();
  first.start();
  last.wait();
  for (int i = 0; i < m; i++) {
    CHECK_EQ(mid[(size_t)i].runs.load(), 1);
    check_edge(src, mid[(size_t)i]);
    check_edge(mid[(size_t)i], sink);
  }
}

static void case_job_order() {
  wspool::pool one(1), three(3);
  for (wspool::pool *p : {&one, &three}) {
    for (int order = 0; order < 3; order++) test_job_chain(*p, order);
    test_job_diamond(*p);
  }
  /* on the default pool, from main */
  job_clock clk;
  stamp s1, s2;
  {
    wspool::job j1(clk.tick(s1)), j2(clk.tick(s2));
    j2.after(j1);
    j1.start();
    j2.start();
    j2.wait();
  }
  check_edge(s1, s2);
  /* a predecessor complete before after(), one on another pool; jobs made
   * and waited inside a task (on its pool, helping) */
  stamp s3, s4, s5;
  wspool::job done(one, clk.tick(s3));
  done.start();
  done.wait();
  wspool::job next(three, clk.tick(s4)), other(one, clk.tick(s5));
  next.after(done);
  next.after(other);
  next.start();
  other.start();
  next.wait();
  check_edge(s3, s4);
  check_edge(s5, s4);
  std::atomic<long> inside{0};
  three.join(
      [&] {
        wspool::job a([&] { inside += 1; }), b([&] { inside += 10; });
        b.after(a);
        a.start();
        b.start();
        b.wait();
        CHECK_EQ(inside.load(), 11);
      },
      [] {});
  /* misuse: after() on itself or once started, a second start() */
  wspool::job j(three, [] {});
  CHECK_EQ(code_of([&] { j.after(j); }), EINVAL);
  j.start();
  CHECK_EQ(code_of([&] { j.start(); }), EINVAL);
  CHECK_EQ(code_of([&] { j.after(done); }), EINVAL);
  j.wait();
}

static void test_job_exceptions(wspool::pool &p) {
  /* a lone job: wait() rethrows, every time, from two threads at once */
  {
    wspool::job j(p, [] { throw boom(1); });
    j.start();
    CHECK_EQ(thrown_by([&] { j.wait(); }), 1);
    CHECK_EQ(thrown_by([&] { j.wait(); }), 1);
    CHECK_EQ(j.status(), ECANCELED);
    std::atomic<int> other{0};
    std::thread t([&] { other = thrown_by([&] { j.wait(); }); });
    int here = thrown_by([&] { j.wait(); });
    t.join();
    CHECK_EQ(here, 1);
    CHECK_EQ(other.load(), 1);
  }
  /* a -> b -> c, b throws: a ran, c was skipped with ECANCELED */
  {
    std::atomic<int> ran_a{0}, ran_c{0};
    wspool::job a(p, [&] { ran_a++; }), b(p, [] { throw boom(2); }), c(p, [&] { ran_c++; });
    b.after(a);
    c.after(b);
    c.start();
    b.start();
    a.start();
    CHECK_EQ(code_of([&] { c.wait(); }), ECANCELED);
    CHECK_EQ(thrown_by([&] { b.wait(); }), 2);
    CHECK_EQ(thrown_by([&] { a.wait(); }), -1);
    CHECK_EQ(ran_a.load(), 1);
    CHECK_EQ(ran_c.load(), 0);
  }
  /* a diamond whose one branch throws: the other ran, the join skipped */
  {
    std::atomic<int> ran{0};
    wspool::job a(p, [&] { ran++; }), b(p, [] { throw boom(3); }), c(p, [&] { ran++; }),
        d(p, [&] { ran += 100; });
    b.after(a);
    c.after(a);
    d.after(b);
    d.after(c);
    for (wspool::job *j : {&a, &b, &c, &d}) j->start();
    CHECK_EQ(code_of([&] { d.wait(); }), ECANCELED);
    CHECK_EQ(thrown_by([&] { b.wait(); }), 3);
    c.wait();
    CHECK_EQ(ran.load(), 2);
  }
  /* a C failure travels down: wspool::error(EIO) from both; an exception
   * thrown after it is dropped */
  {
    std::atomic<int> ran_b{0};
    wspool::job a(p, [] {
      CHECK_EQ(pool_fail(EIO), 0);
      throw boom(4);
    });
    wspool::job b(p, [&] { ran_b++; });
    b.after(a);
    a.start();
    b.start();
    CHECK_EQ(code_of([&] { b.wait(); }), EIO);
    CHECK_EQ(code_of([&] { a.wait(); }), EIO);
    CHECK_EQ(ran_b.load(), 0);
  }
  /* cancel() before the start: nothing runs, ECANCELED down the chain */
  {
    std::atomic<int> ran{0};
    wspool::job a(p, [&] { ran++; }), b(p, [&] { ran++; });
    b.after(a);
    a.cancel();
    a.cancel();
    a.start();
    b.start();
    CHECK_EQ(code_of([&] { b.wait(); }), ECANCELED);
    CHECK_EQ(code_of([&] { a.wait(); }), ECANCELED);
    CHECK_EQ(ran.load(), 0);
  }
  /* cancel() while it runs: it sees is_cancelled(); its exception after
   * the cancel is dropped */
  {
    std::atomic<bool> started{false};
    std::atomic<int> saw{-1};
    wspool::job a(p, [&] {
      started = true;
      saw = spin_until(cancelled);
      throw boom(5);
    });
    a.start();
    CHECK(spin_until([&] { return started.load(); }));
    a.cancel();
    CHECK_EQ(code_of([&] { a.wait(); }), ECANCELED);
    CHECK_EQ(saw.load(), 1);
  }
}

static void case_job_exceptions() {
  wspool::pool one(1), three(3);
  test_job_exceptions(one);
  test_job_exceptions(three);
  /* a job is nested in no unit: made in a cancelled group's task, it runs
   * uncancelled, and is_cancelled() in it is false */
  wspool::task_group g(three);
  std::atomic<bool> started{false};
  std::atomic<int> in_job{-1}, job_code{-3};
  g.run([&] {
    started = true;
    (void)spin_until(cancelled);
    wspool::job j([&] { in_job = wspool::is_cancelled(); });
    j.start();
    job_code = code_of([&] { j.wait(); });
  });
  CHECK(spin_until([&] { return started.load(); }));
  g.cancel();
  CHECK(!g.wait());
  CHECK_EQ(in_job.load(), 0);
  CHECK_EQ(job_code.load(), -1);
}

/* A callable that counts its live copies. */
struct counted {
  static std::atomic<long> live;
  std::atomic<int> *ran;
  char pad[8];
  explicit counted(std::atomic<int> *r) : ran(r), pad{} { live++; }
  counted(const counted &o) : ran(o.ran), pad{} { live++; }
  ~counted() { live--; }
  void operator()() const { (*ran)++; }
};
std::atomic<long> counted::live{0};

struct counted_big : counted {
  char more[256];
  explicit counted_big(std::atomic<int> *r) : counted(r), more{} {}
};

static void case_job_destroy() {
  wspool::pool three(3);
  std::atomic<int> ran{0};
  /* started and running: the destructor waits; the exception of a job
   * never waited for is dropped */
  std::atomic<bool> done{false};
  {
    wspool::job j(three, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      done = true;
    });
    wspool::job k(three, [] { throw boom(1); });
    j.start();
    k.start();
  }
  CHECK(done.load());
  /* never started, alone, or in a graph abandoned by an exception before
   * its start (predecessors declared first, or last): dropped at once, the
   * pool not touched */
  unsigned long long base = skipped_now(three);
  {
    wspool::job j(three, [&] { ran++; });
  }
  CHECK_EQ(thrown_by([&] {
             wspool::job a(three, [&] { ran++; }), b(three, [&] { ran++; }), c(three, [&] { ran++; });
             b.after(a);
             c.after(b);
             c.after(a);
             throw boom(2);
           }),
           2);
  CHECK_EQ(thrown_by([&] {
             wspool::job c(three, [&] { ran++; }), b(three, [&] { ran++; }), a(three, [&] { ran++; });
             b.after(a);
             c.after(b);
             c.after(a);
             throw boom(3);
           }),
           3);
  three.wait_idle();
  CHECK_EQ(ran.load(), 0);
  CHECK_EQ(skipped_now(three), base);
  /* a never started predecessor of a started job: cancelled and started
   * by its destructor, so the successor is skipped */
  {
    wspool::job b(three, [&] { ran++; });
    {
      wspool::job a(three, [&] { ran++; });
      b.after(a);
      b.start();
      CHECK_EQ(b.status(), EINPROGRESS);
    }
    CHECK_EQ(code_of([&] { b.wait(); }), ECANCELED);
  }
  CHECK_EQ(ran.load(), 0);
  CHECK_EQ(skipped_since(three, base, 2), 2);
  /* never started, put after a running job: its destructor waits for that
   * one, then drops it unrun */
  std::atomic<bool> a_done{false};
  {
    wspool::job a(three, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      a_done = true;
    });
    a.start();
    {
      wspool::job b(three, [&] { ran++; });
      b.after(a);
    }
    CHECK(a_done.load());
    CHECK_EQ(a.status(), 0);
  }
  CHECK_EQ(ran.load(), 0);
  /* never started, its C handle given to a C job put after it: the C job
   * is released with ECANCELED */
  pool_job_t cj;
  CHECK_OK(pool_job_init(
      &cj, three.get(), [](void *r) { static_cast<std::atomic<int> *>(r)->fetch_add(1); }, &ran));
  {
    wspool::job j(three, [&] { ran++; });
    CHECK_OK(pool_job_after(&cj, j.get()));
    CHECK_OK(pool_job_start(&cj));
  }
  CHECK_EQ(pool_job_wait(&cj), ECANCELED);
  CHECK_EQ(ran.load(), 0);
  /* the callable: one copy, destroyed with the job, run or not, kept in
   * the job or on the heap */
  CHECK_EQ(counted::live.load(), 0);
  {
    counted small(&ran);
    counted_big big(&ran);
    wspool::job j1(three, small), j2(three, big), j3(three, small), j4(three, counted_big(&ran));
    CHECK_EQ(counted::live.load(), 2 + 4);
    j1.start();
    j2.start();
    j1.wait();
    j2.wait();
    CHECK_EQ(ran.load(), 2);
    CHECK_EQ(counted::live.load(), 2 + 4);
  }
  CHECK_EQ(counted::live.load(), 0);
#if !TEST_UNDER_ASAN && !TEST_UNDER_TSAN
  /* a small callable needs no allocation, a big one one */
  {
    counted small(&ran);
    counted_big big(&ran);
    long before = news.load();
    wspool::job j1(three, small);
    long mid = news.load();
    wspool::job j2(three, big);
    long after = news.load();
    CHECK_EQ(mid - before, 0);
    CHECK_EQ(after - mid, 1);
  }
#endif
}

static void case_join() {
  wspool::pool one(1), three(3);
  CHECK_EQ(one.threads(), 1);
  CHECK_EQ(three.threads(), 3);
  test_join(one);
  test_join(three);
  CHECK_EQ(fib(15), fib_seq(15)); /* from main: the default pool */
}

static void case_join_exceptions() {
  wspool::pool one(1);
  test_join_exceptions(one);
}

static void case_parallel_for() {
  wspool::pool one(1), three(3);
  test_parallel_for(one);
  test_parallel_for(three);
}

static void case_reduce() {
  wspool::pool one(1), three(3);
  test_reduce(three, one);
}

static void case_group() {
  wspool::pool one(1), three(3);
  test_group(one);
  test_group(three);
}

/* pool::wait_idle from two outside threads at once, after a submitted
 * task threw: each waits, exactly one rethrows (before, both could take
 * the one kept exception: a crash, or two catches). Each round the task
 * has finished (the C wait) before both threads are let go together, so
 * their rethrows meet; the threads live across rounds. */
static void wait_idle_together(wspool::pool &p, unsigned long rounds) {
  std::atomic<unsigned long> go{0}, done{0};
  std::atomic<int> caught{0};
  auto waiter = [&] {
    for (unsigned long r = 1; r <= rounds; r++) {
      while (go.load() < r) std::this_thread::yield();
      if (thrown_by([&] { p.wait_idle(); }) == 7) caught++;
      done++;
    }
  };
  std::thread a(waiter), b(waiter);
  for (unsigned long r = 1; r <= rounds; r++) {
    p.submit([] { throw boom(7); });
    CHECK_OK(pool_wait_idle(p.get()));
    caught = 0;
    go = r;
    while (done.load() < 2 * r) std::this_thread::yield();
    CHECK_EQ(caught.load(), 1);
  }
  a.join();
  b.join();
}

static void case_submit() {
  wspool::pool three(3);
  test_submit(three);
  wspool::pool two(2);
  wait_idle_together(two, check_iters(60000));
}

static void case_errors() { test_errors(); }

/* try_submit, pending and resize on a pool of 1 (max 3) bounded at 2:
 * with the worker held, two wait and the third try fails; a resize out
 * of range throws EINVAL; after the release every accepted task ran once. */
static void case_bounded_resize() {
  pool_config_t c = wspool::pool::default_config();
  c.threads = 1;
  c.max_threads = 3;
  c.max_queued = 2;
  wspool::pool p(c);
  std::atomic<int> gate{0}, started{0}, ran{0};
  p.submit([&] {
    started++;
    while (!gate.load()) std::this_thread::yield();
    ran++;
  });
  while (started.load() == 0) std::this_thread::yield();
  CHECK(p.try_submit([&] { ran++; }));
  CHECK(p.try_submit([&] { ran++; }));
  CHECK(!p.try_submit([&] { ran += 100; }));
  std::pair<std::size_t, std::size_t> pr = p.pending();
  CHECK_EQ(pr.first, 2u);
  CHECK_EQ(pr.second, 1u);
  int code = 0;
  try {
    p.resize(4);
  } catch (const wspool::error &e) {
    code = e.code();
  }
  CHECK_EQ(code, EINVAL);
  p.resize(3);
  CHECK_EQ(p.threads(), 3u);
  gate = 1;
  p.wait_idle();
  CHECK_EQ(ran.load(), 3);
  p.resize(1);
  CHECK_EQ(p.threads(), 1u);
}

static void case_no_allocation() {
  wspool::pool one(1), three(3);
  test_no_allocation(one);
  test_no_allocation(three);
}

TEST_MAIN(240, TEST_CASE(join), TEST_CASE(join_exceptions), TEST_CASE(parallel_for),
          TEST_CASE(reduce), TEST_CASE(group), TEST_CASE(submit), TEST_CASE(errors),
          TEST_CASE(no_allocation), TEST_CASE(group_exception), TEST_CASE(group_cancel),
          TEST_CASE(nested_cancel), TEST_CASE(parallel_for_cancel), TEST_CASE(join_cancel),
          TEST_CASE(is_cancelled), TEST_CASE(isolate), TEST_CASE(blocking), TEST_CASE(job_order),
          TEST_CASE(job_exceptions), TEST_CASE(job_destroy), TEST_CASE(bounded_resize))
