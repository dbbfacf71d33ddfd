/* SPDX-License-Identifier: MIT */
/* Every WSPOOL_* environment variable the library reads: one table (name,
 * default, what it accepts, what it does), read only here, after
 * mimalloc's options.c. A bad value is reported on stderr naming the
 * variable and the value, and the default is used. Variables are read when
 * they are used (pool_config_default(), each pool's creation and destroy,
 * the first trace), not cached, so a program may set them between pools.
 * README.md's environment table is checked against this one by
 * test/core/options.c. Also pool_config_default(). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "options.h"

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
    [WS_OPT_THREADS] = {"WSPOOL_THREADS", KIND_COUNT, POOL_MAX_THREADS, NULL, NULL,
                        "a worker count from 0 (automatic) to 4096",
                        "worker count for `pool_config_default` (0 = one per allowed CPU)"},
    [WS_OPT_BIND] = {"WSPOOL_BIND", KIND_CHOICE, 0, "none\0core\0spread\0", NULL,
                     "none, core or spread", "`none`, `core` or `spread`"},
    [WS_OPT_STATS] = {"WSPOOL_STATS", KIND_FLAG, 1, NULL, "1", "0 or 1",
                      "per-worker counters on stderr when a pool is destroyed"},
    [WS_OPT_VERBOSE] = {"WSPOOL_VERBOSE", KIND_FLAG, 1, NULL, "1", "0 or 1",
                        "the placement on stderr when a pool is created"},
    [WS_OPT_TRACE] = {"WSPOOL_TRACE", KIND_PATH, 0, NULL, "file.json", "a file name",
                      "a Chrome trace-event file (Perfetto, chrome://tracing)"},
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

long ws_option_long(ws_option_id id, long dflt) {
  const ws_option_desc *o = &options[id];
  const char *v = getenv(o->name);
  if (!v || (o->kind == KIND_FLAG && !*v)) return dflt;
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
    return dflt;
  }
  bad_value(o->name, v, o->accepts);
  return dflt;
}

const char *ws_option_str(ws_option_id id) {
  const char *v = getenv(options[id].name);
  return v && *v ? v : NULL;
}

void pool_config_default(pool_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof(*cfg));
  cfg->threads = (unsigned)ws_option_long(WS_OPT_THREADS, 0);
  /* The choices are listed in the order of pool_bind_t's values. */
  cfg->bind = (pool_bind_t)ws_option_long(WS_OPT_BIND, POOL_BIND_NONE);
  cfg->stack_size = 0;
  cfg->bind_strict = 0;
}
