/* SPDX-License-Identifier: MIT */
/* Layer 0: a worker's trace buffer and its recording, here; trace.c
 * (layer 2, api.h) gives pools their buffers and writes the file.
 * WSPOOL_TRACE=file.json: a Chrome trace-event file (Perfetto,
 * chrome://tracing). A process track per pool, a thread track per worker, a
 * slice per task run (named after its function where dladdr can), steal
 * instants and sleep slices. Each worker records into its own fixed buffer;
 * a full buffer stops that worker's recording and says so in the file. The
 * file is written when a pool is destroyed and, for pools still alive, at
 * process exit. When tracing is off the only cost is a test of w->trace. */
#ifndef WS_TRACE_H
#define WS_TRACE_H

#include <stdint.h>
#include <time.h>

#include "atomics.h"

enum ws_trace_kind { WS_EV_TASK, WS_EV_STEAL, WS_EV_SLEEP };

/* Any function, as recorded (ISO C converts function pointers only to other
 * function pointer types). */
typedef void (*ws_fnptr)(void);

typedef struct ws_trace_event {
  uint64_t t0, t1;  /* CLOCK_MONOTONIC ns (the file shows them from its start) */
  ws_fnptr what;    /* the task's function, or NULL */
  uint32_t kind;
  uint32_t arg;     /* the victim of a steal */
} ws_trace_event;

typedef struct ws_trace_buf {
  ws_u64 count;     /* events recorded; release-published for the writer */
  uint64_t cap;
  ws_trace_event ev[];
} ws_trace_buf;

static inline uint64_t ws_trace_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Record into b; stops silently (the file says so) when b is full. */
static inline void ws_trace_record(ws_trace_buf *b, uint32_t kind, ws_fnptr what, uint64_t t0,
                                   uint32_t arg) {
  /* Single writer (the worker); the relaxed load of its own count is exact. */
  uint64_t n = ws_u64_load(&b->count, ws_relaxed);
  if (n >= b->cap) return;
  ws_trace_event *e = &b->ev[n];
  e->t0 = t0;
  e->t1 = kind == WS_EV_STEAL ? t0 : ws_trace_now();
  e->what = what;
  e->kind = kind;
  e->arg = arg;
  /* Release: the exit-time writer, reading a live pool, sees whole events. */
  ws_u64_store(&b->count, n + 1, ws_release);
}


#endif /* WS_TRACE_H */
