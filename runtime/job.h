/* SPDX-License-Identifier: MIT */
/* Layer 2: jobs (wspool.h \ref jobs; docs/design.md 9.2), what the groups
 * of forkjoin.c need of them: a job counts a group it continues as one
 * more predecessor, and the group releases it with its result; a group
 * begun in a job's function holds the job's completion while it runs. */
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
/* A group whose unit is nested directly in job unit `u` (ws_ctx `job`)
 * begins a round (its count leaves 0: called by a holder, such as the
 * job's function) or ends one (its count is back at 0; after the round's
 * last touch of the group's unit). A job completes once its function
 * returned and every such round ended: a group's children may outlive
 * the function, and their units are nested in the job's storage. */
void ws_job_round_begin(ws_ctx *u);
void ws_job_round_end(ws_ctx *u);

#endif /* WS_JOB_H */
