/* SPDX-License-Identifier: MIT */
/* Debug checks (-Ddebug_checks=true): a detected misuse or broken invariant
 * is reported on stderr with where it was detected and the call stack
 * (which names the caller's call site), then the process aborts. Only a
 * debug_checks build calls this; it is the one place the library aborts
 * (wspool.h, "Faults and fork()"). */
#include <execinfo.h>
#include <stdint.h>
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

/* Notes by call site: the sites reported so far, under one lock. A site is
 * a return address into the caller's code; the unwinder (backtrace) finds
 * it past a trampoline, whose unwind information leads out of it. Once the
 * table is full and its overflow was said, a note costs one lock; before,
 * each costs a backtrace of a few frames. */
static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
static const void *note_sites[WS_DEBUG_NOTE_SITES];
static unsigned nnote;
static bool note_overflow_said;

enum { NOTE_DEPTH = 24, NOTE_SHOWN = 3 };

void ws_debug_note_site(const char *what, const void *ra, bool (*through)(const void *next)) {
  pthread_mutex_lock(&note_lock);
  bool done = note_overflow_said;
  pthread_mutex_unlock(&note_lock);
  if (done) return;
  void *frames[NOTE_DEPTH];
  int n = backtrace(frames, NOTE_DEPTH), at = -1;
  for (int i = 0; i < n; i++)
    if (frames[i] == ra) {
      at = i;
      break;
    }
  if (at >= 0 && at + 1 < n && through && through(frames[at + 1])) at++;
  const void *site = at >= 0 ? frames[at] : ra;
  pthread_mutex_lock(&note_lock);
  unsigned i = 0;
  while (i < nnote && note_sites[i] != site) i++;
  if (i < nnote || note_overflow_said) {
    pthread_mutex_unlock(&note_lock);
    return;
  }
  if (nnote == WS_DEBUG_NOTE_SITES) {
    fprintf(stderr, "wspool: debug note: further sites are not reported (the first %d were)\n",
            WS_DEBUG_NOTE_SITES);
    note_overflow_said = true;
    pthread_mutex_unlock(&note_lock);
    return;
  }
  note_sites[nnote++] = site;
  /* The site, and the frames that called it (without the inline paths,
   * the site is in a typed task's generated sync, and its caller next). */
  void *shown[NOTE_SHOWN];
  int m = 0;
  if (at < 0) {
    shown[m++] = (void *)(uintptr_t)site;
  } else {
    for (; m < NOTE_SHOWN && at + m < n; m++) shown[m] = frames[at + m];
  }
  char **names = backtrace_symbols(shown, m);
  fprintf(stderr, "wspool: debug note: %s; at %s\n", what, names ? names[0] : "?");
  for (int k = 1; names && k < m; k++) fprintf(stderr, "wspool:   called from %s\n", names[k]);
  fflush(stderr);
  free(names);
  pthread_mutex_unlock(&note_lock);
}
#endif
