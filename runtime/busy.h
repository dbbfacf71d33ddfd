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

/* CPUs the process may run on: the affinity mask's count (not the online
 * count: a process under taskset has only these), as the last
 * pool_create noted it (ws_allowed_cpus), so that a worker reads it with
 * no system call and no allocation behind the pool's hooks. Relaxed: a
 * hint. 1 before any. */
void ws_usable_note(uint32_t n);
uint32_t ws_usable_cpus(void);

/* Worker threads of every pool of the process that are not in the idle
 * sleep or parked: a count kept by the workers (worker.c, +1 when they
 * start or wake, -1 before they sleep, park or end) for the default
 * poll's neighbour rule. A worker asleep in a wait for its children still
 * counts: the count errs towards "crowded", where the rule does nothing.
 * Relaxed: a hint. */
void ws_awake_add(int32_t d);
uint32_t ws_awake(void);
/* A fork()'s child has none of the parent's workers (pool.c). */
void ws_awake_forget(void);

#endif /* WS_BUSY_H */
