/* SPDX-License-Identifier: MIT */
/* nqueens: count the ways to place n non-attacking queens on an n x n board.
 *
 * Each task owns one partial board (queens in the first rows) and spawns one
 * child task per valid square in the next row: up to n children, so the
 * frames are a small array on the task's stack, synced in reverse order.
 * The board is three bitmasks (columns and the two diagonals under attack),
 * copied into each child, so children share nothing and need no locks.
 * The last `seq_rows` rows are counted by plain recursion inside one task.
 * The same search runs twice: with pool_spawn/pool_sync and a struct per
 * child, and as a typed task (POOL_TASK), whose arguments and count need no
 * struct.
 *
 *   usage: nqueens [n [workers [seq_rows]]]
 *     n         board size, 1..17 (default 14)
 *     workers   0 = the default pool, one worker per CPU (default)
 *     seq_rows  rows left at which tasks stop (default 8; 0 = a task for
 *               every placement in every row, the finest grain)
 *
 * Exits 0 only if both the sequential and the parallel count equal the known
 * number of solutions (OEIS A000170).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <wspool.h>

/* known[n]: the number of solutions on an n x n board. */
#define MAX_N 17
static const long known[MAX_N + 1] = {1,     1,      0,       0,       2,        10,
                                      4,     40,     92,      352,     724,      2680,
                                      14200, 73712,  365596,  2279184, 14772512, 95815104};

/* The sequential baseline: `cols`, `left`, `right` have a bit set for every
 * square of the current row attacked along a column, a \ or a / diagonal. */
static long queens(uint32_t all, uint32_t cols, uint32_t left, uint32_t right) {
  if (cols == all) return 1;
  long count = 0;
  for (uint32_t avail = all & ~(cols | left | right); avail; avail &= avail - 1) {
    uint32_t q = avail & -avail; /* the lowest free square */
    count += queens(all, cols | q, (left | q) << 1, (right | q) >> 1);
  }
  return count;
}

/* Inside a task, spawn and sync only fail on misuse (EINVAL): stop loudly. */
#define CHECK(call) check((call), #call)
static void check(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "nqueens: %s: %s\n", what, pool_strerror(rc));
    exit(1);
  }
}

/* One partial board: the task's input, and its count of completions. */
typedef struct {
  uint32_t all, cols, left, right;
  long count;
} board;

/* With this many rows (or fewer) left to fill, a task counts the rest with the
 * sequential code: near the leaves a subtree is too small to be worth a task
 * (a spawn/sync pair costs about as much as a few sequential nodes). Set
 * once in main() before any task runs. */
static int seq_rows = 8;

static void queens_task(void *p) {
  board *b = p;
  if (__builtin_popcount(b->all & ~b->cols) <= seq_rows) {
    b->count = queens(b->all, b->cols, b->left, b->right);
    return;
  }
  board child[MAX_N];       /* the children's boards and results */
  pool_task_t frame[MAX_N]; /* one frame per child, alive until its sync */
  int k = 0;
  for (uint32_t avail = b->all & ~(b->cols | b->left | b->right); avail; avail &= avail - 1) {
    uint32_t q = avail & -avail;
    child[k] = (board){b->all, b->cols | q, (b->left | q) << 1, (b->right | q) >> 1, 0};
    CHECK(pool_spawn(NULL, &frame[k], queens_task, &child[k])); /* NULL: this worker's pool */
    k++;
  }
  b->count = 0;
  while (k-- > 0) { /* newest first: the common case runs it inline, cheaply */
    CHECK(pool_sync(&frame[k]));
    b->count += child[k].count;
  }
}

/* The same search as a typed task: tqueens_spawn stores the four masks in
 * the child's frame, tqueens_sync returns the child's count. */
static long tqueens(uint32_t all, uint32_t cols, uint32_t left, uint32_t right);
POOL_TASK(long, tqueens, uint32_t, uint32_t, uint32_t, uint32_t);

static long tqueens(uint32_t all, uint32_t cols, uint32_t left, uint32_t right) {
  if (__builtin_popcount(all & ~cols) <= seq_rows) return queens(all, cols, left, right);
  tqueens_frame frame[MAX_N];
  int k = 0;
  for (uint32_t avail = all & ~(cols | left | right); avail; avail &= avail - 1) {
    uint32_t q = avail & -avail;
    CHECK(tqueens_spawn(&frame[k++], all, cols | q, (left | q) << 1, (right | q) >> 1));
  }
  long count = 0;
  while (k-- > 0) count += tqueens_sync(&frame[k]);
  return count;
}

static void tqueens_task(void *p) {
  board *b = p;
  b->count = tqueens(b->all, b->cols, b->left, b->right);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return EINVAL;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  long n = 14, workers = 0, rows = seq_rows;
  if (argc > 4 || (argc > 1 && parse(argv[1], 1, MAX_N, &n)) ||
      (argc > 2 && parse(argv[2], 0, POOL_MAX_THREADS, &workers)) ||
      (argc > 3 && parse(argv[3], 0, MAX_N, &rows))) {
    fprintf(stderr, "usage: %s [n (1..%d) [workers (0..%u, 0 = all CPUs) [seq_rows (0..%d)]]]\n",
            argv[0], MAX_N, POOL_MAX_THREADS, MAX_N);
    return 1;
  }
  seq_rows = (int)rows;

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "nqueens: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "nqueens: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  uint32_t all = (uint32_t)((1ull << n) - 1); /* one bit per column */

  double t0 = now();
  long seq = queens(all, 0, 0, 0);
  double t_seq = now() - t0;

  /* The empty board is the root task. pool_submit() from outside the pool
   * hands it to a worker; pool_wait_idle() returns once it has finished. */
  board root = {all, 0, 0, 0, 0};
  t0 = now();
  int rc = pool_submit(pool, queens_task, &root);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_par = now() - t0;
  if (rc) fprintf(stderr, "nqueens: %s\n", pool_strerror(rc));

  board troot = {all, 0, 0, 0, 0};
  t0 = now();
  if (rc == 0) rc = pool_submit(pool, tqueens_task, &troot);
  if (rc == 0) rc = pool_wait_idle(pool);
  double t_typed = now() - t0;
  if (rc) fprintf(stderr, "nqueens: %s\n", pool_strerror(rc));

  int ok = rc == 0 && seq == known[n] && root.count == known[n] && troot.count == known[n];
  printf("%ld-queens: parallel %ld, typed %ld, sequential %ld, known %ld: %s\n", n, root.count,
         troot.count, seq, known[n], ok ? "ok" : "WRONG");
  printf("sequential %.3f s; on %u workers: parallel %.3f s (speedup %.2fx), typed %.3f s"
         " (%.2fx)\n",
         t_seq, pool_threads(pool), t_par, t_seq / t_par, t_typed, t_seq / t_typed);

  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "nqueens: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  return ok ? 0 : 1;
}
