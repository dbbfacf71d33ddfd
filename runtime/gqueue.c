/* SPDX-License-Identifier: MIT */
/* The global FIFO queue: a ring that doubles when full, under one mutex. */
#include "gqueue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { GQ_INITIAL = 256 };

int ws_gqueue_init(ws_gqueue *q) {
  memset(q, 0, sizeof(*q));
  q->ring = malloc(GQ_INITIAL * sizeof(ws_gitem));
  if (!q->ring) return ENOMEM;
  q->cap = GQ_INITIAL;
  int rc = pthread_mutex_init(&q->lock, NULL);
  if (rc) {
    free(q->ring);
    return rc;
  }
  ws_i64_store(&q->size_hint, 0, ws_relaxed);
  return 0;
}

void ws_gqueue_destroy(ws_gqueue *q, bool owned) {
  if (owned) pthread_mutex_destroy(&q->lock);
  free(q->ring);
  q->ring = NULL;
}

static int grow(ws_gqueue *q) {
  if (q->cap > SIZE_MAX / 2 / sizeof(ws_gitem)) return ENOMEM;
  size_t cap = q->cap * 2;
  ws_gitem *ring = malloc(cap * sizeof(ws_gitem));
  if (!ring) return ENOMEM;
  for (size_t i = 0; i < q->count; i++) ring[i] = q->ring[(q->head + i) % q->cap];
  free(q->ring);
  q->ring = ring;
  q->cap = cap;
  q->head = 0;
  return 0;
}

int ws_gqueue_push(ws_gqueue *q, const ws_gitem *item, bool refuse_closed) {
  int rc = 0;
  pthread_mutex_lock(&q->lock);
  if (refuse_closed && q->closed) {
    rc = ESHUTDOWN;
  } else if (q->count == q->cap && (rc = grow(q)) != 0) {
    /* rc is ENOMEM; nothing changed */
  } else {
    q->ring[(q->head + q->count) % q->cap] = *item;
    q->count++;
    ws_i64_store(&q->size_hint, (int64_t)q->count, ws_relaxed);
  }
  pthread_mutex_unlock(&q->lock);
  return rc;
}

bool ws_gqueue_pop(ws_gqueue *q, ws_gitem *out) {
  bool found = false;
  pthread_mutex_lock(&q->lock);
  while (q->count > 0 && !found) {
    *out = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    found = true;
  }
  ws_i64_store(&q->size_hint, (int64_t)q->count, ws_relaxed);
  pthread_mutex_unlock(&q->lock);
  return found;
}

void ws_gqueue_close(ws_gqueue *q) {
  pthread_mutex_lock(&q->lock);
  q->closed = true;
  pthread_mutex_unlock(&q->lock);
}
