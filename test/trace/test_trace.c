/* SPDX-License-Identifier: MIT */
/* WSPOOL_TRACE: a child process runs known work on two pools (one destroyed,
 * one left alive until exit) and the parent checks the file: a JSON array,
 * a process track per pool, a thread track per worker, exactly one slice per
 * task run, named after the task function, and a complete file at exit.
 * The file is one the process creates, renamed into place: a hard link
 * already at that name leaves its other names' content unchanged, and
 * anything there that is not a regular file (a symbolic link, a pipe; a
 * device such as /dev/null the same way) is left as it is, untraced.
 * Cases: two_pools, overflow, symlink_kept, fifo_kept, hard_link_kept,
 * cannot_create. */
#include <stdatomic.h>
#include <sys/stat.h>
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

/* Runs child(path) in a fork, which must exit 0. */
static void run_child(void (*child)(const char *), const char *path) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) child(path);
  child_ok(pid, "the child");
}

/* Run `child` in a fork with WSPOOL_TRACE at `path`; return the file's
 * text (in `text`), and remove the file. */
static size_t traced_run_at(void (*child)(const char *), const char *path) {
  run_child(child, path);
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

/* The same at a fresh temporary file. */
static size_t traced_run(void (*child)(const char *)) {
  char path[] = "/tmp/wspool-trace-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  return traced_run_at(child, path);
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

/* A file of known text at a fresh temporary name (written into `path`). */
static void make_victim(char *path) {
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "victim\n", 7) == 7);
  close(fd);
}

static void check_victim(const char *path) {
  char buf[64] = {0};
  FILE *f = fopen(path, "r");
  CHECK(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  CHECK_EQ(n, 7);
  CHECK(!strcmp(buf, "victim\n"));
}

/* Files in /tmp whose names start with `prefix` (the trace's temporary
 * names are "<path>.<pid>.<k>~"). */
static int count_prefixed(const char *prefix) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls -A /tmp | grep -c -F '%s' || true", prefix + 5);
  FILE *p = popen(cmd, "r");
  CHECK(p);
  int n = -1;
  CHECK(fscanf(p, "%d", &n) == 1);
  pclose(p);
  return n;
}

/* 100 tasks on a pool created with WSPOOL_TRACE=path, destroyed. */
static void run_small(const char *path) {
  setenv("WSPOOL_TRACE", path, 1);
  atomic_int n = 0;
  pool_t *a = make_pool(2);
  for (int i = 0; i < 100; i++) CHECK_OK(pool_submit(a, traced_task, &n));
  CHECK_OK(pool_destroy(a));
  CHECK_EQ(atomic_load(&n), 100);
}

static void child_small(const char *path) {
  run_small(path);
  exit(0);
}

/* A fresh name in /tmp, nothing there yet (written into `name`). */
static void fresh_name(char *name) {
  int fd = mkstemp(name);
  CHECK(fd >= 0);
  close(fd);
  CHECK_OK(unlink(name));
}

/* A victim file of known text, and `make` (link or symlink) naming it at a
 * fresh name: both written into the caller's templates. */
static void link_to_victim(int (*make)(const char *target, const char *name), char *victim,
                           char *name) {
  make_victim(victim);
  fresh_name(name);
  CHECK_OK(make(victim, name));
}

/* A file with a second hard link is replaced as a name, not written: the
 * other link keeps its text, and no temporary file is left. */
static void case_hard_link_kept(void) {
  char victim[] = "/tmp/wspool-victim-XXXXXX", name[] = "/tmp/wspool-tlink-XXXXXX";
  link_to_victim(link, victim, name);
  traced_run_at(child_small, name);
  CHECK_EQ(count(text, "{\"name\":\"traced_task\",\"cat\":\"task\",\"ph\":\"X\""), 100);
  check_victim(victim);
  CHECK_EQ(count_prefixed(name), 0);
  unlink(victim);
}

/* In a child: the work at WSPOOL_TRACE=path runs, untraced, with one line
 * on stderr, wspool's "ignoring WSPOOL_TRACE" message, saying `why`. */
static void run_refused(const char *path, const char *why) {
  int fds[2];
  CHECK_OK(pipe(fds));
  CHECK(dup2(fds[1], 2) == 2);
  run_small(path);
  close(2);
  close(fds[1]);
  char msg[512] = {0};
  ssize_t k = read(fds[0], msg, sizeof msg - 1);
  CHECK(k > 0);
  CHECK(strstr(msg, "wspool: ignoring WSPOOL_TRACE=\"") == msg);
  CHECK(strstr(msg, why));
  CHECK(!strchr(msg, '\n') || strchr(msg, '\n') == msg + k - 1); /* one line */
  exit(0);
}

static void child_not_regular(const char *path) {
  run_refused(path, "it names something other than a regular file");
}

/* A symbolic link is neither followed nor replaced (it may be /dev/stderr's):
 * the link and its target stay as they were, and nothing else is made. */
static void case_symlink_kept(void) {
  char victim[] = "/tmp/wspool-victim-XXXXXX", name[] = "/tmp/wspool-tlink-XXXXXX";
  link_to_victim(symlink, victim, name);
  run_child(child_not_regular, name);
  char target[sizeof victim + 1] = {0};
  CHECK_EQ(readlink(name, target, sizeof target - 1), (ssize_t)strlen(victim));
  CHECK(!strcmp(target, victim));
  check_victim(victim);
  CHECK_EQ(count_prefixed(name), 1); /* the link itself, nothing beside it */
  unlink(name);
  unlink(victim);
}

/* A named pipe, standing in for a device such as /dev/null (which a test
 * must not risk): neither opened nor replaced. */
static void case_fifo_kept(void) {
  char name[] = "/tmp/wspool-tfifo-XXXXXX";
  fresh_name(name);
  CHECK_OK(mkfifo(name, 0600));
  run_child(child_not_regular, name);
  struct stat st;
  CHECK_OK(lstat(name, &st));
  CHECK(S_ISFIFO(st.st_mode));
  CHECK_EQ(count_prefixed(name), 1);
  unlink(name);
}

static void child_cannot_create(const char *path) {
  run_refused(path, "cannot create it (No such file or directory)");
}

/* A trace that cannot be created (its directory does not exist): one
 * message, and the program runs untraced. */
static void case_cannot_create(void) {
  run_child(child_cannot_create, "/nonexistent-wspool-dir/t.json");
}

TEST_MAIN(120, TEST_CASE(two_pools), TEST_CASE(overflow), TEST_CASE(symlink_kept),
          TEST_CASE(fifo_kept), TEST_CASE(hard_link_kept), TEST_CASE(cannot_create))
