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

#include "internal.h"

#ifdef WS_DEBUG_CHECKS
void ws_debug_fail(const char *what, const char *file, int line) {
  fprintf(stderr, "wspool: %s (detected at %s:%d); call stack:\n", what, file, line);
  fflush(stderr);
  void *frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  abort();
}
#endif
