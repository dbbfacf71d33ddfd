/* SPDX-License-Identifier: MIT */
/* Units of work and their cancellation (cancel.h; docs/design.md 5.8). */
#include "cancel.h"

__thread ws_scope *ws__scope __attribute__((tls_model("initial-exec")));

/* Read by every check, written by cancels only (rare): aligned to a line
 * so that it shares none with the words before it; what follows it in
 * .bss is as rarely written. */
WS_ALIGNED ws_u64 ws__cancel_epoch;

/* Walks up to the first ancestor whose note is the epoch (its word read
 * first: its own ancestors were clear at that epoch), and notes the epoch
 * in every unit walked: each has all its ancestors clear now. So a chain
 * of units pays one walk per cancel anywhere, not one per unit. */
bool ws_ctx_ancestor_cancelled(ws_ctx *c, uint64_t epoch) {
  ws_ctx *a = c->parent;
  for (; a; a = a->parent) {
    if (ws_u32_load(&a->state, ws_seq_cst)) return true;
    if (ws_u64_load(&a->clear_at, ws_relaxed) == epoch) break;
  }
  for (ws_ctx *b = c; b != a; b = b->parent) ws_u64_store(&b->clear_at, epoch, ws_relaxed);
  return false;
}

/* What a wait on c reports, its word having read s. */
static int result_of(ws_ctx *c, uint32_t s) {
  if (s & WS_CTX_ERROR) return (int)(s & WS_CTX_ERROR);
  return s || (c->parent && ws_ctx_cancelled(c->parent)) ? ECANCELED : 0;
}

int ws_ctx_take_result(ws_ctx *c) {
  uint32_t s = ws_u32_load(&c->state, ws_seq_cst);
  for (;;) {
    int rc = result_of(c, s);
    /* seq_cst, as a cancel: a failure or cancel that lands after this
     * stays for the next round; one before it was read into rc. */
    if (!s || ws_u32_cas(&c->state, &s, 0, ws_seq_cst)) return rc;
  }
}

/* seq_cst: the cancel and every later start check (ws_ctx_cancelled) are
 * in one total order, so a check ordered after the cancel sees it. */
void ws_ctx_cancel(ws_ctx *c) {
  uint32_t s = ws_u32_load(&c->state, ws_relaxed);
  while (!(s & WS_CTX_CANCELLED) && !ws_u32_cas(&c->state, &s, s | WS_CTX_CANCELLED, ws_seq_cst)) {
  }
  /* After the word: a check that reads the new epoch walks up and finds
   * it; one that reads the old one is ordered before this cancel. */
  ws_u64_fetch_add(&ws__cancel_epoch, 1, ws_seq_cst);
}

int ws_ctx_fail(ws_ctx *c, int err) {
  uint32_t s = 0;
  if (c->parent && ws_ctx_cancelled(c->parent)) {
    /* A failure inside cancelled work is a consequence, not the cause. */
    ws_ctx_cancel(c);
    return EALREADY;
  }
  /* seq_cst, as a cancel. Fails when anything (a failure, a cancel) is there. */
  bool first =
      ws_u32_cas(&c->state, &s, WS_CTX_CANCELLED | ((uint32_t)err & WS_CTX_ERROR), ws_seq_cst);
  ws_ctx_cancel(c); /* sets nothing new if first; bumps the epoch */
  return first ? 0 : EALREADY;
}

int ws_ctx_result(ws_ctx *c) { return result_of(c, ws_u32_load(&c->state, ws_seq_cst)); }
