/* SPDX-License-Identifier: MIT */
/* Layer 0: whether other threads want the CPUs, the evidence an idle
 * worker's automatic poll backs off on (worker.c; docs/design.md 4).
 *
 * The kernel's count of runnable threads on the whole machine, the fourth
 * field of /proc/loadavg ("R/T"), is read by one thread of the process at
 * most every WS_BUSY_PERIOD_NS and kept for the others. Cheap: three
 * system calls every 10 ms at the most, none on any path that runs work.
 * Direct: a thread that a polling worker's sched_yield() would run counts
 * there, whatever process it belongs to. */
#ifndef WS_BUSY_H
#define WS_BUSY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (a vDSO call, no system call). */
static inline uint64_t ws_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* True when the machine's runnable threads, less `own` of the caller's
 * that it knows are awake (itself among them), fill every online CPU: a
 * poll would take a CPU from one of them. False when the count cannot be
 * read (no /proc). */
bool ws_cpus_busy(unsigned own);

#endif /* WS_BUSY_H */
