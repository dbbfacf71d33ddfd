/* SPDX-License-Identifier: MIT */
/* Small fixed-size task nodes (task group children) from per-worker free
 * lists, as mimalloc does with pages: each
 * worker has a private free list and a lock-free "remote" stack that other
 * threads push freed nodes onto. The owner takes the whole remote stack with
 * one exchange when its private list runs dry, so a node always goes home
 * and the steady state does no malloc even when thieves run the tasks. */
#ifndef WS_NODES_H
#define WS_NODES_H

#include <stddef.h>

#include "atomics.h"
#include "mem.h"

#define WS_NODE_SIZE 64

typedef struct ws_node {
  struct ws_node *next;   /* free-list link */
  struct ws_node_cache *home; /* the cache it returns to; NULL: none */
  _Alignas(16) unsigned char payload[WS_NODE_SIZE - 16];
} ws_node;

typedef struct ws_node_cache {
  ws_node *local; /* owner only */
  size_t nlocal;
  ws_mem *mem; /* where its nodes come from; set at init */
  WS_ALIGNED ws_ptr remote; /* Treiber stack: others push, owner takes all */
} ws_node_cache;

/* The node whose payload is p. */
static inline ws_node *ws_node_of(void *p) {
  return (ws_node *)((char *)p - offsetof(ws_node, payload));
}

void ws_nodes_init(ws_node_cache *c, ws_mem *mem);
void ws_nodes_destroy(ws_node_cache *c);
/* A node of the pool whose allocator is `m`: from cache `c`, the calling
 * worker's, or (c NULL: an outside thread) straight from `m`. */
ws_node *ws_node_alloc(ws_mem *m, ws_node_cache *c);
/* Return a node of that pool from any thread; `self` is the calling
 * worker's cache or NULL. */
void ws_node_free(ws_mem *m, ws_node *n, ws_node_cache *self);

#endif /* WS_NODES_H */
