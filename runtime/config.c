/* SPDX-License-Identifier: MIT */
/* Configuration defaults and every environment variable wspool reads, in one
 * place (after mimalloc's options table). A bad value is reported on stderr
 * naming the variable and the value, and the default is used. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

void pool_config_default(pool_config_t *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof(*cfg));
  cfg->threads = 0;
  cfg->bind = POOL_BIND_NONE;
  cfg->stack_size = 0;
  cfg->bind_strict = 0;

  const char *v = getenv("WSPOOL_THREADS");
  if (v) {
    unsigned long n;
    if (parse_count(v, POOL_MAX_THREADS, &n))
      cfg->threads = (unsigned)n;
    else
      bad_value("WSPOOL_THREADS", v, "a worker count from 0 (automatic) to 4096");
  }
  v = getenv("WSPOOL_BIND");
  if (v) {
    if (!strcmp(v, "none"))
      cfg->bind = POOL_BIND_NONE;
    else if (!strcmp(v, "core"))
      cfg->bind = POOL_BIND_CORE;
    else if (!strcmp(v, "spread"))
      cfg->bind = POOL_BIND_SPREAD;
    else
      bad_value("WSPOOL_BIND", v, "none, core or spread");
  }
}

/* A 0/1 switch such as WSPOOL_VERBOSE; unset is 0. */
int ws_env_flag(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v || !strcmp(v, "0")) return 0;
  if (!strcmp(v, "1")) return 1;
  bad_value(name, v, "0 or 1");
  return 0;
}
