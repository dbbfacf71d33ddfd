/* SPDX-License-Identifier: MIT */
/* The calling thread's frame stack (pool_frame_push, pool_frame_pop;
 * typed tasks' NAME_push and NAME_pop): storage for frames that a loop
 * spawns in numbers it learns only as it runs, in place of an array on
 * the C stack. A thread's frames are pushed and popped in LIFO order, so
 * the storage is a bump stack. Pending frames sit in deques where thieves
 * hold their addresses, so the storage never moves: it is a list of
 * chunks, a new one added when the current one is full and dropped once
 * empty again (one kept for the next push). A thread's chunks are freed
 * when it exits.
 *
 * The newest chunk's free word, end and newest frame live in the thread's
 * block the header's inline paths read (pool__tls.fs_*, wspool/inline.h),
 * which push and pop there without a call while they stay in that chunk;
 * a chunk keeps its own copies only while another is on top of it. The
 * newest chunk is never empty (a new one takes the push that needed it;
 * one that empties is dropped at once), so fs_last is NULL exactly when the
 * thread holds no frame. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <wspool.h>

#include "debug.h"

/* The alignment every frame gets: slots and frames are whole units of it
 * (POOL__FS_UNIT words, wspool/inline.h). */
#define FS_ALIGN 16u
#define FS_CHUNK ((size_t)16384)

typedef struct fs_chunk {
  struct fs_chunk *prev; /* the chunk below, or NULL */
  void **top;            /* the next free word, while a chunk is on top */
  void **end;
  void **last;           /* its newest frame, likewise */
  _Alignas(FS_ALIGN) void *data[];
} fs_chunk;
_Static_assert(FS_ALIGN == POOL__FS_UNIT * sizeof(void *), "the inline paths' unit");

static __thread fs_chunk *fs_cur;   /* the newest chunk, or NULL */
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
  pool__tls.fs_top = pool__tls.fs_end = pool__tls.fs_last = NULL;
}

static void fs_key_make(void) {
  if (pthread_key_create(&fs_key, fs_thread_exit) != 0) fs_key = (pthread_key_t)-1;
}

/* A chunk for at least `need` bytes on top of the current one. */
static fs_chunk *fs_grow(size_t need) {
  fs_chunk *c = fs_spare;
  if (c && (size_t)((char *)c->end - (char *)c->data) >= need) {
    fs_spare = NULL;
  } else {
    size_t cap = need > FS_CHUNK ? need : FS_CHUNK;
    if (cap > SIZE_MAX - sizeof(fs_chunk)) return NULL;
    c = aligned_alloc(FS_ALIGN, (sizeof(fs_chunk) + cap + FS_ALIGN - 1) & ~(size_t)(FS_ALIGN - 1));
    if (!c) return NULL;
    c->end = c->data + cap / sizeof(void *);
    /* The destructor runs only for a thread whose key value is set. */
    pthread_once(&fs_once, fs_key_make);
    if (fs_key != (pthread_key_t)-1) pthread_setspecific(fs_key, &fs_once);
  }
  if (fs_cur) {
    fs_cur->top = pool__tls.fs_top;
    fs_cur->last = pool__tls.fs_last;
  }
  c->prev = fs_cur;
  fs_cur = c;
  pool__tls.fs_top = c->data;
  pool__tls.fs_end = c->end;
  pool__tls.fs_last = NULL;
  return c;
}

int pool_frame_push(size_t size, size_t align, void **out) {
  if (!POOL__FS_ARGS_OK(size, align, out)) return EINVAL;
  size_t words = POOL__FS_WORDS(size), bytes = words * sizeof(void *);
  void **top = pool__tls.fs_top;
  if ((uintptr_t)pool__tls.fs_end - (uintptr_t)top < bytes) {
    if (!fs_grow(bytes)) return ENOMEM;
    top = pool__tls.fs_top;
  }
  *out = pool__fs_bump(top, words);
  return 0;
}

void *pool_frame_top(void) { return pool__tls.fs_last; }

int pool_frame_pop(void *frame) {
  void **last = pool__tls.fs_last;
  if (!frame || frame != (void *)last) return EINVAL;
  void **slot = pool__fs_slot(last);
  pool__tls.fs_last = (void **)slot[0];
  pool__tls.fs_top = slot;
  if (!slot[0]) {
    /* The chunk's first frame: the chunk is empty, the one below is on
     * top again. */
    fs_chunk *c = fs_cur;
    fs_cur = c->prev;
    free(fs_spare);
    fs_spare = c;
    c = fs_cur;
    pool__tls.fs_top = c ? c->top : NULL;
    pool__tls.fs_end = c ? c->end : NULL;
    pool__tls.fs_last = c ? c->last : NULL;
  }
  return 0;
}

/* The names the header's inline paths call (wspool/inline.h). */
int pool__frame_push_full(size_t size, size_t align, void **out)
    __attribute__((alias("pool_frame_push")));
int pool__frame_pop_full(void *frame) __attribute__((alias("pool_frame_pop")));
void *pool__frame_top_full(void) __attribute__((alias("pool_frame_top")));
