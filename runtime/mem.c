/* SPDX-License-Identifier: MIT */
/* A pool's allocator; see mem.h. */
#include "mem.h"

#include <string.h>

__thread ws_mem_self ws__mem_self __attribute__((tls_model("initial-exec")));

ws_mem ws_mem_libc;

void *ws_mem_calloc(ws_mem *m, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = ws_mem_alloc(m, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void *ws_mem_alloc_aligned(ws_mem *m, size_t size) {
  if (!m->alloc_fn) {
    void *p;
    if (posix_memalign(&p, WS_CACHELINE, size) != 0) return NULL;
    ws_mem_count(m, size);
    return p;
  }
  if (size > SIZE_MAX - WS_CACHELINE) return NULL;
  /* The hook's block is aligned for any object (as malloc's), so at least
   * for a pointer: the first line boundary past room for one pointer is
   * within WS_CACHELINE bytes of its start. */
  char *raw = ws_mem_alloc(m, size + WS_CACHELINE);
  if (!raw) return NULL;
  uintptr_t a = ((uintptr_t)raw + sizeof(void *) + WS_CACHELINE - 1) & ~(uintptr_t)(WS_CACHELINE - 1);
  void **p = (void **)a;
  p[-1] = raw;
  return p;
}

void ws_mem_free_aligned(ws_mem *m, void *p, size_t size) {
  if (!p) return;
  if (m->alloc_fn) {
    ws_mem_free(m, ((void **)p)[-1], size + WS_CACHELINE);
    return;
  }
  ws_mem_count(m, (uint64_t)0 - size);
  free(p);
}
