/* SPDX-License-Identifier: MIT */
/* Layer 2: jobs (wspool.h \ref jobs; docs/design.md 9.2), what the group
 * continuation of forkjoin.c needs of them: a job counts the group as one
 * more predecessor, and the group releases it with its result. */
#ifndef WS_JOB_H
#define WS_JOB_H

#include "api.h"

typedef struct ws_job ws_job;

/* The job in `pj` when it is initialised and not started; else NULL. */
ws_job *ws_job_unstarted(pool_job_t *pj);
/* One more predecessor of j (initialised, not started), on the thread
 * calling on j (a plain count, design.md 9.2: one thread at a time). */
void ws_job_hold(ws_job *j);
/* A predecessor of j completed with `status` (0: it succeeded; otherwise
 * j is skipped with that status, the first one given). Any thread. */
void ws_job_release(ws_job *j, int status);

#endif /* WS_JOB_H */
