/* SPDX-License-Identifier: MIT */
/* WSPOOL_STATS=1: destroying a pool prints a per-worker counters table on
 * stderr. A child runs a known number of submitted tasks on 3 workers and
 * destroys the pool with stderr in a file; the parent checks the header, one
 * row per worker, and that the rows' task counts add up to exactly the
 * number submitted (destroy has joined the workers, so they are final).
 * One case: table. */
#include <stdatomic.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

enum { NTASKS = 5000, WORKERS = 3 };

static void task(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void case_table(void) {
  char path[] = "/tmp/wspool-stats-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fd, 2);
    setenv("WSPOOL_STATS", "1", 1);
    atomic_int n = 0;
    pool_t *p = make_pool(WORKERS);
    for (int i = 0; i < NTASKS; i++) CHECK_OK(pool_submit(p, task, &n));
    CHECK_OK(pool_destroy(p));
    CHECK_EQ(atomic_load(&n), NTASKS);
    exit(0);
  }
  close(fd);
  child_ok(pid, "the child");
  FILE *f = fopen(path, "r");
  CHECK(f);
  char line[512];
  int header = 0, rows = 0;
  unsigned long long total = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "wspool: pool") && strstr(line, "3 workers")) header++;
    unsigned w;
    int cpu;
    unsigned long long tasks, local, global, steals, remote, failed, sleeps;
    if (sscanf(line, "%u %d %llu %llu %llu %llu %llu %llu %llu", &w, &cpu, &tasks, &local, &global,
               &steals, &remote, &failed, &sleeps) == 9) {
      CHECK_EQ(w, (unsigned)rows);
      CHECK(cpu == -1);
      /* every task came from the global queue, a local pop or a steal */
      CHECK_EQ(tasks, local + global + steals);
      total += tasks;
      rows++;
    }
  }
  fclose(f);
  unlink(path);
  CHECK_EQ(header, 1);
  CHECK_EQ(rows, WORKERS);
  CHECK_EQ(total, NTASKS);
}

TEST_MAIN(60, TEST_CASE(table))
