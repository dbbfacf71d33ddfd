/* SPDX-License-Identifier: MIT */
/* Layer 2: the table of WSPOOL_* environment variables (options.c). */
#ifndef WS_OPTIONS_H
#define WS_OPTIONS_H

#include <stddef.h>

typedef enum ws_option_id {
  WS_OPT_THREADS, /* pool_config_default's worker count */
  WS_OPT_BIND,    /* pool_config_default's binding: index into pool_bind_t */
  WS_OPT_STATS,   /* 1: each pool's statistics on stderr at destroy */
  WS_OPT_VERBOSE, /* 1: each pool's placement on stderr at creation */
  WS_OPT_TRACE,   /* a path: the Chrome trace file */
  WS_OPT_CHAOS_SEED, /* the chaos build's seed (0: off) */
  WS_OPT_STANDINS,   /* each pool's stand-in limit (-1 when unset: 4 per worker) */
  WS_OPT_IDLE_POLL,  /* pool_config_default's idle poll in us (-1 when unset: automatic) */
  WS_OPT_PROFILE,    /* 1: each pool's work/span profile on stderr at destroy */
  WS_OPT_COUNT
} ws_option_id;

typedef struct ws_option_desc {
  const char *name;    /* the variable */
  int kind;            /* what the value is parsed as (options.c) */
  long dflt;           /* the value when unset or bad (counts, choices, flags) */
  unsigned long max;   /* counts: the largest value */
  const char *choices; /* choices: the accepted words, "a\0b\0" */
  const char *example; /* flags and paths: the value README's row shows */
  const char *accepts; /* what the bad-value message says it expects */
  const char *doc;     /* what it does: README.md's row says the same */
} ws_option_desc;

/* The variable's value as a number (a count, a choice's index, a flag's 0
 * or 1), or its default when unset or bad (reported on stderr). */
long ws_option_long(ws_option_id id);
/* The variable's value, NULL when unset or empty. */
const char *ws_option_str(ws_option_id id);
/* Every row of the table (tests compare it with README.md). */
const ws_option_desc *ws_option_table(size_t *n);

#endif /* WS_OPTIONS_H */
