/* SPDX-License-Identifier: MIT */
/* Worker start/stop hooks and thread names (pool_config_t's on_worker_start,
 * on_worker_stop and name).
 *
 * A worker names itself ("<name>-w<index>") as its thread starts. With a
 * hook configured it then waits at the pool's gate until pool_create() has
 * bound every worker (binding is done by the creating thread, after
 * pthread_create), so the start hook sees the worker where
 * pool_worker_cpu() says, before the worker takes any work. pool_create()
 * then waits until every start hook has returned, so what they wrote is
 * visible to its caller and no work exists before they are done. When
 * create fails after threads started, the gate opens with "failed" and
 * neither hook runs. */
#ifndef WS_HOOKS_H
#define WS_HOOKS_H

#include <stdbool.h>

#include "atomics.h"

/* Linux's thread-name limit, including the NUL. */
#define WS_NAME_MAX 16

typedef struct ws_hooks {
  char name[WS_NAME_MAX]; /* the pool's name, at most 15 bytes */
  ws_u32 gate;            /* WS_HOOKS_*: set once by pool_create() */
  ws_u32 ready;           /* workers whose start hook has returned */
} ws_hooks;

enum { WS_HOOKS_CLOSED = 0, WS_HOOKS_OPEN = 1, WS_HOOKS_FAILED = 2 };

struct pool;
struct ws_worker;

/* pool_create(), before any worker starts: copies the configured name (or
 * makes "wspool-p<N>", N counting the pools of the process) and points
 * p->cfg.name at the copy. */
void ws_hooks_init(struct pool *p);
/* pool_create(), after the binding loop: lets the workers go on and, when
 * `ok`, waits for their start hooks; `ok` false when create is about to
 * fail (no hook will run). */
void ws_hooks_open(struct pool *p, bool ok);
/* On the worker thread, before its loop: names the thread, waits for the
 * gate when a hook is set, runs the start hook. True when the stop hook
 * must run at the end. */
bool ws_worker_begin(struct ws_worker *w);
/* On the worker thread, after its last task: the stop hook, if `begun`. */
void ws_worker_end(struct ws_worker *w, bool begun);

#endif /* WS_HOOKS_H */
