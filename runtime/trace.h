/* SPDX-License-Identifier: MIT */
/* Layer 0: a worker's trace buffer and its recording (trace.c, which also
 * writes the file: api.h).
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

#include "atomics.h"

enum ws_trace_kind { WS_EV_TASK, WS_EV_STEAL, WS_EV_SLEEP };

/* Any function, as recorded (ISO C converts function pointers only to other
 * function pointer types). */
typedef void (*ws_fnptr)(void);

typedef struct ws_trace_event {
  uint64_t t0, t1;  /* ns since the trace started */
  ws_fnptr what;    /* the task's function, or NULL */
  uint32_t kind;
  uint32_t arg;     /* the victim of a steal */
} ws_trace_event;

typedef struct ws_trace_buf {
  ws_u64 count;     /* events recorded; release-published for the writer */
  uint64_t cap;
  ws_trace_event ev[];
} ws_trace_buf;

uint64_t ws_trace_now(void);
/* Record into b; stops silently (the file says so) when b is full. */
void ws_trace_record(ws_trace_buf *b, uint32_t kind, ws_fnptr what, uint64_t t0, uint32_t arg);


#endif /* WS_TRACE_H */
