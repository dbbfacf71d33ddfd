/* SPDX-License-Identifier: MIT */
/* mpi_hybrid: MPI + threads, one wspool pool per rank.
 *
 * Each rank creates a pool from its own affinity mask (the cores the MPI
 * launcher gave it: threads = 0 sizes the pool from sched_getaffinity),
 * pinned with POOL_BIND_CORE, and counts its share of the n-queens
 * solutions with fork/join: the root's children (the queen's column in the
 * first row) are dealt round-robin over the ranks, and each rank's subtrees
 * run as nested pool_spawn/pool_sync tasks. The ranks combine their counts
 * with MPI_Reduce; rank 0 checks the total against the known number and
 * prints every rank's cpuset and where each of its workers sits.
 *
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED): the workers never
 * do. A start hook (pool_config_t.on_worker_start) records, on each worker
 * thread, the affinity it runs with and its thread name, as a program
 * would set up per-thread state there (a seed, a log tag, a GPU context).
 *
 *   mpirun -np 2 --bind-to core --map-by core ./mpi_hybrid [n]
 *   usage: mpi_hybrid [n]   board size 4..17 (default 14)
 *
 * Exits 0 on every rank only when the total is right and every worker of
 * every rank is bound inside its rank's cpuset (or, where binding is
 * impossible, runs with an affinity inside it). See docs/hybrid.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wspool.h>

#define MAX_N 17
static const long known[MAX_N + 1] = {1,     1,      0,       0,       2,        10,
                                      4,     40,     92,      352,     724,      2680,
                                      14200, 73712,  365596,  2279184, 14772512, 95815104};

/* Rows left at which a task counts the rest sequentially. */
enum { SEQ_ROWS = 7 };

typedef struct {
  uint32_t all, cols, left, right;
  long count;
} board;

static long queens(uint32_t all, uint32_t cols, uint32_t left, uint32_t right) {
  if (cols == all) return 1;
  long count = 0;
  for (uint32_t avail = all & ~(cols | left | right); avail; avail &= avail - 1) {
    uint32_t q = avail & -avail;
    count += queens(all, cols | q, (left | q) << 1, (right | q) >> 1);
  }
  return count;
}

/* Inside a task, spawn and sync fail only on misuse (EINVAL). A worker
 * must not call MPI (FUNNELED), so a failure stops the process, and
 * mpirun the job. */
static void check_task(int rc, const char *what) {
  if (rc) {
    fprintf(stderr, "mpi_hybrid: %s: %s\n", what, pool_strerror(rc));
    abort();
  }
}

/* One partial board: spawns a child per free square of the next row. */
static void queens_task(void *p) {
  board *b = p;
  if (__builtin_popcount(b->all & ~b->cols) <= SEQ_ROWS) {
    b->count = queens(b->all, b->cols, b->left, b->right);
    return;
  }
  board child[MAX_N];
  pool_task_t frame[MAX_N];
  int k = 0;
  for (uint32_t avail = b->all & ~(b->cols | b->left | b->right); avail; avail &= avail - 1) {
    uint32_t q = avail & -avail;
    child[k] = (board){b->all, b->cols | q, (b->left | q) << 1, (b->right | q) >> 1, 0};
    check_task(pool_spawn(NULL, &frame[k], queens_task, &child[k]), "pool_spawn");
    k++;
  }
  b->count = 0;
  while (k-- > 0) {
    check_task(pool_sync(&frame[k]), "pool_sync");
    b->count += child[k].count;
  }
}

/* This rank's share: the first-row columns c with c % size == rank, each a
 * subtree spawned as a task. */
typedef struct {
  int n, rank, size;
  long count;
} share;

static void share_task(void *p) {
  share *s = p;
  uint32_t all = (uint32_t)((1ull << s->n) - 1);
  board child[MAX_N];
  pool_task_t frame[MAX_N];
  int k = 0;
  for (int c = s->rank; c < s->n; c += s->size) {
    uint32_t q = 1u << c;
    child[k] = (board){all, q, q << 1, q >> 1, 0};
    check_task(pool_spawn(NULL, &frame[k], queens_task, &child[k]), "pool_spawn");
    k++;
  }
  s->count = 0;
  while (k-- > 0) {
    check_task(pool_sync(&frame[k]), "pool_sync");
    s->count += child[k].count;
  }
}

/* What each worker's start hook saw on its own thread. */
typedef struct {
  unsigned nslots;
  cpu_set_t *affinity; /* [nslots] */
  char (*name)[16];    /* [nslots] */
} hook_log;

static void on_worker_start(pool_t *pool, unsigned worker, void *ctx) {
  (void)pool;
  hook_log *log = ctx;
  if (worker >= log->nslots) return;
  CPU_ZERO(&log->affinity[worker]);
  if (sched_getaffinity(0, sizeof(cpu_set_t), &log->affinity[worker]) != 0)
    CPU_ZERO(&log->affinity[worker]);
  if (pthread_getname_np(pthread_self(), log->name[worker], sizeof log->name[worker]) != 0)
    log->name[worker][0] = 0;
}

/* "0-3,8" */
static void format_set(const cpu_set_t *set, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set)) e++;
    int w = e > c ? snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", c, e)
                  : snprintf(buf + len, size - len, "%s%d", len ? "," : "", c);
    if (w < 0 || (size_t)w >= size - len) break;
    len += (size_t)w;
    c = e;
  }
}

static int subset(const cpu_set_t *a, const cpu_set_t *b) {
  cpu_set_t x;
  CPU_AND(&x, a, b);
  return CPU_EQUAL(&x, a) && CPU_COUNT(a) > 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { REPORT = 4096 };

int main(int argc, char **argv) {
  int provided;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 1;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int n = 14;
  if (argc > 1) {
    char *end;
    errno = 0;
    long v = strtol(argv[1], &end, 10);
    if (errno || end == argv[1] || *end || v < 4 || v > MAX_N) {
      if (rank == 0) fprintf(stderr, "usage: %s [n (4..%d)]\n", argv[0], MAX_N);
      MPI_Finalize();
      return 1;
    }
    n = (int)v;
  }
  int ok = provided >= MPI_THREAD_FUNNELED;
  if (!ok && rank == 0) fprintf(stderr, "mpi_hybrid: MPI gives thread level %d < FUNNELED\n", provided);

  /* The cores the launcher gave this rank: the pool is sized and bound
   * within them. */
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) ok = 0;
  unsigned ncpu = (unsigned)CPU_COUNT(&mine);

  char report[REPORT];
  size_t len = 0;
  char setbuf[512];
  format_set(&mine, setbuf, sizeof setbuf);
  char host[MPI_MAX_PROCESSOR_NAME];
  int hlen;
  if (MPI_Get_processor_name(host, &hlen) != MPI_SUCCESS) snprintf(host, sizeof host, "?");
  len += (size_t)snprintf(report + len, REPORT - len, "rank %d on %s: cpuset %s\n", rank, host, setbuf);

  hook_log log = {ncpu ? ncpu : 1, NULL, NULL};
  log.affinity = calloc(log.nslots, sizeof *log.affinity);
  log.name = calloc(log.nslots, sizeof *log.name);
  pool_t *pool = NULL;
  long mine_count = 0;
  double t = 0;
  char pname[16];
  snprintf(pname, sizeof pname, "rank%d", rank);
  pool_config_t cfg;
  pool_config_default(&cfg);
  cfg.threads = 0; /* one worker per CPU of this rank's affinity mask */
  cfg.bind = POOL_BIND_CORE;
  cfg.on_worker_start = on_worker_start;
  cfg.hook_ctx = &log;
  cfg.name = pname;
  int rc = log.affinity && log.name ? pool_create(&pool, &cfg) : ENOMEM;
  if (rc) {
    fprintf(stderr, "mpi_hybrid: rank %d: pool_create: %s\n", rank, pool_strerror(rc));
    ok = 0;
  } else {
    share s = {n, rank, size, 0};
    double t0 = now();
    /* From main(), outside the pool: a worker runs the share's root task
     * (and the tasks it spawns) while this thread waits. */
    rc = pool_submit(pool, share_task, &s);
    if (rc == 0) rc = pool_wait_idle(pool);
    t = now() - t0;
    if (rc) {
      fprintf(stderr, "mpi_hybrid: rank %d: %s\n", rank, pool_strerror(rc));
      ok = 0;
    }
    mine_count = s.count;
    unsigned nw = pool_threads(pool);
    if (nw != ncpu) ok = 0;
    len += (size_t)snprintf(report + len, REPORT - len,
                            "  %u workers, count %ld in %.3f s\n", nw, mine_count, t);
    for (unsigned i = 0; i < nw && i < log.nslots && len < REPORT - 200; i++) {
      int cpu = pool_worker_cpu(pool, i);
      /* Bound: on one CPU of the rank's set, and that is the thread's
       * affinity. Unbound (binding impossible here): an affinity inside the
       * rank's set. */
      int in = cpu >= 0 ? CPU_ISSET(cpu, &mine) && CPU_COUNT(&log.affinity[i]) == 1 &&
                              CPU_ISSET(cpu, &log.affinity[i])
                        : subset(&log.affinity[i], &mine);
      if (!in) ok = 0;
      format_set(&log.affinity[i], setbuf, sizeof setbuf);
      len += (size_t)snprintf(report + len, REPORT - len,
                              "  worker %u (%s): cpu %d, affinity %s: %s\n", i, log.name[i], cpu,
                              setbuf, in ? "inside the rank's cpuset" : "OUTSIDE the rank's cpuset");
    }
  }
  if (len >= REPORT) len = REPORT - 1;

  long total = 0;
  double tmax = 0;
  MPI_Reduce(&mine_count, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

  char *reports = rank == 0 ? malloc((size_t)size * REPORT) : NULL;
  MPI_Gather(report, REPORT, MPI_CHAR, reports, REPORT, MPI_CHAR, 0, MPI_COMM_WORLD);
  /* Ranks of one host whose cpusets overlap run their pools' threads on
   * the same cores (docs/hybrid.md, "What to avoid"): warn. */
  typedef struct {
    char host[MPI_MAX_PROCESSOR_NAME];
    cpu_set_t set;
  } where;
  where me;
  memset(&me, 0, sizeof me);
  snprintf(me.host, sizeof me.host, "%s", host);
  me.set = mine;
  where *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
  MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
  int verified = 1;
  if (rank == 0) {
    for (int r = 0; reports && r < size; r++) fputs(reports + (size_t)r * REPORT, stdout);
    for (int a = 0; all && a < size; a++)
      for (int b = a + 1; b < size; b++) {
        cpu_set_t x;
        CPU_AND(&x, &all[a].set, &all[b].set);
        if (!strcmp(all[a].host, all[b].host) && CPU_COUNT(&x) > 0)
          printf("warning: ranks %d and %d share CPUs on %s: their workers compete for "
                 "the same cores (bind each rank to its own cores)\n", a, b, all[a].host);
      }
    free(all);
    verified = total == known[n];
    printf("%d-queens on %d ranks: total %ld, known %ld: %s\n", n, size, total, known[n],
           verified ? "verified" : "WRONG");
    printf("placement: %s; slowest rank %.3f s\n",
           all_ok ? "every worker inside its rank's cpuset" : "FAILED", tmax);
    fflush(stdout);
    free(reports);
  }
  MPI_Bcast(&verified, 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (pool && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "mpi_hybrid: rank %d: pool_destroy: %s\n", rank, pool_strerror(rc));
    verified = 0;
  }
  free(log.affinity);
  free(log.name);
  MPI_Finalize();
  return verified && all_ok ? 0 : 1;
}
