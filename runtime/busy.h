/* SPDX-License-Identifier: MIT */
/* Layer 0: whether other threads want the CPUs, the evidence an idle
 * worker's automatic poll backs off on (worker.c; docs/design.md 4).
 *
 * The kernel's count of runnable threads on the whole machine, the fourth
 * field of /proc/loadavg ("R/T"), is read by one worker of a pool at
 * most every WS_BUSY_PERIOD_NS and kept for the others. Cheap: three
 * system calls every 10 ms at the most, none on any path that runs work.
 * Direct: a thread that a polling worker's sched_yield() would run counts
 * there, whatever process it belongs to. */
#ifndef WS_BUSY_H
#define WS_BUSY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "atomics.h"

/* CLOCK_MONOTONIC in nanoseconds (a vDSO call, no system call). */
static inline uint64_t ws_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One pool's view (workers read it relaxed, one refreshes it at a time):
 * when the sample was taken (0: never) and how many of the machine's
 * runnable threads were not that pool's awake workers then. */
typedef struct ws_busy {
  ws_u64 sampled_at;
  ws_u32 others;
} ws_busy;

/* True when the machine's runnable threads other than the pool's awake
 * workers fill every online CPU: a poll would take a CPU from one of them.
 * `own`: the pool's workers awake now (the caller among them), subtracted
 * when a new sample is taken, so a sample and the count it is corrected by
 * are of one moment. False when the count cannot be read (no /proc). */
bool ws_cpus_busy(ws_busy *b, unsigned own);

#endif /* WS_BUSY_H */
