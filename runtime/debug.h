/* SPDX-License-Identifier: MIT */
/* Layer 0: the runtime's debug checks and symbol visibility. Included by
 * every layer; includes nothing of the runtime. */
#ifndef WS_DEBUG_H
#define WS_DEBUG_H

#include <stdbool.h>

/* A symbol shared between the runtime's files (or its assembly) and never
 * exported, whatever the build's default visibility. */
#define WS_HIDDEN __attribute__((visibility("hidden")))

/* Debug checks (-Ddebug_checks=true, debug.c). WS_MISUSE reports a misuse
 * the header names and aborts; WS_ASSERT an invariant of the runtime. Both
 * compile to nothing in other builds (WS_DEBUG is a constant, so the
 * conditions are still type-checked). */
#ifdef WS_DEBUG_CHECKS
#define WS_DEBUG 1
__attribute__((noreturn, cold)) void ws_debug_fail(const char *what, const char *file, int line);
/* Objects in use, by address (debug.c): a group from its first pending
 * child until its count is back to 0. */
void ws_debug_busy_set(const void *obj, bool in_use);
bool ws_debug_busy(const void *obj);
/* A note on stderr, not a misuse (nothing aborts): `what` happened at the
 * call site that `ra` returns to, once per site and for the first
 * WS_DEBUG_NOTE_SITES sites of the process. When through(next), for the
 * return address `next` of the frame out of ra's, says ra's frame calls on
 * behalf of its own caller (a trampoline), the site is `next`. */
enum { WS_DEBUG_NOTE_SITES = 10 };
void ws_debug_note_site(const char *what, const void *ra, bool (*through)(const void *next));
#else
#define WS_DEBUG 0
static inline void ws_debug_fail(const char *what, const char *file, int line) {
  (void)what;
  (void)file;
  (void)line;
}
static inline void ws_debug_busy_set(const void *obj, bool in_use) {
  (void)obj;
  (void)in_use;
}
static inline bool ws_debug_busy(const void *obj) {
  (void)obj;
  return false;
}
static inline void ws_debug_note_site(const char *what, const void *ra,
                                      bool (*through)(const void *next)) {
  (void)what;
  (void)ra;
  (void)through;
}
#endif
#define WS_MISUSE_IF(cond, what)                                            \
  do {                                                                      \
    if (WS_DEBUG && (cond)) ws_debug_fail("misuse: " what, __FILE__, __LINE__); \
  } while (0)
#define WS_ASSERT(cond)                                                                 \
  do {                                                                                  \
    if (WS_DEBUG && !(cond)) ws_debug_fail("invariant broken: " #cond, __FILE__, __LINE__); \
  } while (0)

#endif /* WS_DEBUG_H */
