/* SPDX-License-Identifier: MIT */
/* The asymmetric barriers (runtime/fence.h), tested directly.
 *
 * 1. mode: after ws_fence_global_init(), the light side skips its fence
 *    exactly when membarrier(2) registered (asked of the kernel here). In
 *    the membarrier=failing build, the first heavy barrier fails: the light
 *    side fences again and the degraded path is on (sleepers bound their
 *    sleeps, ws_heavy_fence adds its grace period); elsewhere a heavy
 *    barrier leaves the mode as it was.
 * 2. wake_sleepers: work submitted from outside while every worker sleeps,
 *    and work submitted from inside to a sleeping peer, is run, each task
 *    exactly once, over many rounds; destroy (a heavy fence) completes.
 *    In the membarrier=failing build this is the degraded path the rest of
 *    the suite runs on too; the case checks that the path is really on.
 * Cases: mode, wake_sleepers. */
#include <stdatomic.h>

#include "check.h"
#include "fence.h"
#include "testutil.h"

#if defined(WS_HAVE_MEMBARRIER) && !defined(WS_MEMBARRIER_FAILING)
#include <linux/membarrier.h>
#include <sys/syscall.h>

/* What the kernel gives this process: 1 if it may use the private
 * expedited barrier (registering twice is harmless). */
static int kernel_has_membarrier(void) {
  long have = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (have < 0 || !(have & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return 0;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
#endif

#ifdef WS_MEMBARRIER_FAILING
enum { FAILING = 1 };
#else
enum { FAILING = 0 };
#endif

static void case_mode(void) {
  ws_fence_global_init();
  int asym = (int)ws_u32_load(&ws__fence_asym, ws_relaxed);
#if !defined(WS_HAVE_MEMBARRIER)
  CHECK_EQ(asym, 0);
#elif defined(WS_MEMBARRIER_FAILING)
  CHECK_EQ(asym, 1); /* registration "works" */
#else
  CHECK_EQ(asym, kernel_has_membarrier());
#endif
  CHECK(!ws_fence_degraded());
  ws_light_fence();
  ws_sleeper_fence();
  ws_heavy_fence();
  ws_light_fence();
  if (FAILING) {
    CHECK(ws_fence_degraded());
    CHECK_EQ(ws_u32_load(&ws__fence_asym, ws_relaxed), 0);
  } else {
    CHECK(!ws_fence_degraded());
    CHECK_EQ(ws_u32_load(&ws__fence_asym, ws_relaxed), (unsigned)asym);
  }
}

static atomic_uint *flags;

static void mark(void *arg) { atomic_fetch_add(&flags[(uintptr_t)arg], 1); }

/* Submits the second half of this round's tasks from inside the pool. */
typedef struct inner {
  unsigned first, count;
} inner;

static void submit_inner(void *arg) {
  inner *in = arg;
  for (unsigned i = 0; i < in->count; i++)
    CHECK_OK(pool_submit(pool_current(), mark, (void *)(uintptr_t)(in->first + i)));
}

static void case_wake_sleepers(void) {
  unsigned rounds = (unsigned)check_iters(20), per = 8;
  flags = flags_alloc((size_t)rounds * 2 * per);
  pool_t *p = make_pool(2);
  for (unsigned r = 0; r < rounds; r++) {
    if (r % 5 == 0) wait_all_asleep(p);
    unsigned base = r * 2 * per;
    for (unsigned i = 0; i < per; i++) CHECK_OK(pool_submit(p, mark, (void *)(uintptr_t)(base + i)));
    inner in = {base + per, per};
    CHECK_OK(pool_submit(p, submit_inner, &in));
    CHECK_OK(pool_wait_idle(p));
  }
  CHECK_OK(pool_destroy(p));
  flags_check_once(flags, (size_t)rounds * 2 * per, "task");
  free((void *)flags);
  CHECK_EQ(ws_fence_degraded(), FAILING);
}

TEST_MAIN(120, TEST_CASE(mode), TEST_CASE(wake_sleepers))
