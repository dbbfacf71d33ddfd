/* SPDX-License-Identifier: MIT */
// oneTBB peer for bench_submit: fire-and-forget tbb::task_arena::enqueue.
// The arena has `workers` worker threads and no slot reserved for a master,
// like a wspool pool that outside threads submit to; a global_control lets
// TBB start that many workers (by default it starts one fewer than the CPU
// count, which would leave a 2-worker arena with one).
#include <pthread.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "benchutil.h"
#include "peers.h"

namespace {

// The tasks' counter on a cache line of its own, as on the wspool side.
struct alignas(64) done_line {
  std::atomic<long> v{0};
};
done_line done_padded;
std::atomic<long> &done = done_padded.v;
long target = 0;
std::mutex m;
std::condition_variable cv;
bool finished = false;

// The task body: the same relaxed increment as the wspool side, plus the
// check that lets the last task wake the waiting thread.
inline void tiny() {
  if (done.fetch_add(1, std::memory_order_relaxed) + 1 == target) {
    std::lock_guard<std::mutex> g(m);
    finished = true;
    cv.notify_one();
  }
}

void reset(long n) {
  done.store(0);
  target = n;
  std::lock_guard<std::mutex> g(m);
  finished = false;
}

void wait_finished() {
  std::unique_lock<std::mutex> g(m);
  cv.wait(g, [] { return finished; });
}

tbb::task_arena &arena_for(unsigned workers) {
  static std::unique_ptr<tbb::global_control> gc;
  static std::unique_ptr<tbb::task_arena> arena;
  static unsigned have = 0;
  if (!arena || have != workers) {
    arena.reset();
    gc.reset(new tbb::global_control(tbb::global_control::max_allowed_parallelism, workers + 1));
    arena.reset(new tbb::task_arena((int)workers, 0));
    arena->initialize();
    have = workers;
  }
  return *arena;
}

struct producer {
  pthread_t th;
  tbb::task_arena *arena;
  pthread_barrier_t *bar;
  long n;
  double end;
};

void *producer_main(void *arg) {
  producer *pr = static_cast<producer *>(arg);
  pthread_barrier_wait(pr->bar);
  for (long i = 0; i < pr->n; i++) pr->arena->enqueue(tiny);
  pr->end = bench_now();
  return nullptr;
}

}  // namespace

extern "C" double bench_tbb_submit(unsigned workers, int mode, unsigned producers, long n,
                                   double *submit_s, long *ran) {
  tbb::task_arena &a = arena_for(workers);
  reset(n);
  double t0, ts;
  if (mode == 1) {
    // One task enqueues n more from inside the arena; it counts itself as
    // one more task when it is done, so the wait covers it too.
    std::atomic<double> in_t0{0}, in_ts{0};
    reset(n + 1);
    a.enqueue([&a, n, &in_t0, &in_ts] {
      in_t0.store(bench_now());
      for (long i = 0; i < n; i++) a.enqueue(tiny);
      in_ts.store(bench_now());
      tiny();
    });
    wait_finished();
    double t1 = bench_now();
    *submit_s = in_ts.load() - in_t0.load();
    *ran = done.load() - 1;
    return t1 - in_t0.load();
  }
  if (producers <= 1) {
    t0 = bench_now();
    for (long i = 0; i < n; i++) a.enqueue(tiny);
    ts = bench_now();
  } else {
    std::vector<producer> pr(producers);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, nullptr, producers + 1);
    for (unsigned i = 0; i < producers; i++) {
      pr[i].arena = &a;
      pr[i].bar = &bar;
      pr[i].n = n / producers + ((long)i < n % (long)producers);
      pthread_create(&pr[i].th, nullptr, producer_main, &pr[i]);
    }
    pthread_barrier_wait(&bar);
    t0 = bench_now();
    ts = t0;
    for (unsigned i = 0; i < producers; i++) {
      pthread_join(pr[i].th, nullptr);
      if (pr[i].end > ts) ts = pr[i].end;
    }
    pthread_barrier_destroy(&bar);
  }
  wait_finished();
  double t1 = bench_now();
  *submit_s = ts - t0;
  *ran = done.load();
  return t1 - t0;
}

extern "C" int bench_tbb_wake_latency(unsigned workers, int reps, double sleep_ms,
                                      double *lat_ns) {
  tbb::task_arena &a = arena_for(workers);
  int lost = 0;
  for (int i = 0; i < reps; i++) {
    std::atomic<uint64_t> start{0};
    reset(1);
    bench_sleep_ms(sleep_ms);
    uint64_t t0 = bench_now_ns();
    a.enqueue([&start] {
      start.store(bench_now_ns());
      tiny();
    });
    wait_finished();
    uint64_t s = start.load();
    if (s == 0) lost = 1;
    lat_ns[i] = (double)(s - t0);
  }
  return lost ? -1 : 0;
}

extern "C" double bench_tbb_idle_cpu(unsigned workers, double idle_s, double *wall_s) {
  tbb::task_arena &a = arena_for(workers);
  reset(1000);
  for (int i = 0; i < 1000; i++) a.enqueue(tiny);
  wait_finished();
  return bench_idle_window(idle_s, wall_s);
}
