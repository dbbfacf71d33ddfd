/* SPDX-License-Identifier: MIT */
/* Asymmetric barriers (fence.h; docs/design.md 5.3). */
#include "fence.h"

#include "count.h"

#include <pthread.h>
#include <unistd.h>

ws_u32 ws__fence_asym;
/* Set when a heavy barrier failed after the light side had stopped
 * fencing (nothing we know of does that; a seccomp filter installed later
 * could, and the build option membarrier=failing does, to test this path):
 * from then on the light side fences again (ws__fence_asym is cleared),
 * sleepers bound their sleeps and ws_heavy_fence adds a grace period, so a
 * store->load pair a light side fenced only for the compiler costs latency,
 * never progress. */
ws_u32 ws__fence_degraded;

#if defined(__linux__) && defined(WS_HAVE_MEMBARRIER)
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#ifdef WS_MEMBARRIER_FAILING
/* The test build's kernel: registration works, every barrier fails. */
static int membarrier(int cmd) {
  if (cmd == MEMBARRIER_CMD_QUERY) return MEMBARRIER_CMD_PRIVATE_EXPEDITED;
  if (cmd == MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) return 0;
  errno = EPERM;
  return -1;
}
#else
static int membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }
#endif

static void asym_init(void) {
  int have = membarrier(MEMBARRIER_CMD_QUERY);
  if (have < 0 || !(have & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return;
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return;
  /* Relaxed: no pool exists yet; the pool pointer every light side gets
   * was published after this store (by pool_create's return). */
  ws_u32_store(&ws__fence_asym, 1, ws_relaxed);
}

/* Every running thread of the process executes a full barrier before this
 * returns (a thread not running passes one when it is scheduled). */
static void heavy_barrier(void) {
  if (!ws_u32_load(&ws__fence_asym, ws_relaxed)) return;
  ws_count_event(WS_CNT_HEAVY);
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  /* A child of fork() keeps the registration; try once more anyway. */
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
    return;
  ws_u32_store(&ws__fence_degraded, 1, ws_relaxed);
  /* The light side fences from now on. One that still read 1 is covered by
   * the sleepers' bounded sleeps and ws_heavy_fence's grace period. */
  ws_u32_store(&ws__fence_asym, 0, ws_seq_cst);
}
#else
static void asym_init(void) {}
static void heavy_barrier(void) {}
#endif

void ws_sleeper_fence(void) {
  ws_fence(ws_seq_cst);
  heavy_barrier();
}

void ws_heavy_fence(void) {
  ws_sleeper_fence();
  /* Once a heavy barrier has failed, a light side that read ws__fence_asym
   * before it was cleared fenced only the compiler: its stores reach memory
   * within microseconds, so a grace period a thousand times longer stands
   * in for the barrier (docs/design.md 10.1). */
  if (ws_fence_degraded()) usleep(10000);
}

static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

void ws_fence_global_init(void) { pthread_once(&asym_once, asym_init); }
