/* SPDX-License-Identifier: MIT */
/* Growth and lifetime of the work-stealing deque; the hot operations are
 * inline in deque.h, where the algorithm and its memory orders are argued. */
#include "deque.h"

#include <errno.h>
#include <stdlib.h>

#include "mem.h"

static void array_clear(ws_array *a, int64_t size) {
  a->mask = size - 1;
  a->retired = NULL;
  for (int64_t i = 0; i < size; i++) ws_ptr_store(&a->slot[i], NULL, ws_relaxed);
}

static size_t array_bytes(int64_t size) { return sizeof(ws_array) + (size_t)size * sizeof(ws_ptr); }

static ws_array *array_new(ws_mem *m, int64_t size) {
  ws_array *a = ws_mem_alloc(m, array_bytes(size));
  if (a) array_clear(a, size);
  return a;
}

static void deque_start(ws_deque *d, ws_array *a, ws_array *embedded, ws_mem *m) {
  d->mem = m;
  ws_i64_store(&d->top, 0, ws_relaxed);
  ws_i64_store(&d->bottom, 0, ws_relaxed);
  ws_ptr_store(&d->array, a, ws_relaxed);
  d->retired = NULL;
  d->embedded = embedded;
}

int ws_deque_init(ws_deque *d, unsigned log_size) {
  ws_array *a = array_new(&ws_mem_libc, (int64_t)1 << log_size);
  if (!a) return ENOMEM;
  deque_start(d, a, NULL, &ws_mem_libc);
  return 0;
}

size_t ws_deque_array_bytes(unsigned log_size) {
  return sizeof(ws_array) + ((size_t)1 << log_size) * sizeof(ws_ptr);
}

void ws_deque_init_in(ws_deque *d, unsigned log_size, void *storage, ws_mem *m) {
  ws_array *a = storage;
  array_clear(a, (int64_t)1 << log_size);
  deque_start(d, a, a, m);
}

int ws_deque_grow(ws_deque *d, int64_t top, int64_t bottom) {
  ws_array *old = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  int64_t size = (old->mask + 1) * 2;
  if (size > ((int64_t)1 << 40)) return ENOMEM;
  ws_array *a = array_new(d->mem, size);
  if (!a) return ENOMEM;
  /* Items between top and bottom keep their indices; a thief that still
   * reads the old array finds the same task at the same index. Relaxed
   * copies: the release store of the new array publishes them. */
  for (int64_t i = top; i < bottom; i++)
    ws_ptr_store(&a->slot[i & a->mask], ws_ptr_load(&old->slot[i & old->mask], ws_relaxed),
                 ws_relaxed);
  ws_ptr_store(&d->array, a, ws_release);
  old->retired = d->retired;
  d->retired = old;
  return 0;
}

void ws_deque_destroy(ws_deque *d) {
  ws_array *a = (ws_array *)ws_ptr_load(&d->array, ws_relaxed);
  if (a && a != d->embedded) ws_mem_free(d->mem, a, array_bytes(a->mask + 1));
  for (ws_array *r = d->retired; r;) {
    ws_array *next = r->retired;
    if (r != d->embedded) ws_mem_free(d->mem, r, array_bytes(r->mask + 1));
    r = next;
  }
  d->retired = NULL;
  ws_ptr_store(&d->array, NULL, ws_relaxed);
}
