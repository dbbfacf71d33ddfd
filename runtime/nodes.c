/* SPDX-License-Identifier: MIT */
/* Per-worker node free lists; see nodes.h. */
#include <stdlib.h>

#include "nodes.h"

/* Beyond this many private nodes a worker frees instead of caching. */
enum { CACHE_MAX = 1 << 16 };

void ws_nodes_init(ws_node_cache *c, ws_mem *mem) {
  c->mem = mem;
  c->local = NULL;
  c->nlocal = 0;
  ws_ptr_store(&c->remote, NULL, ws_relaxed);
}

static void free_list(ws_mem *m, ws_node *n) {
  while (n) {
    ws_node *next = n->next;
    ws_mem_free(m, n, sizeof(ws_node));
    n = next;
  }
}

void ws_nodes_destroy(ws_node_cache *c) {
  free_list(c->mem, c->local);
  free_list(c->mem, (ws_node *)ws_ptr_xchg(&c->remote, NULL, ws_acquire));
  c->local = NULL;
  c->nlocal = 0;
}

ws_node *ws_node_alloc(ws_mem *m, ws_node_cache *c) {
  if (c) {
    if (!c->local && ws_ptr_load(&c->remote, ws_relaxed)) {
      /* Acquire: pairs with the pushers' release CAS, so their writes of
       * `next` (and of the node's last use) are visible. */
      c->local = (ws_node *)ws_ptr_xchg(&c->remote, NULL, ws_acquire);
      c->nlocal = 0; /* unknown length; only a bound on caching */
    }
    ws_node *n = c->local;
    if (n) {
      c->local = n->next;
      if (c->nlocal) c->nlocal--;
      return n;
    }
  }
  ws_node *n = ws_mem_alloc(m, sizeof(ws_node));
  if (n) n->home = c;
  return n;
}

void ws_node_free(ws_mem *m, ws_node *n, ws_node_cache *self) {
  ws_node_cache *home = n->home;
  if (!home) {
    ws_mem_free(m, n, sizeof(ws_node));
  } else if (home == self) {
    if (self->nlocal >= CACHE_MAX) {
      ws_mem_free(m, n, sizeof(ws_node));
      return;
    }
    n->next = self->local;
    self->local = n;
    self->nlocal++;
  } else {
    /* Release: the node's contents and `next` are published to the owner's
     * acquiring exchange. No ABA: the owner never pops a single node, it
     * takes the whole stack. */
    ws_node *head = (ws_node *)ws_ptr_load(&home->remote, ws_relaxed);
    do {
      n->next = head;
    } while (!ws_ptr_cas(&home->remote, (void **)&head, n, ws_release));
  }
}
