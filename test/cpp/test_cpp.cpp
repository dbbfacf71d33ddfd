/* SPDX-License-Identifier: MIT */
/* The C++ layer (wspool.hpp).
 *
 *  - join: fib on pools of 1 and 3 workers and on the default pool, from
 *    outside (pool::join, free join) and recursively inside, exact results;
 *    move-only callables from outside and inside;
 *  - exceptions: the first one thrown comes out of join (f's when both
 *    throw on a one-worker pool, where g runs after f), of parallel_for,
 *    parallel_reduce, task_group::wait and pool::wait_idle; the waiter is
 *    reset afterwards (the next wait throws nothing); a parallel_for whose
 *    every index throws still returns, once;
 *  - parallel_for: per index and per subrange, int / size_t / negative
 *    ranges, empty ranges, each index exactly once;
 *  - parallel_reduce: sums, a non-commutative combine (index order kept),
 *    deterministic mode bit-identical across pools;
 *  - task_group: many tasks, nested groups, reuse after an exception;
 *  - submit + wait_idle;
 *  - C errors become wspool::error with the errno value;
 *  - no allocation: join, parallel_for and parallel_reduce make no call to
 *    operator new (counted by a replacement below).
 * Cases: join, join_exceptions, parallel_for, reduce, group, submit,
 * errors, no_allocation. */
#include <wspool.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
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

static void case_submit() {
  wspool::pool three(3);
  test_submit(three);
}

static void case_errors() { test_errors(); }

static void case_no_allocation() {
  wspool::pool one(1), three(3);
  test_no_allocation(one);
  test_no_allocation(three);
}

TEST_MAIN(120, TEST_CASE(join), TEST_CASE(join_exceptions), TEST_CASE(parallel_for),
          TEST_CASE(reduce), TEST_CASE(group), TEST_CASE(submit), TEST_CASE(errors),
          TEST_CASE(no_allocation))
