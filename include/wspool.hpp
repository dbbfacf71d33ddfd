/* SPDX-License-Identifier: MIT */
/**
 * \file wspool.hpp
 * \brief A header-only C++17 layer over wspool.h: lambdas instead of
 * `void *`, RAII pools, exceptions carried to the waiter.
 *
 * Every call expands to the C call it names (see docs/cpp.md):
 *  - wspool::join(f, g): pool_spawn() of `g`, `f()` here, pool_take(), and
 *    `g()` as a plain, inlinable call when nobody stole it: the fast path
 *    of the C fork/join pattern. The lambdas stay in the caller's frame, the
 *    spawned frame on its stack: nothing is allocated. From a thread outside
 *    every pool, pool_join() runs both on the default pool.
 *  - wspool::parallel_for(b, e, f): pool_parallel_for() whose range body
 *    calls `f(i)` for each index (or `f(lo, hi)` for the whole subrange,
 *    when `f` takes two indices), inlined into the body's loop.
 *  - wspool::parallel_reduce(b, e, identity, body, combine):
 *    pool_parallel_reduce() on a trivially copyable `T`.
 *  - wspool::task_group: a pool_group_t (cancel(): pool_group_cancel());
 *    wspool::pool::submit(): pool_submit(). These two keep a copy of the
 *    callable alive until it runs, one allocation per call (as oneTBB's
 *    task_group and enqueue do).
 *  - wspool::is_cancelled(): pool_cancelled().
 *  - wspool::isolate(f): pool_isolate() of `f`, its result returned.
 *  - wspool::blocking_region: pool_blocking_begin() and pool_blocking_end()
 *    as a scope; wspool::blocking(f): `f()` inside one.
 *  - wspool::job: a pool_job_t and a copy of the callable, kept in the job
 *    when small (six words), else in one allocation; after(), start(),
 *    wait(), status(), cancel() (pool_job_after() ... pool_job_cancel()).
 * The layer allocates nothing beyond that: join(), parallel_for() and
 * parallel_reduce() add no allocation to what the C calls do.
 *
 * Exceptions use the C API's cancellation (wspool.h, "Cancellation and
 * errors"). Its units of work are a task_group (from its construction or
 * its last wait() to the next wait()), a parallel_for() or
 * parallel_reduce() call, and a join() from a thread that is not a worker
 * of its pool (pool_join()). An exception leaving a task of a unit (a
 * group's task, a loop body's subrange, a half of that join) is caught on
 * the worker, which calls pool_fail(ECANCELED): if that is the unit's first
 * failure the exception is kept, and the unit's wait rethrows it
 * (task_group::wait(), or the loop or join call when it returns). An
 * exception thrown once the unit had failed or been cancelled is dropped.
 * The failure cancels the unit: the runtime skips what of it has not
 * started (group tasks, loop subranges, join halves); running tasks
 * finish (a long one polls wspool::is_cancelled()). A combine of
 * parallel_reduce() runs on the caller once the loop is over, outside its
 * unit: the first exception a combine throws is rethrown, the combines
 * after it are skipped.
 *
 * Cancellation reaches every unit nested in the cancelled one,
 * transitively and across pools: a task_group constructed, a loop called,
 * or a join called from outside its pool, while a task of the unit runs
 * (anywhere in it, also inside a join() half it runs on a worker). It does
 * not reach the work the unit is nested in, its siblings, or tasks
 * submitted with pool::submit(). task_group::cancel() cancels a group (and
 * what is nested in it) without an exception: its wait() then returns
 * false, as it does when work the group is nested in was cancelled. A loop
 * (or a join from outside) nested in cancelled work throws
 * wspool::error(ECANCELED), unless one of its own tasks threw first (then
 * that exception); uncaught, it only unwinds the task that called the
 * loop: the enclosing unit is cancelled already and its wait reports that
 * (false, or the exception that cancelled it).
 *
 * join() on a worker of its pool is not a unit (pool_spawn() and
 * pool_take(): a spawned frame belongs to its spawner's unit, and the
 * runtime never skips one): when `f` throws, `g` does not run if it was
 * taken back unstarted; if a thief had it, join() waits for it (dropping
 * what it threw); then `f`'s exception is rethrown. When only `g` throws,
 * its exception is rethrown. Tasks submitted with pool::submit() belong to
 * no unit and are never skipped: the first exception one throws (in time)
 * is rethrown by pool::wait_idle(), later ones are dropped.
 *
 * A job is a unit nested in no other (like a submitted task, it is not
 * cancelled with the work that made it): its callable's exception fails
 * it with pool_fail(ECANCELED), the jobs after it are skipped with
 * ECANCELED (their wait() throws wspool::error(ECANCELED): the exception
 * does not travel down the graph, the C status does), and job::wait()
 * rethrows it. isolate() is a unit nested in the current one; what `f`
 * throws comes out of it as from a plain call.
 *
 * Errors of the C API (ENOMEM, ESHUTDOWN, the code of a C task's
 * pool_fail(), ECANCELED as above, ...) throw wspool::error.
 */
#ifndef WSPOOL_HPP
#define WSPOOL_HPP

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "wspool.h"

namespace wspool {

/** An error code of the C API (an errno value), as an exception. */
class error : public std::runtime_error {
 public:
  error(int code, const char *where)
      : std::runtime_error(std::string(where) + ": " + pool_strerror(code)), code_(code) {}
  /** The errno value the C call returned. */
  int code() const noexcept { return code_; }

 private:
  int code_;
};

namespace detail {

[[noreturn]] inline void fail(int rc, const char *where) { throw error(rc, where); }
inline void check(int rc, const char *where) {
  if (rc != 0) fail(rc, where);
}

/* The first exception kept for one wait. Nothing is constructed until a
 * task throws, so the non-throwing path is a store and a load. The slot
 * itself has nothing to do when it goes out of scope: its owner either
 * rethrows or discards what it holds (join() does, on every path where a
 * task may have thrown), or is a first_exception, whose destructor
 * discards. In a unit, pool_fail() picks the one exception to keep
 * (fail_unit()); the slot keeps the first one offered all the same. */
class exception_slot {
 public:
  exception_slot() noexcept = default;
  exception_slot(const exception_slot &) = delete;
  exception_slot &operator=(const exception_slot &) = delete;
  /* An exception was caught: keep it if it is the first. Inside a catch.
   * A slot being emptied (TAKING: a wait of another thread, pool::wait_idle)
   * is empty a few instructions later: wait for that, then keep this one. */
  void capture() noexcept {
    int expect = NONE;
    while (!state_.compare_exchange_weak(expect, WRITING, std::memory_order_acq_rel)) {
      if (expect == WRITING || expect == SET) return; /* not the first */
      expect = NONE;
    }
    ::new (static_cast<void *>(buf_)) std::exception_ptr(std::current_exception());
    state_.store(SET, std::memory_order_release);
  }
  /* True once an exception was kept (reduce skips later combines). */
  bool failed() const noexcept { return state_.load(std::memory_order_relaxed) != NONE; }
  /* After the wait: rethrow the first exception, if any, and reset. Of
   * waits in several threads at once (pool::wait_idle), one rethrows it. */
  void rethrow() {
    std::exception_ptr e;
    if (take(e)) std::rethrow_exception(e);
  }
  /* After the wait: drop the exception, if any, and reset. */
  void discard() noexcept {
    std::exception_ptr e;
    take(e);
  }

 private:
  enum { NONE, WRITING, SET, TAKING };
  /* Moves the kept exception to e and empties the slot: claimed first (an
   * acquire CAS, after the capture's release store of SET), so that of
   * several callers at once only one touches it. */
  bool take(std::exception_ptr &e) noexcept {
    int expect = SET;
    if (!state_.compare_exchange_strong(expect, TAKING, std::memory_order_acquire)) return false;
    e = std::move(*ptr());
    ptr()->~exception_ptr();
    /* Release: the next capture's construction comes after this destruction. */
    state_.store(NONE, std::memory_order_release);
    return true;
  }
  std::exception_ptr *ptr() noexcept {
    return std::launder(reinterpret_cast<std::exception_ptr *>(buf_));
  }
  std::atomic<int> state_{NONE};
  alignas(std::exception_ptr) unsigned char buf_[sizeof(std::exception_ptr)];
};

/* An exception slot that drops what it holds when it goes out of scope
 * (a wait that itself failed never rethrows). */
class first_exception : public exception_slot {
 public:
  first_exception() noexcept = default;
  ~first_exception() { discard(); }
};

/* In a catch, in a task of a unit (a group's task, a loop's body, a half
 * of pool_join()): fail the unit, which cancels it, and keep the exception
 * if that is the unit's first failure (pool_fail() returns 0). EALREADY:
 * the unit had failed or been cancelled before, the exception is dropped.
 * ENOENT (no unit is current, which the runtime never lets happen here)
 * keeps the first exception, as a submitted task does. */
inline void fail_unit(exception_slot &exc) noexcept {
  if (pool_fail(ECANCELED) != EALREADY) exc.capture();
}

/* A callable that lives elsewhere (the caller's frame), as a pool_fn.
 * InUnit: a half of pool_join(), whose exception fails the join's unit;
 * otherwise a spawned frame (the runtime never skips it), whose exception
 * only goes to the slot. */
template <class F, bool InUnit = false>
struct call_ref {
  F *f;
  exception_slot *exc;
  static void run(void *p) noexcept {
    call_ref *c = static_cast<call_ref *>(p);
    try {
      (*c->f)();
    } catch (...) {
      if constexpr (InUnit)
        fail_unit(*c->exc);
      else
        c->exc->capture();
    }
  }
};

/* The pool the calling thread works for, NULL on other threads. With the
 * header's inline fast paths this is the thread-local word pool_spawn()
 * itself tests, not a call into the library. */
inline pool_t *current() noexcept {
#ifdef POOL__INLINE
  return static_cast<pool_t *>(pool__tls.pool);
#else
  return pool_current();
#endif
}

/* join from a thread that is not a worker of `p`: both halves run on the
 * pool while this one waits, as the halves of pool_join()'s unit: the
 * first to throw fails it (the other half is skipped if it has not
 * started) and its exception comes out here. Out of line and cold, so
 * that the caller's inline path stays small; `f` comes as a copy when it
 * can, so that its address never escapes the caller and the compiler keeps
 * its captures in registers there. */
template <class F, class G>
[[gnu::noinline, gnu::cold]] void join_outside(pool_t *p, F f, G &g) {
  using FR = std::remove_reference_t<F>;
  first_exception exc;
  call_ref<FR, true> cf{&f, &exc};
  call_ref<G, true> cg{&g, &exc};
  int rc = pool_join(p, &call_ref<FR, true>::run, &cf, &call_ref<G, true>::run, &cg);
  exc.rethrow(); /* before rc, which is then ECANCELED */
  check(rc, "pool_join");
}

/* join's `f` threw (called inside its catch): `g` is dropped if it is
 * taken back unstarted, else waited for on the thief that took it (what
 * it threw is dropped); then f's exception goes on. */
[[noreturn, gnu::noinline, gnu::cold]] inline void join_unwind(pool_task_t *t,
                                                               exception_slot &exc) {
  if (pool_take(t) != POOL_TAKEN) exc.discard();
  throw;
}

/* join's `g` ran on a thief (rc from pool_take): rethrow what it threw. */
[[gnu::noinline, gnu::cold]] inline void join_stolen(int rc, exception_slot &exc) {
  if (rc != 0) {
    exc.discard();
    fail(rc, "pool_take");
  }
  exc.rethrow();
}

/* join on `p` (NULL: the caller's pool, else the default pool). On a worker
 * of that pool: spawn g, run f, take g back (pool_take) and call it, unless
 * a thief has it; no unit of its own (g's frame belongs to the caller's
 * unit). On the path where g is taken back, the exception slot is never
 * read: only a thief writes it, and f's exceptions leave through
 * join_unwind. */
template <class F, class G>
inline void join(pool_t *p, F &f, G &g) {
  pool_t *cur = current();
  if (__builtin_expect(cur == nullptr || (p != nullptr && p != cur), 0)) {
    if constexpr (std::is_copy_constructible_v<F>)
      join_outside<F, G>(p, f, g);
    else
      join_outside<F &, G>(p, f, g);
    return;
  }
  exception_slot exc;
  call_ref<G> cg{&g, &exc};
  pool_task_t t;
  check(pool_spawn(p, &t, &call_ref<G>::run, &cg), "pool_spawn");
  try {
    f();
  } catch (...) {
    join_unwind(&t, exc);
  }
  int rc = pool_take(&t);
  if (__builtin_expect(rc == POOL_TAKEN, 1)) {
    g(); /* nothing is pending: its exception leaves as from a plain call */
    return;
  }
  join_stolen(rc, exc);
}

template <class T>
using unsigned_of = std::make_unsigned_t<T>;

/* Index + offset, for any integral index type, without signed overflow. */
template <class I>
I at(I b, std::size_t off) noexcept {
  return static_cast<I>(static_cast<unsigned_of<I>>(b) + static_cast<unsigned_of<I>>(off));
}

template <class I>
std::size_t count(I b, I e) {
  static_assert(std::is_integral_v<I>, "wspool: loop indices must be integers");
  if (e < b) fail(EINVAL, "parallel_for: end before begin");
  return static_cast<std::size_t>(static_cast<unsigned_of<I>>(e) - static_cast<unsigned_of<I>>(b));
}

template <class I, class F>
struct for_ctx {
  I b;
  F *f;
  first_exception exc;
  static void body(std::size_t lo, std::size_t hi, void *p) noexcept {
    for_ctx *c = static_cast<for_ctx *>(p);
    /* Locals: the body's stores cannot then be taken to change them. */
    const I b = c->b;
    F &f = *c->f;
    try {
      if constexpr (std::is_invocable_v<F &, I, I>) {
        f(at(b, lo), at(b, hi));
      } else {
        static_assert(std::is_invocable_v<F &, I>,
                      "wspool::parallel_for: the body takes an index, or a subrange (lo, hi)");
        for (std::size_t i = lo; i < hi; i++) f(at(b, i));
      }
    } catch (...) {
      fail_unit(c->exc); /* the runtime skips the subranges not started */
    }
  }
};

template <class I, class F>
void parallel_for(pool_t *p, I b, I e, std::size_t grain, F &f) {
  std::size_t n = count(b, e);
  for_ctx<I, F> c{b, &f, {}};
  int rc = pool_parallel_for(p, 0, n, grain, &for_ctx<I, F>::body, &c);
  c.exc.rethrow(); /* before rc, which is then ECANCELED */
  check(rc, "pool_parallel_for");
}

template <class I, class T, class Body, class Combine>
struct reduce_ctx {
  I b;
  const T *identity;
  Body *body;
  Combine *combine;
  first_exception exc;

  static void accumulate(std::size_t lo, std::size_t hi, void *acc, void *p) noexcept {
    reduce_ctx *c = static_cast<reduce_ctx *>(p);
    try {
      T a = *c->identity;
      std::memcpy(static_cast<void *>(&a), acc, sizeof(T));
      if constexpr (std::is_invocable_r_v<T, Body &, I, I, T>) {
        a = (*c->body)(at(c->b, lo), at(c->b, hi), std::move(a));
      } else {
        static_assert(std::is_invocable_r_v<T, Body &, T, I>,
                      "wspool::parallel_reduce: the body is T(T acc, I i) or T(I lo, I hi, T acc)");
        for (std::size_t i = lo; i < hi; i++) a = (*c->body)(std::move(a), at(c->b, i));
      }
      std::memcpy(acc, static_cast<const void *>(&a), sizeof(T));
    } catch (...) {
      fail_unit(c->exc); /* the runtime skips the subranges not started */
    }
  }
  /* The combines run on the caller once the loop is over, outside its
   * unit (so no pool_fail(), which would fail the caller's own unit): the
   * first exception is kept and the combines after it are skipped. */
  static void join(void *into, const void *from, void *p) noexcept {
    reduce_ctx *c = static_cast<reduce_ctx *>(p);
    if (c->exc.failed()) return;
    try {
      T a = *c->identity, b = *c->identity;
      std::memcpy(static_cast<void *>(&a), into, sizeof(T));
      std::memcpy(static_cast<void *>(&b), from, sizeof(T));
      a = (*c->combine)(std::move(a), std::move(b));
      std::memcpy(into, static_cast<const void *>(&a), sizeof(T));
    } catch (...) {
      c->exc.capture();
    }
  }
};

template <class I, class T, class Body, class Combine>
T parallel_reduce(pool_t *p, I b, I e, const T &identity, Body &body, Combine &combine,
                  std::size_t grain, bool deterministic) {
  static_assert(std::is_trivially_copyable_v<T>,
                "wspool::parallel_reduce: the accumulator type must be trivially copyable");
  static_assert(alignof(T) <= alignof(std::max_align_t),
                "wspool::parallel_reduce: over-aligned accumulators are not supported");
  std::size_t n = count(b, e);
  using ctx = reduce_ctx<I, T, Body, Combine>;
  ctx c{b, &identity, &body, &combine, {}};
  pool_reducer_t r;
  r.size = sizeof(T);
  r.identity = static_cast<const void *>(&identity);
  r.body = &ctx::accumulate;
  r.combine = &ctx::join;
  r.ctx = &c;
  r.deterministic = deterministic ? 1 : 0;
  T result = identity;
  int rc = pool_parallel_reduce(p, 0, n, grain, &r, static_cast<void *>(&result));
  c.exc.rethrow(); /* before rc, which is ECANCELED after a body's exception */
  check(rc, "pool_parallel_reduce");
  return result;
}

/* A copy of a callable, owned by the submitted task that runs it once (a
 * submitted task belongs to no unit and is never skipped). */
template <class D>
struct owned_call {
  D f;
  first_exception *exc;
  static void run(void *p) noexcept {
    owned_call *c = static_cast<owned_call *>(p);
    try {
      c->f();
    } catch (...) {
      c->exc->capture();
    }
    delete c;
  }
};

template <class F>
void submit_copy(pool_t *p, F &&f, first_exception *exc) {
  using D = std::decay_t<F>;
  owned_call<D> *c = new owned_call<D>{D(std::forward<F>(f)), exc};
  int rc = pool_submit(p, &owned_call<D>::run, c);
  if (rc != 0) {
    delete c;
    fail(rc, "pool_submit");
  }
}

/* pool_try_submit() of a copy: false when the bound is reached (the copy
 * is dropped, `f` itself untouched when it was an lvalue). */
template <class F>
bool try_submit_copy(pool_t *p, F &&f, first_exception *exc) {
  using D = std::decay_t<F>;
  owned_call<D> *c = new owned_call<D>{D(std::forward<F>(f)), exc};
  int rc = pool_try_submit(p, &owned_call<D>::run, c);
  if (rc == 0) return true;
  delete c;
  if (rc == EAGAIN) return false;
  fail(rc, "pool_try_submit");
}

/* A task_group's task: a copy of the callable, which frees itself when it
 * has run, or when the runtime skips it (pool_group_spawn_drop()'s drop). */
template <class D>
struct group_call {
  D f;
  exception_slot *exc; /* the group's */
  static void run(void *p) noexcept {
    group_call *c = static_cast<group_call *>(p);
    try {
      c->f();
    } catch (...) {
      fail_unit(*c->exc); /* the runtime skips the siblings not started */
    }
    delete c;
  }
  static void drop(void *p) noexcept { delete static_cast<group_call *>(p); }
};

/* What a callable returned, kept until the C call that ran it returns:
 * nothing (void), a pointer (a reference), else the value. */
template <class R>
struct result_box {
  std::optional<R> v;
  template <class F>
  void set(F &f) {
    v.emplace(f());
  }
  R take() { return std::move(*v); }
};
template <class R>
struct result_box<R &> {
  R *v = nullptr;
  template <class F>
  void set(F &f) {
    R &r = f();
    v = &r;
  }
  R &take() noexcept { return *v; }
};
template <class R>
struct result_box<R &&> {
  R *v = nullptr;
  template <class F>
  void set(F &f) {
    R &&r = f();
    v = &r;
  }
  R &&take() noexcept { return std::move(*v); }
};
template <>
struct result_box<void> {
  template <class F>
  void set(F &f) {
    f();
  }
  void take() noexcept {}
};

/* isolate(): `f` runs on the calling thread, inside pool_isolate(). Its
 * exception is kept whatever the unit's state (there is one `f`, and it
 * leaves `f` after every wait inside it has returned, so nothing of the
 * unit is left to cancel) and rethrown once pool_isolate() has returned. */
template <class F, class R>
struct isolate_call {
  F *f;
  result_box<R> result;
  std::exception_ptr exc;
  static void run(void *p) noexcept {
    isolate_call *c = static_cast<isolate_call *>(p);
    try {
      c->result.set(*c->f);
    } catch (...) {
      c->exc = std::current_exception();
    }
  }
};

/* A job's callable: in the job itself when it fits (no allocation), else
 * one heap copy whose pointer the job holds. */
inline constexpr std::size_t job_inline_size = 6 * sizeof(void *);

template <class D>
inline constexpr bool job_inline =
    sizeof(D) <= job_inline_size && alignof(D) <= alignof(std::max_align_t);

template <class D>
struct job_fn {
  static D &get(void *buf) noexcept {
    if constexpr (job_inline<D>)
      return *std::launder(static_cast<D *>(buf));
    else
      return **std::launder(static_cast<D **>(buf));
  }
  template <class F>
  static void make(void *buf, F &&f) {
    if constexpr (job_inline<D>)
      ::new (buf) D(std::forward<F>(f));
    else
      ::new (buf) D *(new D(std::forward<F>(f)));
  }
  static void call(void *buf) { (void)get(buf)(); }
  static void destroy(void *buf) noexcept {
    if constexpr (job_inline<D>)
      get(buf).~D();
    else
      delete &get(buf);
  }
};

}  // namespace detail

/**
 * Run `f()` and `g()`, possibly in parallel; return when both have
 * finished (or `g` was dropped), rethrowing an exception. On a worker, `f`
 * runs here and `g` is spawned (and run here too unless a thief took it):
 * when `f` throws, `g` is dropped if it had not been stolen, and `f`'s
 * exception is rethrown. Elsewhere both run on the default pool, `f` as a
 * copy when it is copyable, as a unit (pool_join()): the first exception
 * is rethrown and the other half skipped if it had not started; nested
 * in cancelled work this throws wspool::error(ECANCELED). Allocates
 * nothing.
 */
template <class F, class G>
void join(F &&f, G &&g) {
  detail::join(nullptr, f, g);
}

/** Call `f(i)` for every `i` in [b, e), or `f(lo, hi)` on disjoint
 *  subranges covering it, in parallel on the caller's pool (or the default
 *  pool); `grain` is the smallest subrange, 0 = automatic. The first
 *  exception thrown is rethrown, and the subranges not started by then
 *  are skipped; nested in cancelled work, this throws
 *  wspool::error(ECANCELED) (subranges may have been skipped). */
template <class B, class E, class F>
void parallel_for(B b, E e, std::size_t grain, F &&f) {
  using I = std::common_type_t<B, E>;
  detail::parallel_for(nullptr, static_cast<I>(b), static_cast<I>(e), grain, f);
}
/** parallel_for() with an automatic grain. */
template <class B, class E, class F>
void parallel_for(B b, E e, F &&f) {
  using I = std::common_type_t<B, E>;
  detail::parallel_for(nullptr, static_cast<I>(b), static_cast<I>(e), 0, f);
}

/**
 * Reduce [b, e): `body(acc, i)` folds one index into an accumulator (or
 * `body(lo, hi, acc)` a whole subrange), `combine(left, right)` joins two
 * partial results in index order (associative, not necessarily
 * commutative). Every partial result starts from `identity`. `T` must be
 * trivially copyable. `deterministic`: the same subranges and combine tree
 * whatever the pool (pool_reducer_t::deterministic). Exceptions and
 * cancellation as parallel_for(); the combines run on the caller after
 * the loop, and the first exception one throws is rethrown.
 */
template <class B, class E, class T, class Body, class Combine>
T parallel_reduce(B b, E e, T identity, Body &&body, Combine &&combine, std::size_t grain = 0,
                  bool deterministic = false) {
  using I = std::common_type_t<B, E>;
  return detail::parallel_reduce(nullptr, static_cast<I>(b), static_cast<I>(e), identity, body,
                                 combine, grain, deterministic);
}

/** True when the calling task's work was cancelled: its unit (a
 *  task_group's task, a loop's body, a half of a join from outside the
 *  pool) or a unit that one is nested in was cancelled, by cancel() or by
 *  an exception (or pool_fail()). False outside every unit: in main(), in a
 *  task submitted with pool::submit(). pool_cancelled(): three loads while
 *  nothing was cancelled, no fence or lock; a long task polls it to stop
 *  early. */
inline bool is_cancelled() noexcept { return pool_cancelled() != 0; }

/** An owning pool: created by the constructor, drained and destroyed by the
 *  destructor. Not copyable or movable (tasks refer to it). */
class pool {
 public:
  /** The defaults of pool_config_default() (which reads WSPOOL_THREADS and
   *  WSPOOL_BIND). */
  static pool_config_t default_config() noexcept {
    pool_config_t c;
    pool_config_default(&c);
    return c;
  }
  /** `threads` workers (0 = one per allowed CPU), otherwise the defaults. */
  explicit pool(unsigned threads = 0) {
    pool_config_t c = default_config();
    if (threads != 0) c.threads = threads;
    create(c);
  }
  explicit pool(const pool_config_t &cfg) { create(cfg); }
  pool(const pool &) = delete;
  pool &operator=(const pool &) = delete;
  /** pool_destroy(): runs everything submitted, joins the workers.
   *  Exceptions of submitted tasks not yet collected by wait_idle() are
   *  dropped. Must not run on one of this pool's workers. */
  ~pool() { (void)pool_destroy(p_); }

  /** The C handle, for the C API. */
  pool_t *get() const noexcept { return p_; }
  unsigned threads() const noexcept { return pool_threads(p_); }

  /** join() on this pool. */
  template <class F, class G>
  void join(F &&f, G &&g) {
    detail::join(p_, f, g);
  }
  /** parallel_for() on this pool. */
  template <class B, class E, class F>
  void parallel_for(B b, E e, std::size_t grain, F &&f) {
    using I = std::common_type_t<B, E>;
    detail::parallel_for(p_, static_cast<I>(b), static_cast<I>(e), grain, f);
  }
  template <class B, class E, class F>
  void parallel_for(B b, E e, F &&f) {
    parallel_for(b, e, 0, f);
  }
  /** parallel_reduce() on this pool. */
  template <class B, class E, class T, class Body, class Combine>
  T parallel_reduce(B b, E e, T identity, Body &&body, Combine &&combine, std::size_t grain = 0,
                    bool deterministic = false) {
    using I = std::common_type_t<B, E>;
    return detail::parallel_reduce(p_, static_cast<I>(b), static_cast<I>(e), identity, body,
                                   combine, grain, deterministic);
  }
  /** Run a copy of `f` once on the pool, fire-and-forget (pool_submit()).
   *  It belongs to no unit: it is never skipped or cancelled, whatever the
   *  task that submitted it. Its exception, if the first, is rethrown by
   *  wait_idle(). */
  template <class F>
  void submit(F &&f) {
    detail::submit_copy(p_, std::forward<F>(f), &exc_);
  }
  /** pool_try_submit(): as submit(), but false instead of waiting when
   *  the pool's bound (pool_config_t::max_queued) is reached. */
  template <class F>
  bool try_submit(F &&f) {
    return detail::try_submit_copy(p_, std::forward<F>(f), &exc_);
  }
  /** pool_pending(): {tasks queued, tasks running}, a snapshot. */
  std::pair<std::size_t, std::size_t> pending() const {
    std::size_t q = 0, r = 0;
    detail::check(pool_pending(p_, &q, &r), "pool_pending");
    return {q, r};
  }
  /** pool_resize(): throws wspool::error(EINVAL) for 0 or above
   *  max_threads, (EDEADLK) from one of this pool's workers. */
  void resize(unsigned threads) { detail::check(pool_resize(p_, threads), "pool_resize"); }
  /** pool_wait_idle(), then rethrow the first exception a submitted task
   *  threw since the last wait_idle(). From several threads at once: each
   *  waits, and one of them rethrows it. */
  void wait_idle() {
    detail::check(pool_wait_idle(p_), "pool_wait_idle");
    exc_.rethrow();
  }
  /** How many stand-in threads may run this pool's work at once while its
   *  tasks are in a blocking_region (pool_standin_limit()). */
  unsigned standin_limit() const noexcept { return pool_standin_limit(p_); }
  /** pool_set_standin_limit(): 0 turns blocking regions off; above
   *  POOL_MAX_THREADS throws wspool::error(EINVAL). */
  void set_standin_limit(unsigned limit) {
    detail::check(pool_set_standin_limit(p_, limit), "pool_set_standin_limit");
  }

 private:
  void create(const pool_config_t &cfg) { detail::check(pool_create(&p_, &cfg), "pool_create"); }
  pool_t *p_ = nullptr;
  detail::first_exception exc_;
};

/** Any number of tasks, waited for together (a pool_group_t), a unit of
 *  work: the first exception a task throws cancels the group (the tasks
 *  not started are skipped) and wait() rethrows it. run() keeps a copy of
 *  the callable until it has run, or until the runtime skips it: one
 *  allocation per run(). A group constructed inside a task is nested in
 *  that task's unit, so cancelling that cancels the group; such a group
 *  must not outlive the task. */
class task_group {
 public:
  /** On the caller's pool, else the default pool. */
  task_group() { init(nullptr); }
  explicit task_group(pool &p) { init(p.get()); }
  task_group(const task_group &) = delete;
  task_group &operator=(const task_group &) = delete;
  /** Waits for the tasks still running; their exception is dropped, and so
   *  is the cancellation or failure. */
  ~task_group() { (void)pool_group_wait(&g_); }

  /** Run a copy of `f` as a task of the group (pool_group_spawn()). Into a
   *  cancelled group, the copy is made and the task is skipped. */
  template <class F>
  void run(F &&f) {
    using D = std::decay_t<F>;
    auto *c = new detail::group_call<D>{D(std::forward<F>(f)), &exc_};
    using call = detail::group_call<D>;
    int rc = pool_group_spawn_drop(&g_, &call::run, c, &call::drop);
    if (rc != 0) {
      delete c;
      detail::fail(rc, "pool_group_spawn");
    }
  }
  /** Cancel the group (pool_group_cancel()): its tasks not started are
   *  skipped, and so is what has not started of every unit nested in its
   *  tasks; running tasks finish (is_cancelled() is true in them). From
   *  any thread, any number of times; lasts until the next wait() returns
   *  (which then returns false, unless a task's exception came first). */
  void cancel() { detail::check(pool_group_cancel(&g_), "pool_group_cancel"); }
  /** Wait for every task run so far (helping, like pool_group_wait()).
   *  Then: rethrow the first exception a task threw, if one did; return
   *  false when the group was cancelled (cancel(), or a cancellation of
   *  work the group is nested in; tasks may have been skipped); throw
   *  wspool::error when the group failed with a C code (a task called
   *  pool_fail() with a code other than ECANCELED); return true when every
   *  task ran. The group may be reused: the wait clears the cancellation
   *  and the failure. */
  bool wait() {
    int rc = pool_group_wait(&g_);
    exc_.rethrow();
    if (rc == ECANCELED) return false;
    detail::check(rc, "pool_group_wait");
    return true;
  }

 private:
  void init(pool_t *p) { detail::check(pool_group_init(&g_, p), "pool_group_init"); }
  pool_group_t g_;
  detail::first_exception exc_;
};

/**
 * Call `f()` on this thread, isolated (pool_isolate()): the waits inside it
 * (a join, a loop, a task_group's wait, on this thread or in what it
 * spawned) run only work spawned inside it, never an unrelated task, so
 * `f` may hold a lock across them. Returns what `f` returns. What `f`
 * throws comes out as from a plain call (an exception of a loop or group
 * inside it reaches it the usual way). When `f` returns normally: a
 * pool_fail() code of C code running as `f` throws wspool::error(code), and
 * an isolate() nested in cancelled work throws wspool::error(ECANCELED),
 * as a loop does. Allocates nothing.
 */
template <class F>
std::invoke_result_t<F &> isolate(F &&f) {
  using R = std::invoke_result_t<F &>;
  using call = detail::isolate_call<std::remove_reference_t<F>, R>;
  call c{&f, {}, {}};
  int rc = pool_isolate(&call::run, &c);
  if (c.exc) std::rethrow_exception(c.exc);
  detail::check(rc, "pool_isolate");
  return c.result.take();
}

/** A blocking region (pool_blocking_begin() in the constructor,
 *  pool_blocking_end() in the destructor): while it lasts, a stand-in
 *  thread runs the pool's work in place of the worker this task holds.
 *  Keep it around the blocking call alone (no waits for tasks inside). A
 *  scope object: it begins and ends on one thread, regions nest (only the
 *  outermost counts); outside every pool it does nothing. */
class blocking_region {
 public:
  blocking_region() { detail::check(pool_blocking_begin(), "pool_blocking_begin"); }
  ~blocking_region() { (void)pool_blocking_end(); }
  blocking_region(const blocking_region &) = delete;
  blocking_region &operator=(const blocking_region &) = delete;
};

/** Call `f()` inside a blocking_region and return what it returns; the
 *  region ends however `f` leaves. */
template <class F>
decltype(auto) blocking(F &&f) {
  blocking_region region;
  return std::forward<F>(f)();
}

/** The stand-in limit of the caller's pool, else the default pool. */
inline unsigned standin_limit() noexcept { return pool_standin_limit(nullptr); }
/** Set the stand-in limit of the caller's pool, else the default pool. */
inline void set_standin_limit(unsigned limit) {
  detail::check(pool_set_standin_limit(nullptr, limit), "pool_set_standin_limit");
}

/**
 * A job (pool_job_t): a task with a handle to wait on, and a node of a
 * dependency graph. The job owns its pool_job_t and its callable (a copy,
 * kept in the job when it fits in six words, else in one allocation);
 * neither copyable nor movable (the runtime points into it). Construction
 * is pool_job_init(); after() adds predecessors; start() lets it run once
 * every predecessor has completed; wait() waits for it.
 *
 * A job is a unit of work nested in none: the callable's exception fails it
 * with pool_fail(ECANCELED), so its status is ECANCELED, every job after it
 * is skipped with that status, and wait() rethrows the exception (each
 * time it is called). is_cancelled() in the callable polls the job.
 *
 * after(pred) with `pred` not yet started is recorded and becomes
 * pool_job_after() when this job is started (with `pred` started, at
 * once): so a job never started holds no edge to another, and a graph
 * dropped before its start (an exception) is destroyed in any order.
 * Hence the one rule beyond the C API's: a predecessor must still exist
 * when its successor is started.
 *
 * The destructor: a started job is waited for (its status and exception
 * are dropped), and so for its predecessors to be started and run: start
 * a graph's jobs with nothing that can throw in between, or predecessors
 * first. A job never started is cancelled, started and waited for when
 * the runtime may refer to it (a job put after it was started, it was put
 * after a job already started, or get() gave out its C handle): the jobs
 * after it are skipped with ECANCELED, and the wait lasts until the
 * predecessors it was put after have completed. Otherwise it is dropped
 * at once: its callable never runs, the pool is not touched.
 */
class job {
 public:
  /** A job on the caller's pool, else the default pool. */
  template <class F, class = std::enable_if_t<std::is_invocable_v<std::decay_t<F> &>>>
  explicit job(F &&f) {
    init(nullptr, std::forward<F>(f));
  }
  /** A job on `p`. */
  template <class F>
  job(pool &p, F &&f) {
    init(p.get(), std::forward<F>(f));
  }
  job(const job &) = delete;
  job &operator=(const job &) = delete;
  ~job() {
    if (!started_.load(std::memory_order_relaxed) && linked_.load(std::memory_order_acquire)) {
      (void)pool_job_cancel(&j_);
      (void)pool_job_start(&j_);
      started_.store(true, std::memory_order_relaxed);
    }
    if (started_.load(std::memory_order_relaxed)) (void)pool_job_wait(&j_);
    destroy_(static_cast<void *>(fn_));
  }

  /** Run this job only after `pred` has completed (any state: if it has
   *  not succeeded, this job is skipped with its status). Before start();
   *  `pred` must exist until this job is started. */
  void after(job &pred) {
    if (&pred == this || started_.load(std::memory_order_relaxed))
      detail::fail(EINVAL, "pool_job_after");
    if (pred.started_.load(std::memory_order_acquire)) {
      link(pred);
      return;
    }
    if (npreds_ < 2)
      preds_[npreds_++] = &pred;
    else
      more_.push_back(&pred);
  }
  /** Start the job (pool_job_start(), after the pool_job_after() of the
   *  predecessors recorded): it runs once they have all completed, at once
   *  without any. Once only. If an edge cannot be made (ENOMEM), the job
   *  is started cancelled (it and the jobs after it are skipped) and
   *  start() throws. */
  void start() {
    if (started_.load(std::memory_order_relaxed)) detail::fail(EINVAL, "pool_job_start");
    int rc = 0;
    for (std::size_t i = 0; i < npreds_ && rc == 0; i++) rc = try_link(*preds_[i]);
    for (std::size_t i = 0; i < more_.size() && rc == 0; i++) rc = try_link(*more_[i]);
    npreds_ = 0;
    std::vector<job *>().swap(more_);
    if (rc != 0) (void)pool_job_cancel(&j_);
    started_.store(true, std::memory_order_release);
    int started = pool_job_start(&j_);
    detail::check(rc, "pool_job_after");
    detail::check(started, "pool_job_start");
  }
  /** Wait until the job is complete (on a worker of its pool, running
   *  other tasks meanwhile). Then: rethrow the callable's exception if it
   *  threw; else throw wspool::error for a non-zero status: ECANCELED
   *  (cancelled, or skipped after a predecessor threw or was cancelled),
   *  the code of a pool_fail() in it or in a predecessor, ESHUTDOWN (its
   *  pool was destroyed before it could run). Any number of threads may
   *  wait. The job must be started (here or elsewhere), or this never
   *  returns. */
  void wait() {
    int rc = pool_job_wait(&j_);
    if (exc_) std::rethrow_exception(exc_);
    detail::check(rc, "pool_job_wait");
  }
  /** pool_job_status(): EINPROGRESS until complete, then its status (an
   *  exception shows as ECANCELED). */
  int status() const noexcept { return pool_job_status(&j_); }
  /** pool_job_cancel(): if the callable has not started it never will; if
   *  it runs, is_cancelled() tells it. Any thread, any number of times. */
  void cancel() { detail::check(pool_job_cancel(&j_), "pool_job_cancel"); }
  /** The C handle, for the C API (pool_job_after() of a C job after this
   *  one); start it with start(). */
  pool_job_t *get() noexcept {
    linked_.store(true, std::memory_order_release);
    return &j_;
  }

 private:
  template <class F>
  void init(pool_t *p, F &&f) {
    using D = std::decay_t<F>;
    static_assert(std::is_invocable_v<D &>, "wspool::job: the callable takes no argument");
    detail::job_fn<D>::make(static_cast<void *>(fn_), std::forward<F>(f));
    call_ = &detail::job_fn<D>::call;
    destroy_ = &detail::job_fn<D>::destroy;
    int rc = pool_job_init(&j_, p, &job::run, this);
    if (rc != 0) {
      destroy_(static_cast<void *>(fn_));
      detail::fail(rc, "pool_job_init");
    }
  }
  /* The edge pred -> this, in the runtime; both jobs may now be waited on
   * by the other's destructor. */
  int try_link(job &pred) noexcept {
    pred.linked_.store(true, std::memory_order_release);
    linked_.store(true, std::memory_order_release);
    return pool_job_after(&j_, &pred.j_);
  }
  void link(job &pred) { detail::check(try_link(pred), "pool_job_after"); }
  /* The pool_fn: the callable, its exception failing the job. A job runs
   * once, so the exception is written once, before the job completes
   * (which a wait acquires). EALREADY: the job had been cancelled (or
   * failed with a C code) before; the exception is dropped. */
  static void run(void *p) noexcept {
    job *j = static_cast<job *>(p);
    try {
      j->call_(static_cast<void *>(j->fn_));
    } catch (...) {
      if (pool_fail(ECANCELED) != EALREADY) j->exc_ = std::current_exception();
    }
  }

  pool_job_t j_;
  alignas(std::max_align_t) unsigned char fn_[detail::job_inline_size];
  void (*call_)(void *) = nullptr;
  void (*destroy_)(void *) noexcept = nullptr;
  std::exception_ptr exc_;
  std::atomic<bool> started_{false};
  std::atomic<bool> linked_{false}; /* may have an edge in the runtime */
  std::size_t npreds_ = 0;          /* predecessors recorded before start() */
  job *preds_[2] = {nullptr, nullptr};
  std::vector<job *> more_;
};

}  // namespace wspool

#endif /* WSPOOL_HPP */
