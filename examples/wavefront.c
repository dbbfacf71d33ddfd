/* SPDX-License-Identifier: MIT */
/* wavefront: a dependency graph of jobs, on the edit distance of two
 * strings.
 *
 * D[i][j], the edit distance between the first i letters of a and the first
 * j letters of b, needs D[i-1][j], D[i][j-1] and D[i-1][j-1]. Cut the matrix
 * into blocks of bs x bs cells: block (i, j) can run once block (i-1, j)
 * (above) and block (i, j-1) (on the left) are done; the corner block
 * (i-1, j-1) is done by then, as both of those came after it. So the blocks
 * run as a wave from the top-left corner, up to nb blocks at a time on
 * an anti-diagonal.
 *
 * A job per block (pool_job_t): pool_job_init, pool_job_after for the edges
 * above and on the left, pool_job_start; the blocks start running while the
 * graph is still being built. Every block comes before the last one, so
 * waiting for the last one (pool_job_wait) waits for them all.
 *
 * Memory: a block needs only the last row of the block above and the last
 * column of the block on its left, so those are all that is kept (the
 * whole matrix, written block by block, would cost more in cache misses
 * than the blocks' work).
 *
 *   usage: wavefront [n [bs [workers]]]
 *     n        letters in each string, 1..100000 (default 5000)
 *     bs       block side, 1..min(n, 4096) (default 100)
 *     workers  0 = the default pool, one worker per CPU (default)
 *
 * Exits 0 only if the job version's block edges (the last row of every
 * block row, the last column of every block column) equal the sequential
 * version's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wspool.h>

enum { MAX_BS = 4096 };

typedef struct {
  int n, bs, nb; /* letters, block side, blocks per side */
  const char *a, *b;
  /* rows[k * (n + 1) + j]: D[i][j] for the last row i of block row k - 1
   * (k = 0: the top border, i = 0); cols[k * (n + 1) + i]: D[i][j] for the
   * last column j of block column k - 1 (k = 0: the left border). */
  int *rows, *cols;
} grid;

static int min3(int x, int y, int z) {
  int m = x < y ? x : y;
  return m < z ? m : z;
}

/* The sequential version: the plain double loop, one row at a time in
 * row[0..n]. It keeps the lines the blocks keep (ref's rows and cols), to
 * check the job version's. Returns D[n][n]. */
static int sequential(const grid *ref, int *row) {
  const int n = ref->n, bs = ref->bs;
  const size_t ld = (size_t)n + 1;
  for (int j = 0; j <= n; j++) row[j] = j; /* D[0][j] */
  for (int k = 0; k <= ref->nb; k++) ref->cols[(size_t)k * ld] = k * bs < n ? k * bs : n;
  memcpy(ref->rows, row, ld * sizeof(int));
  for (int i = 1; i <= n; i++) {
    const char ai = ref->a[i - 1];
    int diag = row[0]; /* D[i-1][j-1] */
    row[0] = i;        /* D[i][0] */
    for (int j = 1; j <= n; j++) {
      int up = row[j];
      row[j] = min3(up + 1, row[j - 1] + 1, diag + (ai != ref->b[j - 1]));
      diag = up;
    }
    for (int k = 0; k <= ref->nb; k++) /* the last column of each block column */
      ref->cols[(size_t)k * ld + (size_t)i] = row[k * bs < n ? k * bs : n];
    if (i % bs == 0 || i == n) /* the last row of a block row */
      memcpy(ref->rows + (size_t)((i + bs - 1) / bs) * ld, row, ld * sizeof(int));
  }
  return row[n];
}

/* Block (bi, bj): the same loop over its cells, from the row above it and
 * the column on its left; leaves its last row and last column. */
static void block_cells(const grid *g, int bi, int bj) {
  const size_t ld = (size_t)g->n + 1;
  const int i0 = bi * g->bs + 1, i1 = i0 + g->bs - 1 < g->n ? i0 + g->bs - 1 : g->n;
  const int j0 = bj * g->bs + 1, j1 = j0 + g->bs - 1 < g->n ? j0 + g->bs - 1 : g->n;
  const int w = j1 - j0 + 1;
  const int *left = g->cols + (size_t)bj * ld;
  int *right = g->cols + (size_t)(bj + 1) * ld;
  int row[MAX_BS + 1]; /* row[k]: D[i][j0 - 1 + k] */
  memcpy(row, g->rows + (size_t)bi * ld + j0 - 1, ((size_t)w + 1) * sizeof(int));
  for (int i = i0; i <= i1; i++) {
    const char ai = g->a[i - 1], *b = g->b + j0 - 2; /* b[k]: the letter of column j0 - 1 + k */
    int diag = row[0];
    row[0] = left[i];
    for (int k = 1; k <= w; k++) {
      int up = row[k];
      row[k] = min3(up + 1, row[k - 1] + 1, diag + (ai != b[k]));
      diag = up;
    }
    right[i] = row[w];
  }
  memcpy(g->rows + (size_t)(bi + 1) * ld + j0, row + 1, (size_t)w * sizeof(int));
}

/* The borders: D[0][j] = j along the top, D[i][0] = i down the left, and
 * the first cell of every row and column line. */
static void borders(const grid *g) {
  const size_t ld = (size_t)g->n + 1;
  for (int k = 0; k <= g->n; k++) g->rows[k] = g->cols[k] = k;
  for (int k = 1; k <= g->nb; k++) {
    int edge = k * g->bs < g->n ? k * g->bs : g->n;
    g->rows[(size_t)k * ld] = edge; /* D[edge][0] */
    g->cols[(size_t)k * ld] = edge; /* D[0][edge] */
  }
}

/* A block and its job. */
typedef struct {
  pool_job_t job;
  const grid *g;
  int bi, bj;
} block;

static void block_fn(void *arg) {
  const block *k = arg;
  block_cells(k->g, k->bi, k->bj);
}

/* The job version: a job per block, each after the one above it and the
 * one on its left. Returns pool_job_wait's status, or the first error. */
static int with_jobs(pool_t *pool, const grid *g, block *blocks) {
  const int nb = g->nb;
  borders(g);
  for (int bi = 0; bi < nb; bi++)
    for (int bj = 0; bj < nb; bj++) {
      block *k = &blocks[bi * nb + bj];
      k->g = g;
      k->bi = bi;
      k->bj = bj;
      int rc = pool_job_init(&k->job, pool, block_fn, k);
      if (!rc && bi > 0) rc = pool_job_after(&k->job, &k[-nb].job); /* above */
      if (!rc && bj > 0) rc = pool_job_after(&k->job, &k[-1].job);  /* on the left */
      if (!rc) rc = pool_job_start(&k->job);
      /* The jobs started so far may still be running: a real program would
       * cancel and wait for them before freeing; this one exits. */
      if (rc) return rc;
    }
  /* The last block comes after every other one (through its edges), so
   * once it is complete they all are, and their storage is free. */
  return pool_job_wait(&blocks[nb * nb - 1].job);
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
  long n = 5000, bs = 100, workers = 0;
  if (argc > 4 || (argc > 1 && parse(argv[1], 1, 100000, &n)) ||
      (argc > 2 && parse(argv[2], 1, n < MAX_BS ? n : MAX_BS, &bs)) ||
      (argc > 3 && parse(argv[3], 0, POOL_MAX_THREADS, &workers))) {
    fprintf(stderr,
            "usage: %s [n (1..100000) [bs (1..min(n, %d)) [workers (0..%u, 0 = all CPUs)]]]\n",
            argv[0], MAX_BS, POOL_MAX_THREADS);
    return 1;
  }

  /* Two strings over "ACGT": b is a with about one letter in ten changed. */
  char *a = malloc((size_t)n), *b = malloc((size_t)n);
  unsigned long long x = 12345;
  for (long i = 0; a && b && i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    a[i] = "ACGT"[x >> 62];
    b[i] = (x >> 40) % 10 == 0 ? "ACGT"[(x >> 20) & 3] : a[i];
  }
  const int nb = (int)((n + bs - 1) / bs);
  const size_t ld = (size_t)n + 1, lines = ((size_t)nb + 1) * ld;
  grid g = {(int)n, (int)bs, nb, a, b, malloc(lines * sizeof(int)), malloc(lines * sizeof(int))};
  grid ref = g;
  ref.rows = malloc(lines * sizeof(int));
  ref.cols = malloc(lines * sizeof(int));
  int *row = malloc(ld * sizeof(int));
  block *blocks = malloc((size_t)nb * (size_t)nb * sizeof(block));
  if (!a || !b || !g.rows || !g.cols || !ref.rows || !ref.cols || !row || !blocks) {
    fprintf(stderr, "wavefront: out of memory\n");
    return 1;
  }

  /* The process-wide default pool (one worker per CPU), or a pool of our own. */
  pool_t *pool = NULL;
  if (workers == 0) {
    pool = pool_default();
    if (!pool) {
      fprintf(stderr, "wavefront: cannot create the default pool\n");
      return 1;
    }
  } else {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "wavefront: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  /* Each version three times; the fastest run is printed (the first one
   * pays for page faults and thread wake-ups). */
  double t_seq = 1e30, t_par = 1e30;
  int dist = 0, rc = 0;
  for (int r = 0; r < 3 && !rc; r++) {
    double t0 = now();
    dist = sequential(&ref, row);
    double t1 = now();
    rc = with_jobs(pool, &g, blocks);
    double t2 = now();
    if (t1 - t0 < t_seq) t_seq = t1 - t0;
    if (t2 - t1 < t_par) t_par = t2 - t1;
  }
  if (rc) {
    fprintf(stderr, "wavefront: %s\n", pool_strerror(rc));
    return 1;
  }

  /* Every line the blocks left: the last row of every block row and the
   * last column of every block column. */
  int ok = memcmp(ref.rows, g.rows, lines * sizeof(int)) == 0 &&
           memcmp(ref.cols, g.cols, lines * sizeof(int)) == 0;
  printf("edit distance of two strings of %ld letters: %d\n", n, dist);
  printf("  sequential:  %8.3f ms\n", 1e3 * t_seq);
  printf("  jobs:        %8.3f ms on %u workers, %d x %d blocks of %ld x %ld cells "
         "(speedup %.2fx): %s\n",
         1e3 * t_par, pool_threads(pool), nb, nb, bs, bs, t_seq / t_par,
         ok ? "same block edges" : "DIFFERENT RESULT");

  if (workers != 0 && (rc = pool_destroy(pool)) != 0) {
    fprintf(stderr, "wavefront: pool_destroy: %s\n", pool_strerror(rc));
    ok = 0;
  }
  free(blocks);
  free(row);
  free(g.rows);
  free(g.cols);
  free(ref.rows);
  free(ref.cols);
  free(a);
  free(b);
  return ok ? 0 : 1;
}
