/* SPDX-License-Identifier: MIT */
/* The task header every schedulable object starts with. A deque slot or a
 * global-queue entry holds a pointer to one; `exec` says what kind it is
 * (a submitted function, a fork/join frame, a group child, a range). */
#ifndef WS_TASK_H
#define WS_TASK_H

struct ws_worker;
typedef struct ws_task ws_task;

/* Runs the task on worker `w`, the calling thread's (only workers run
 * tasks). */
typedef void (*ws_exec_fn)(ws_task *task, struct ws_worker *w);

struct ws_task {
  ws_exec_fn exec;
};

/* A plain function task, fn(arg): the type of the header's pool_fn
 * (void (*)(void *)), named here so that layer 0 needs no public header. */
typedef void (*ws_fn)(void *arg);

#endif /* WS_TASK_H */
