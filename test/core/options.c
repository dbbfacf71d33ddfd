/* SPDX-License-Identifier: MIT */
/* The options table (runtime/options.c) against README.md's environment
 * table: every WSPOOL_* variable the library reads has its row, with the
 * same text, and the README lists no library variable the table lacks.
 * WSPOOL_README is README.md's path (meson.build). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"

/* Variables of the tests and benchmarks, which README documents beside the
 * library's. */
static const char *const not_library[] = {"WSPOOL_STRESS"};

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  CHECK_OK(fseek(f, 0, SEEK_END));
  long n = ftell(f);
  CHECK(n > 0);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  CHECK(s != NULL);
  CHECK_EQ(fread(s, 1, (size_t)n, f), n);
  s[n] = '\0';
  fclose(f);
  return s;
}

/* README's row for option o. */
static void expected_row(const ws_option_desc *o, char *buf, size_t size) {
  if (o->example)
    snprintf(buf, size, "| `%s=%s` | %s |\n", o->name, o->example, o->doc);
  else
    snprintf(buf, size, "| `%s` | %s |\n", o->name, o->doc);
}

static void case_rows_match(void) {
  char *readme = read_file(WSPOOL_README);
  size_t n;
  const ws_option_desc *t = ws_option_table(&n);
  CHECK(n > 0);
  for (size_t i = 0; i < n; i++) {
    char row[512];
    expected_row(&t[i], row, sizeof row);
    if (!strstr(readme, row)) {
      fprintf(stderr, "README.md lacks the row:\n%s", row);
      CHECK(0);
    }
  }
  free(readme);
}

static bool known(const char *name, size_t len) {
  size_t n;
  const ws_option_desc *t = ws_option_table(&n);
  for (size_t i = 0; i < n; i++)
    if (strlen(t[i].name) == len && !strncmp(t[i].name, name, len)) return true;
  for (size_t i = 0; i < sizeof not_library / sizeof *not_library; i++)
    if (strlen(not_library[i]) == len && !strncmp(not_library[i], name, len)) return true;
  return false;
}

static void case_no_extra_rows(void) {
  char *readme = read_file(WSPOOL_README);
  unsigned rows = 0;
  for (const char *s = strstr(readme, "\n| `WSPOOL_"); s; s = strstr(s + 1, "\n| `WSPOOL_")) {
    const char *name = s + 4;
    size_t len = strcspn(name, "=`");
    if (!known(name, len)) {
      fprintf(stderr, "README.md documents %.*s, which options.c does not list\n", (int)len, name);
      CHECK(0);
    }
    rows++;
  }
  size_t n;
  ws_option_table(&n);
  CHECK(rows >= n);
  free(readme);
}

TEST_MAIN(10, TEST_CASE(rows_match), TEST_CASE(no_extra_rows))
