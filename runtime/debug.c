/* SPDX-License-Identifier: MIT */
/* Debug checks (-Ddebug_checks=true): a detected misuse or broken invariant
 * is reported on stderr with where it was detected and the call stack
 * (which names the caller's call site), then the process aborts. Only a
 * debug_checks build calls this; it is the one place the library aborts
 * (wspool.h, "Faults and fork()"). */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "debug.h"

#ifdef WS_DEBUG_CHECKS
void ws_debug_fail(const char *what, const char *file, int line) {
  fprintf(stderr, "wspool: %s (detected at %s:%d); call stack:\n", what, file, line);
  fflush(stderr);
  void *frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  abort();
}

/* Objects in use (debug builds): a set of addresses under one lock. A
 * group's own memory cannot say whether it is in use: a stack slot where a
 * finished group lived may keep its magic while other data overwrites the
 * rest, so pool_group_init would read a busy-looking group out of garbage.
 * The set is keyed by address and never reads the object. */
#include <pthread.h>

static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static const void **busy;
static size_t nbusy, capbusy;

void ws_debug_busy_set(const void *obj, bool in_use) {
  pthread_mutex_lock(&busy_lock);
  size_t i = 0;
  while (i < nbusy && busy[i] != obj) i++;
  if (in_use && i == nbusy) {
    if (nbusy == capbusy) {
      size_t cap = capbusy ? 2 * capbusy : 64;
      const void **b = realloc(busy, cap * sizeof *b);
      if (!b) ws_debug_fail("out of memory for the debug checks' table", __FILE__, __LINE__);
      busy = b;
      capbusy = cap;
    }
    busy[nbusy++] = obj;
  } else if (!in_use && i < nbusy) {
    busy[i] = busy[--nbusy];
  }
  pthread_mutex_unlock(&busy_lock);
}

bool ws_debug_busy(const void *obj) {
  pthread_mutex_lock(&busy_lock);
  size_t i = 0;
  while (i < nbusy && busy[i] != obj) i++;
  bool in_use = i < nbusy;
  pthread_mutex_unlock(&busy_lock);
  return in_use;
}
#endif
