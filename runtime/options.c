/* SPDX-License-Identifier: MIT */
/* Every WSPOOL_* environment variable the library reads: one table (name,
 * default, what it accepts, what it does), read only here, after
 * mimalloc's options.c. A bad value is reported on stderr naming the
 * variable and the value, and the default is used. Variables are read when
 * they are used (pool_config_default(), each pool's creation and destroy,
 * the first trace), not cached, so a program may set them between pools.
 * README.md's environment table is checked against this one by
 * test/core/options.c. pool_config_default() is here too: it reads three
 * of them.
 *
 * Every variable is read with secure_getenv(): in a process that gained
 * privilege at exec (setuid or setgid, file capabilities: the kernel's
 * AT_SECURE), each reads as unset and nothing is printed, as glibc treats
 * its own MALLOC_* and LD_* variables. Otherwise an unprivileged user would
 * choose, through the environment, the file a privileged program writes
 * (WSPOOL_TRACE) or what it prints. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static void bad_value(const char *name, const char *value, const char *expected) {
  fprintf(stderr, "wspool: ignoring %s=\"%s\": expected %s\n", name, value, expected);
}

/* An unsigned count in [0, max]; *out unchanged and false on a bad value. */
static bool parse_count(const char *s, unsigned long max, unsigned long *out) {
  if (!s || !*s) return false;
  for (const char *c = s; *c; c++)
    if (!isdigit((unsigned char)*c)) return false;
  errno = 0;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end || v > max) return false;
  *out = v;
  return true;
}

/* What a variable's value is parsed as. */
enum { KIND_COUNT, KIND_CHOICE, KIND_FLAG, KIND_PATH };

/* The rows of README.md's environment table are "| `NAME` | doc |" for
 * counts and choices, "| `NAME=1` | doc |" for flags and "| `NAME=file.json`
 * | doc |" for paths (the `example`). */
static const ws_option_desc options[WS_OPT_COUNT] = {
    [WS_OPT_THREADS] = {.name = "WSPOOL_THREADS", .kind = KIND_COUNT, .dflt = 0,
                        .max = POOL_MAX_THREADS,
                        .accepts = "a worker count from 0 (automatic) to 4096",
                        .doc = "worker count for `pool_config_default` (0 = one per allowed CPU)"},
    /* The choices in the order of pool_bind_t's values. */
    [WS_OPT_BIND] = {.name = "WSPOOL_BIND", .kind = KIND_CHOICE, .dflt = POOL_BIND_NONE,
                     .choices = "none\0core\0spread\0", .accepts = "none, core or spread",
                     .doc = "`none`, `core` or `spread`"},
    [WS_OPT_STATS] = {.name = "WSPOOL_STATS", .kind = KIND_FLAG, .dflt = 0, .example = "1",
                      .accepts = "0 or 1",
                      .doc = "per-worker counters on stderr when a pool is destroyed"},
    [WS_OPT_VERBOSE] = {.name = "WSPOOL_VERBOSE", .kind = KIND_FLAG, .dflt = 0, .example = "1",
                        .accepts = "0 or 1",
                        .doc = "the placement on stderr when a pool is created"},
    [WS_OPT_TRACE] = {.name = "WSPOOL_TRACE", .kind = KIND_PATH, .example = "file.json",
                      .accepts = "a file name",
                      .doc = "a Chrome trace-event file (Perfetto, chrome://tracing)"},
    [WS_OPT_CHAOS_SEED] = {.name = "WSPOOL_CHAOS_SEED", .kind = KIND_COUNT, .dflt = 0,
                           .max = 0xffffffffu, .accepts = "a seed from 0 (off) to 4294967295",
                           .doc = "chaos builds (`-Dchaos=true`): the seed of every thread's "
                                  "random yields and spins (0: none)"},
    /* -1, no value a count can have: 4 per worker (pool.c). */
    [WS_OPT_STANDINS] = {.name = "WSPOOL_STANDINS", .kind = KIND_COUNT, .dflt = -1,
                         .max = POOL_MAX_THREADS,
                         .accepts = "a stand-in count from 0 (regions off) to 4096",
                         .doc = "stand-in threads each pool may run at once for tasks blocked "
                                "in a `pool_blocking_begin` region (unset: 4 per worker)"},
    /* -1, no value a count can have: POOL_IDLE_POLL_AUTO. 0 is "none" here,
     * as a time; in pool_config_t 0 is automatic, what a zeroed struct
     * holds (pool_config_default maps one to the other). */
    [WS_OPT_IDLE_POLL] = {.name = "WSPOOL_IDLE_POLL", .kind = KIND_COUNT, .dflt = -1,
                          .max = POOL_IDLE_POLL_MAX,
                          .accepts = "microseconds from 0 (sleep at once) to 1000000",
                          .doc = "how long an idle worker polls before it sleeps, in us, for "
                                 "`pool_config_default` (0 = sleeps at once; unset: 64 yielding "
                                 "looks, about 100, none beside busy threads)"},
    [WS_OPT_PROFILE] = {.name = "WSPOOL_PROFILE", .kind = KIND_FLAG, .dflt = 0, .example = "1",
                        .accepts = "0 or 1",
                        .doc = "each pool's work/span profile on stderr (and in the trace) when "
                               "it is destroyed"},
};

const ws_option_desc *ws_option_table(size_t *n) {
  *n = WS_OPT_COUNT;
  return options;
}

/* The index of `v` in a choice list ("a\0b\0\0"), -1 if absent. */
static long choice_index(const char *list, const char *v) {
  long i = 0;
  for (const char *c = list; *c; c += strlen(c) + 1, i++)
    if (!strcmp(c, v)) return i;
  return -1;
}

long ws_option_long(ws_option_id id) {
  const ws_option_desc *o = &options[id];
  const char *v = secure_getenv(o->name);
  if (!v || (o->kind == KIND_FLAG && !*v)) return o->dflt;
  unsigned long n;
  switch (o->kind) {
  case KIND_COUNT:
    if (parse_count(v, o->max, &n)) return (long)n;
    break;
  case KIND_CHOICE: {
    long i = choice_index(o->choices, v);
    if (i >= 0) return i;
    break;
  }
  case KIND_FLAG:
    if (!strcmp(v, "0")) return 0;
    if (!strcmp(v, "1")) return 1;
    break;
  default:
    return o->dflt;
  }
  bad_value(o->name, v, o->accepts);
  return o->dflt;
}

const char *ws_option_str(ws_option_id id) {
  const char *v = secure_getenv(options[id].name);
  return v && *v ? v : NULL;
}

void pool_config_default(pool_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof(*cfg));
  cfg->threads = (unsigned)ws_option_long(WS_OPT_THREADS);
  cfg->bind = (pool_bind_t)ws_option_long(WS_OPT_BIND);
  long poll = ws_option_long(WS_OPT_IDLE_POLL);
  cfg->idle_poll_us = poll < 0 ? POOL_IDLE_POLL_AUTO : poll == 0 ? POOL_IDLE_POLL_NONE : (int)poll;
}
