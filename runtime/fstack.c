/* SPDX-License-Identifier: MIT */
/* The calling thread's frame stack (pool_frame_push, pool_frame_pop;
 * typed tasks' NAME_push and NAME_pop): storage for frames that a loop
 * spawns in numbers it learns only as it runs, in place of an array on
 * the C stack. A thread's frames are pushed and popped in LIFO order, so
 * the storage is a bump stack. Pending frames sit in deques where thieves
 * hold their addresses, so the storage never moves: it is a list of
 * chunks, a new one added when the current one is full and dropped once
 * empty again (one kept for the next push). A thread's chunks are freed
 * when it exits. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <wspool.h>

#include "debug.h"

/* Chunk payloads are multiples of this, and frames start on it: enough for
 * any frame whose alignment a push does not ask more than. */
#define FS_ALIGN 16u
#define FS_CHUNK ((size_t)16384)

typedef struct fs_chunk {
  struct fs_chunk *prev; /* the chunk below, or NULL */
  char *top;             /* the next free byte */
  char *end;
  void *last;            /* the newest frame in it, or NULL */
  _Alignas(FS_ALIGN) char data[];
} fs_chunk;

/* Each frame follows a slot of its own that holds the frame below it in
 * the chunk (NULL for the first), which is `last` again once it is
 * popped. */
typedef union fs_slot {
  void *below;
  _Alignas(FS_ALIGN) char pad[FS_ALIGN];
} fs_slot;

static __thread fs_chunk *fs_cur;   /* the top chunk, or NULL */
static __thread fs_chunk *fs_spare; /* an empty chunk kept for reuse */

static pthread_key_t fs_key;
static pthread_once_t fs_once = PTHREAD_ONCE_INIT;

/* At a thread's exit: whatever its chunks hold is no frame anyone waits
 * for any more (each push's pop comes before its task returns). */
static void fs_thread_exit(void *unused) {
  (void)unused;
  for (fs_chunk *c = fs_cur, *prev; c; c = prev) {
    prev = c->prev;
    free(c);
  }
  free(fs_spare);
  fs_cur = fs_spare = NULL;
}

static void fs_key_make(void) {
  if (pthread_key_create(&fs_key, fs_thread_exit) != 0) fs_key = (pthread_key_t)-1;
}

/* A chunk for at least `need` bytes on top of the current one. */
static fs_chunk *fs_grow(size_t need) {
  fs_chunk *c = fs_spare;
  if (c && (size_t)(c->end - c->data) >= need) {
    fs_spare = NULL;
  } else {
    size_t cap = need > FS_CHUNK ? need : FS_CHUNK;
    if (cap > SIZE_MAX - sizeof(fs_chunk)) return NULL;
    c = aligned_alloc(FS_ALIGN, (sizeof(fs_chunk) + cap + FS_ALIGN - 1) & ~(size_t)(FS_ALIGN - 1));
    if (!c) return NULL;
    c->end = c->data + cap;
    /* The destructor runs only for a thread whose key value is set. */
    pthread_once(&fs_once, fs_key_make);
    if (fs_key != (pthread_key_t)-1) pthread_setspecific(fs_key, &fs_once);
  }
  c->top = c->data;
  c->last = NULL;
  c->prev = fs_cur;
  fs_cur = c;
  return c;
}

int pool_frame_push(size_t size, size_t align, void **out) {
  if (!out || size == 0 || size > SIZE_MAX / 2 || align == 0 || align > FS_ALIGN ||
      (align & (align - 1)))
    return EINVAL;
  size = sizeof(fs_slot) + ((size + FS_ALIGN - 1) & ~(size_t)(FS_ALIGN - 1));
  fs_chunk *c = fs_cur;
  if (!c || (size_t)(c->end - c->top) < size) {
    c = fs_grow(size);
    if (!c) return ENOMEM;
  }
  fs_slot *s = (fs_slot *)(void *)c->top;
  s->below = c->last;
  c->last = s + 1;
  c->top += size;
  *out = c->last;
  return 0;
}

void *pool_frame_top(void) { return fs_cur ? fs_cur->last : NULL; }

int pool_frame_pop(void *frame) {
  fs_chunk *c = fs_cur;
  if (!c || !frame || frame != c->last) return EINVAL;
  fs_slot *s = (fs_slot *)frame - 1;
  c->last = s->below;
  c->top = (char *)s;
  if (c->top == c->data) {
    fs_cur = c->prev;
    free(fs_spare);
    fs_spare = c;
  }
  return 0;
}
