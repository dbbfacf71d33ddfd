/* SPDX-License-Identifier: MIT */
/* Worker start/stop hooks and thread names (hooks.h). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

static ws_u32 pool_count; /* pools created by this process, for default names */

static bool has_hooks(const struct pool *p) {
  return p->cfg.on_worker_start || p->cfg.on_worker_stop;
}

void ws_hooks_init(struct pool *p) {
  ws_hooks *h = &p->hooks;
  uint32_t n = ws_u32_fetch_add(&pool_count, 1, ws_relaxed);
  if (p->cfg.name && p->cfg.name[0])
    snprintf(h->name, sizeof h->name, "%s", p->cfg.name);
  else
    snprintf(h->name, sizeof h->name, "wspool-p%u", (unsigned)n);
  p->cfg.name = h->name; /* the caller's string need not outlive create */
  ws_u32_store(&h->start, WS_HOOKS_WAIT, ws_relaxed);
  ws_u32_store(&h->ready, 0, ws_relaxed);
}

void ws_hooks_open(struct pool *p, bool ok) {
  if (!has_hooks(p)) return;
  /* Release: the binding and the creator's writes of w->cpu happen before
   * the hooks that read them. */
  ws_u32_store(&p->hooks.start, ok ? WS_HOOKS_GO : WS_HOOKS_FAILED, ws_release);
  ws_futex_wake(&p->hooks.start, INT_MAX);
  if (!ok) return;
  /* Acquire: the hooks' writes happen before create returns. */
  uint32_t r;
  while ((r = ws_u32_load(&p->hooks.ready, ws_acquire)) != p->nthreads)
    ws_futex_wait(&p->hooks.ready, r);
}

/* "<name>-w<index>" within the 15 visible bytes: the name is cut so that
 * the worker index always fits. */
static void name_thread(const ws_worker *w) {
  char suffix[16], full[WS_NAME_MAX];
  int sl = snprintf(suffix, sizeof suffix, "-w%u", w->id);
  if (sl < 0) return;
  size_t keep = strlen(w->pool->hooks.name);
  if (keep > WS_NAME_MAX - 1 - (size_t)sl) keep = WS_NAME_MAX - 1 - (size_t)sl;
  memcpy(full, w->pool->hooks.name, keep);
  memcpy(full + keep, suffix, (size_t)sl + 1);
  (void)pthread_setname_np(pthread_self(), full); /* cosmetic: failure is harmless */
}

bool ws_worker_begin(ws_worker *w) {
  struct pool *p = w->pool;
  name_thread(w);
  if (!has_hooks(p)) return false;
  uint32_t g;
  while ((g = ws_u32_load(&p->hooks.start, ws_acquire)) == WS_HOOKS_WAIT)
    ws_futex_wait(&p->hooks.start, WS_HOOKS_WAIT);
  if (g != WS_HOOKS_GO) return false;
  if (p->cfg.on_worker_start) p->cfg.on_worker_start(p, w->id, p->cfg.hook_ctx);
  if (ws_u32_fetch_add(&p->hooks.ready, 1, ws_acq_rel) + 1 == p->nthreads)
    ws_futex_wake(&p->hooks.ready, INT_MAX);
  return true;
}

void ws_worker_end(ws_worker *w, bool begun) {
  struct pool *p = w->pool;
  if (begun && p->cfg.on_worker_stop) p->cfg.on_worker_stop(p, w->id, p->cfg.hook_ctx);
}
