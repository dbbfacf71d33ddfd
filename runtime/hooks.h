/* SPDX-License-Identifier: MIT */
/* The state of the worker start/stop hooks and thread names that struct
 * pool holds (pool_config_t's on_worker_start, on_worker_stop and name);
 * the calls that use it are layer 2 (hooks.c, declared in api.h).
 *
 * A worker names itself ("<name>-w<index>") as its thread starts. With a
 * hook configured it then waits for the start signal until pool_create() has
 * bound every worker (binding is done by the creating thread, after
 * pthread_create), so the start hook sees the worker where
 * pool_worker_cpu() says, before the worker takes any work. pool_create()
 * then waits until every start hook has returned, so what they wrote is
 * visible to its caller and no work exists before they are done. When
 * create fails after threads started, the signal says "failed" and
 * neither hook runs. */
#ifndef WS_HOOKS_H
#define WS_HOOKS_H

#include <stdbool.h>

#include "atomics.h"

/* Linux's thread-name limit, including the NUL. */
#define WS_NAME_MAX 16

typedef struct ws_hooks {
  char name[WS_NAME_MAX]; /* the pool's name, at most 15 bytes */
  ws_u32 start;           /* WS_HOOKS_*: set once by pool_create() */
  ws_u32 ready;           /* workers whose start hook has returned */
} ws_hooks;

enum { WS_HOOKS_WAIT = 0, WS_HOOKS_GO = 1, WS_HOOKS_FAILED = 2 };

#endif /* WS_HOOKS_H */
