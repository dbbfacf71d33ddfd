/* SPDX-License-Identifier: MIT */
/* pool_dump_state (wspool.h, Statistics): what a hang would print.
 *
 * 1. asleep: a 2-worker pool whose workers sleep: one line for the pool
 *    (its name, 2 workers, sleepers 2), one per worker, "asleep".
 * 2. waiting: on a 2-worker pool, task A spawns C and spins until C has
 *    started on the other worker (a steal: A is busy), then syncs C, which
 *    spins until released: A is then waiting for C's frame, and the dump
 *    says so (deterministically: A cannot run C, which is taken). The
 *    dump is polled until it shows the wait; then C is released and the
 *    results are checked.
 * 3. none: no live pool: one line saying so; a bad fd: EBADF.
 * 4. sigquit (-Ddebug_checks=true builds): a child with a live pool that
 *    gets SIGQUIT writes the dump to stderr and dies of SIGQUIT. A child
 *    started with SIGQUIT ignored keeps it so: the library sets no handler
 *    over a disposition it did not find at its default, the raise returns
 *    and nothing is written. The child is this program again (the case
 *    sigquit_child, run only when named), so each starts with the
 *    disposition given, whatever this process inherited.
 * Cases: asleep, waiting, none, sigquit (sigquit_child: its child). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"
#include "wspool_test_config.h"

static size_t count(const char *text, const char *needle) {
  size_t k = 0;
  for (const char *s = text; (s = strstr(s, needle)) != NULL; s++) k++;
  return k;
}

static char text[1 << 16];

static void case_asleep(void) {
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 2;
  cfg.name = "dumped";
  pool_t *p = NULL;
  CHECK_OK(pool_create(&p, &cfg));
  wait_all_asleep(p);
  dump_to(text, sizeof text);
  fputs(text, stderr);
  CHECK_EQ(count(text, "wspool: pool "), 1);
  CHECK(strstr(text, "\"dumped\", 2 workers: sleepers 2,"));
  CHECK(strstr(text, "  worker 0: asleep;"));
  CHECK(strstr(text, "  worker 1: asleep;"));
  CHECK_OK(pool_destroy(p));
}

static atomic_int c_started, c_release;

static void child(void *arg) {
  (void)arg;
  atomic_store(&c_started, 1);
  while (!atomic_load(&c_release)) sleep_ms(1);
}

static void parent(void *arg) {
  pool_task_t t;
  CHECK_OK(pool_spawn(NULL, &t, child, NULL));
  /* Busy until the other worker has stolen and started C. */
  while (!atomic_load(&c_started)) {
  }
  CHECK_OK(pool_sync(&t));
  atomic_store((atomic_int *)arg, 1);
}

static void case_waiting(void) {
  pool_t *p = make_pool(2);
  atomic_int done = 0;
  CHECK_OK(pool_submit(p, parent, &done));
  for (;;) {
    dump_to(text, sizeof text);
    if (strstr(text, ": waiting (helping) for word ")) break;
    sleep_ms(5);
  }
  fputs(text, stderr);
  CHECK_EQ(count(text, ": waiting (helping) for word "), 1);
  CHECK_EQ(count(text, "running or looking for work"), 1); /* C's worker */
  atomic_store(&c_release, 1);
  CHECK_OK(pool_wait_idle(p));
  CHECK_EQ(atomic_load(&done), 1);
  CHECK_OK(pool_destroy(p));
}

static void case_none(void) {
  dump_to(text, sizeof text);
  CHECK(!strcmp(text, "wspool: no live pool\n"));
  CHECK_EQ(pool_dump_state(-1), EBADF);
}

/* The child of case_sigquit: a live pool, then SIGQUIT. */
static void case_sigquit_child(void) {
  pool_t *p = make_pool(2);
  wait_all_asleep(p);
  raise(SIGQUIT);
  _exit(0); /* SIGQUIT ignored */
}

/* Runs sigquit_child with SIGQUIT at `disposition`; its stderr into
 * `text`. Returns its wait status; *n is what it wrote. */
static int sigquit_child(void (*disposition)(int), ssize_t *n) {
  char path[] = "/tmp/wspool-dump-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fd, 2);
    signal(SIGQUIT, disposition); /* kept across exec when ignored, else the default */
    execl("/proc/self/exe", test_argv0(), "sigquit_child", (char *)NULL);
    _exit(2);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  *n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  unlink(path);
  text[*n > 0 ? *n : 0] = 0;
  return status;
}

static void case_sigquit(void) {
  if (!WSPOOL_TEST_DEBUG_CHECKS) TEST_SKIP("SIGQUIT dumps only in -Ddebug_checks=true builds");
  ssize_t n;
  int status = sigquit_child(SIG_DFL, &n);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGQUIT)) {
    /* What the child did instead, and what it wrote. */
    fprintf(stderr, "child: %s %d; its stderr:\n%s", WIFSIGNALED(status) ? "signal" : "exit",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), text);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGQUIT);
  }
  CHECK(n > 0);
  CHECK(strstr(text, "2 workers: sleepers 2,"));
  CHECK(strstr(text, "  worker 1: asleep;"));
  status = sigquit_child(SIG_IGN, &n);
  if (n > 0) fprintf(stderr, "child with SIGQUIT ignored wrote:\n%s", text);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(n, 0);
}

TEST_MAIN(60, TEST_CASE(asleep), TEST_CASE(waiting), TEST_CASE(none), TEST_CASE(sigquit),
          TEST_CASE_NAMED(sigquit_child))
