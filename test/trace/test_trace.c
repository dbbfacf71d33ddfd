/* SPDX-License-Identifier: MIT */
/* WSPOOL_TRACE: a child process runs known work on two pools (one destroyed,
 * one left alive until exit) and the parent checks the file: a JSON array,
 * a process track per pool, a thread track per worker, exactly one slice per
 * task run, named after the task function, and a complete file at exit.
 * Cases: two_pools, overflow. */
#include <stdatomic.h>
#include <sys/wait.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { NTASKS = 1000 };

/* Exported (and the executable linked with -rdynamic) so dladdr can name it. */
void traced_task(void *arg);
void traced_task(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void child(const char *path) {
  setenv("WSPOOL_TRACE", path, 1);
  atomic_int n = 0;
  pool_t *a = make_pool(2), *b = make_pool(3);
  for (int i = 0; i < NTASKS; i++) CHECK_OK(pool_submit(a, traced_task, &n));
  for (int i = 0; i < NTASKS; i++) CHECK_OK(pool_submit(b, traced_task, &n));
  CHECK_OK(pool_wait_idle(a));
  CHECK_OK(pool_wait_idle(b));
  CHECK_EQ(atomic_load(&n), 2 * NTASKS);
  CHECK_OK(pool_destroy(a));
  exit(0); /* b is written by the exit handler */
}

/* A pool of one worker records more tasks than its buffer holds: the file
 * keeps exactly a buffer's worth of slices and says recording stopped. */
enum { OVERFLOW_TASKS = 70000, TRACE_CAP = 1 << 16 };

static void child_overflow(const char *path) {
  setenv("WSPOOL_TRACE", path, 1);
  atomic_int n = 0;
  pool_t *a = make_pool(1);
  for (int i = 0; i < OVERFLOW_TASKS; i++) CHECK_OK(pool_submit(a, traced_task, &n));
  CHECK_OK(pool_destroy(a));
  CHECK_EQ(atomic_load(&n), OVERFLOW_TASKS);
  exit(0);
}

/* Occurrences of needle in text. A plain loop: the sanitizers' strstr
 * interceptor re-checks the whole haystack on every call, which makes a
 * count over a large trace quadratic under ASan and TSan. */
static size_t count(const char *text, const char *needle) {
  size_t k = 0, m = strlen(needle);
  for (const char *s = text; *s; s++) {
    size_t i = 0;
    while (i < m && s[i] == needle[i]) i++;
    if (i == m) k++;
  }
  return k;
}

static char text[1 << 24];

/* Run `child` in a fork with WSPOOL_TRACE at a temporary file; return the
 * file's text (in `text`). */
static size_t traced_run(void (*child)(const char *)) {
  char path[] = "/tmp/wspool-trace-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) child(path);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  FILE *f = fopen(path, "r");
  CHECK(f);
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  unlink(path);
  text[len] = 0;
  CHECK(len > 0 && len < sizeof text - 1);
  CHECK(text[0] == '[');
  CHECK(strstr(text, "\n]\n") == text + len - 3); /* closed at exit */
  return len;
}

static void case_two_pools(void) {
  traced_run(child);
  CHECK_EQ(count(text, "\"process_name\""), 2);
  CHECK_EQ(count(text, "\"thread_name\""), 5);
  CHECK_EQ(count(text, "wspool pool 1 (2 workers)"), 1);
  CHECK_EQ(count(text, "wspool pool 2 (3 workers)"), 1);
  CHECK_EQ(count(text, "{\"name\":\"traced_task\",\"cat\":\"task\",\"ph\":\"X\""), 2 * NTASKS);
  CHECK_EQ(count(text, "recording stopped"), 0);
}

static void case_overflow(void) {
  traced_run(child_overflow);
  CHECK_EQ(count(text, "recording stopped"), 1);
  /* The buffer holds TRACE_CAP events of any kind (tasks, sleeps, steals). */
  size_t slices = count(text, "{\"name\":\"traced_task\",\"cat\":\"task\",\"ph\":\"X\"");
  size_t others = count(text, "\"cat\":\"sleep\"") + count(text, "\"cat\":\"steal\"");
  CHECK_EQ(slices + others, TRACE_CAP);
}

TEST_MAIN(120, TEST_CASE(two_pools), TEST_CASE(overflow))
