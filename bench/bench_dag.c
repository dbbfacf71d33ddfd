/* SPDX-License-Identifier: MIT */
/* bench_dag: a dependency graph of jobs (pool_job_t) against OpenMP's
 * `depend` tasks, on a 2-D wavefront.
 *
 * The kernel (bench_dag.h): Smith-Waterman local alignment with affine gaps
 * of two seeded random DNA sequences of WSPOOL_BENCH_DAG_N letters (default
 * 8192: 6.7 * 10^7 cells, about 0.2 s sequential here), in blocks of
 * WSPOOL_BENCH_DAG_BS x WSPOOL_BENCH_DAG_BS cells (default 64: 128 x 128 =
 * 16384 blocks of about 13 us each). Block (i, j) depends on (i-1, j) and
 * (i, j-1).
 *
 * Rows (the table lists them so that each target's pair runs back to back),
 * each checked against the sequential program's answer (the best score and
 * a hash of the matrix's last row); a wrong answer exits 1:
 *   sequential (plain loop)   the double loop over the whole matrix, one
 *                             row of H and F: the baseline Ts
 *   sequential (blocks)       every block in row-major order, no runtime:
 *                             what blocking alone costs
 *   wspool jobs T1 / T2       a job per block on a pool of 1 / 2 workers:
 *                             main inits each block's job, puts it after
 *                             (i-1, j) and (i, j-1) (pool_job_after) and
 *                             starts it, in row-major order (the blocks run
 *                             meanwhile), then waits on the last block
 *   OpenMP depend libgomp     `omp parallel` + `single` creating a task per
 *     1 / 2 thr               block, depend(in: up, left) depend(out: self)
 *                             in row-major order (bench_dag_omp.c, by gcc)
 *   OpenMP depend libomp      the same source built by clang -fopenmp into
 *     1 / 2 thr               bench_dag_libomp, run as a subprocess (libgomp
 *                             and libomp cannot share a process); each run
 *                             is a fresh process that makes one untimed run
 *                             and then the timed one, and prints its time
 *                             and answer. "unavailable" when it was not
 *                             built (no clang or no libomp at configure
 *                             time) or cannot be found.
 * Every variant runs the same block kernel, the C compiler's, from one
 * static library (the libomp executable links it too); the timed region of
 * every parallel row is the whole graph: creation, execution and the wait.
 *
 * Targets (issue 29), on paired ratios: wspool on 2 workers at least 1.8x
 * the sequential program; wspool faster than both OpenMP runtimes' depend
 * version at 1 and at 2 threads.
 *
 * Environment: WSPOOL_BENCH_DAG_N, WSPOOL_BENCH_DAG_BS,
 * WSPOOL_BENCH_DAG_LIBOMP (the libomp executable; default: bench_dag_libomp
 * beside this program), WSPOOL_BENCH_RUNS, WSPOOL_BENCH_BUDGET. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_dag.h"

#ifdef BENCH_DAG_KERNEL
/* ---- the kernel: the static library every variant links ---------------- */

#define NEG (INT32_MIN / 4) /* minus infinity of E and F, safe to subtract from */

static inline int32_t max32(int32_t x, int32_t y) { return x > y ? x : y; }

/* The substitution scores, looked up (a compare compiles to a branch that
 * random letters mispredict a quarter of the time). */
static const int32_t SUB[4][4] = {
    {DAG_MATCH, DAG_MISMATCH, DAG_MISMATCH, DAG_MISMATCH},
    {DAG_MISMATCH, DAG_MATCH, DAG_MISMATCH, DAG_MISMATCH},
    {DAG_MISMATCH, DAG_MISMATCH, DAG_MATCH, DAG_MISMATCH},
    {DAG_MISMATCH, DAG_MISMATCH, DAG_MISMATCH, DAG_MATCH},
};

/* Cells j0..j1 of row i (letter ai), updating h[] and f[] (row i-1 in, row
 * i out) in place: the one inner loop of both the plain loop and the
 * blocks. diag: H[i-1][j0-1]; *hleft, *e: H and E of [i][j0-1] in, of
 * [i][j1] out. */
static inline __attribute__((always_inline)) void
dag_row(int32_t *restrict h, int32_t *restrict f, const uint8_t *restrict b, int j0, int j1,
        uint8_t ai, int32_t diag, int32_t *hleft, int32_t *e, int32_t *best) {
  int32_t hl = *hleft, ev = *e, bst = *best;
  const int32_t *sub = SUB[ai];
  for (int j = j0; j <= j1; j++) {
    int32_t up = h[j];
    int32_t fv = max32(f[j] - DAG_GAP_EXT, up - DAG_GAP_OPEN);
    ev = max32(ev - DAG_GAP_EXT, hl - DAG_GAP_OPEN);
    int32_t hv = diag + sub[b[j]];
    hv = max32(max32(max32(hv, 0), fv), ev); /* ev last: the row's chain is short */
    f[j] = fv;
    h[j] = hv;
    diag = up;
    hl = hv;
    bst = max32(bst, hv);
  }
  *hleft = hl;
  *e = ev;
  *best = bst;
}

int dag_init(dag_problem *p, int n, int bs) {
  memset(p, 0, sizeof *p);
  p->n = n;
  p->bs = bs;
  p->nb = (n + bs - 1) / bs;
  size_t line = (size_t)n + 1, lines = (size_t)p->nb + 1;
  p->a = malloc(line);
  p->b = malloc(line);
  p->hrow = malloc(lines * line * sizeof(int32_t));
  p->frow = malloc(lines * line * sizeof(int32_t));
  p->hcol = malloc(lines * line * sizeof(int32_t));
  p->ecol = malloc(lines * line * sizeof(int32_t));
  p->bmax = malloc((size_t)p->nb * (size_t)p->nb * sizeof(int32_t));
  if (!p->a || !p->b || !p->hrow || !p->frow || !p->hcol || !p->ecol || !p->bmax) {
    dag_free(p);
    return -1;
  }
  /* Two random DNA sequences (xorshift64, fixed seed). */
  uint64_t x = 0x5EED0DA6ull;
  for (int s = 0; s < 2; s++) {
    uint8_t *q = s ? p->b : p->a;
    q[0] = 0;
    for (int i = 1; i <= n; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      q[i] = (uint8_t)(x >> 33 & 3);
    }
  }
  /* Every line once, so no variant's first run pays the page faults. */
  memset(p->hrow, 0, lines * line * sizeof(int32_t));
  memset(p->frow, 0, lines * line * sizeof(int32_t));
  memset(p->hcol, 0, lines * line * sizeof(int32_t));
  memset(p->ecol, 0, lines * line * sizeof(int32_t));
  dag_reset(p);
  return 0;
}

void dag_free(dag_problem *p) {
  free(p->a);
  free(p->b);
  free(p->hrow);
  free(p->frow);
  free(p->hcol);
  free(p->ecol);
  free(p->bmax);
  memset(p, 0, sizeof *p);
}

void dag_reset(dag_problem *p) {
  size_t line = (size_t)p->n + 1;
  for (size_t j = 0; j < line; j++) {
    p->hrow[j] = 0;
    p->frow[j] = NEG;
    p->hcol[j] = 0;
    p->ecol[j] = NEG;
  }
  /* Column 0 of every row line, row 0 of every column line: the border
   * H = 0 (read as the corner of the blocks on the left / top edge). */
  for (int k = 0; k <= p->nb; k++) {
    p->hrow[(size_t)k * line] = 0;
    p->hcol[(size_t)k * line] = 0;
  }
  memset(p->bmax, 0xff, (size_t)p->nb * (size_t)p->nb * sizeof(int32_t)); /* -1: not run */
}

void dag_block(dag_problem *p, int bi, int bj) {
  const int n = p->n, bs = p->bs;
  const size_t line = (size_t)n + 1;
  const int i0 = bi * bs + 1, i1 = (bi + 1) * bs < n ? (bi + 1) * bs : n;
  const int j0 = bj * bs + 1, j1 = (bj + 1) * bs < n ? (bj + 1) * bs : n;
  const int32_t *hin = p->hrow + (size_t)bi * line, *fin = p->frow + (size_t)bi * line;
  int32_t *h = p->hrow + (size_t)(bi + 1) * line, *f = p->frow + (size_t)(bi + 1) * line;
  const int32_t *hl = p->hcol + (size_t)bj * line, *el = p->ecol + (size_t)bj * line;
  int32_t *hr = p->hcol + (size_t)(bj + 1) * line, *er = p->ecol + (size_t)(bj + 1) * line;
  /* The block's row of H and F starts as the row above it, then is updated
   * in place row by row: it ends as the block's bottom row. */
  memcpy(h + j0, hin + j0, (size_t)(j1 - j0 + 1) * sizeof(int32_t));
  memcpy(f + j0, fin + j0, (size_t)(j1 - j0 + 1) * sizeof(int32_t));
  int32_t diag = hin[j0 - 1], best = 0;
  for (int i = i0; i <= i1; i++) {
    int32_t hleft = hl[i], e = el[i];
    dag_row(h, f, p->b, j0, j1, p->a[i], diag, &hleft, &e, &best);
    hr[i] = hleft;
    er[i] = e;
    diag = hl[i];
  }
  p->bmax[(size_t)bi * (size_t)p->nb + (size_t)bj] = best;
}

static uint64_t hash_row(const int32_t *h, const int32_t *f, int n) {
  uint64_t x = 0xcbf29ce484222325ull;
  for (int j = 1; j <= n; j++) {
    x = (x ^ (uint32_t)h[j]) * 0x100000001b3ull;
    x = (x ^ (uint32_t)f[j]) * 0x100000001b3ull;
  }
  return x;
}

dag_answer dag_answer_of(const dag_problem *p) {
  dag_answer r = {0, 0};
  size_t nbl = (size_t)p->nb * (size_t)p->nb;
  for (size_t k = 0; k < nbl; k++) {
    if (p->bmax[k] < 0) { /* a block did not run */
      r.best = -1;
      return r;
    }
    r.best = max32(r.best, p->bmax[k]);
  }
  size_t line = (size_t)p->n + 1;
  r.hash = hash_row(p->hrow + (size_t)p->nb * line, p->frow + (size_t)p->nb * line, p->n);
  return r;
}

dag_answer dag_sequential(const dag_problem *p, int32_t *h, int32_t *f) {
  const int n = p->n;
  for (int j = 0; j <= n; j++) {
    h[j] = 0;
    f[j] = NEG;
  }
  int32_t best = 0;
  for (int i = 1; i <= n; i++) {
    int32_t hleft = 0, e = NEG;
    dag_row(h, f, p->b, 1, n, p->a[i], 0, &hleft, &e, &best);
  }
  dag_answer r = {best, hash_row(h, f, n)};
  return r;
}

void dag_blocked_sequential(dag_problem *p) {
  for (int bi = 0; bi < p->nb; bi++)
    for (int bj = 0; bj < p->nb; bj++) dag_block(p, bi, bj);
}

#else /* !BENCH_DAG_KERNEL */
/* ---- the benchmark ------------------------------------------------------ */

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wspool.h>

#include "benchutil.h"
#include "peers.h"

/* The OpenMP this program links: gcc's libgomp (clang's libomp when the C
 * compiler is clang; then the subprocess rows are not built). */
#ifdef __clang__
#define INPROC_OMP "libomp in-process"
#else
#define INPROC_OMP "libgomp"
#endif

static dag_problem prob;
static dag_answer ref;      /* the sequential program's */
static int32_t *seq_h, *seq_f;
static pool_job_t *jobs;    /* nb * nb, the caller's storage, reused */
static char libomp_exe[4096];
static const char *libomp_why = "";

static void check(const char *who, dag_answer got) {
  if (got.best != ref.best || got.hash != ref.hash)
    bench_fail("%s: best %d hash %016llx, expected best %d hash %016llx", who, (int)got.best,
               (unsigned long long)got.hash, (int)ref.best, (unsigned long long)ref.hash);
}

static double run_seq(bench_variant *v) {
  double t0 = bench_now();
  dag_answer r = dag_sequential(&prob, seq_h, seq_f);
  double t = bench_now() - t0;
  check(v->name, r);
  return t;
}

static double run_blocked(bench_variant *v) {
  dag_reset(&prob);
  double t0 = bench_now();
  dag_blocked_sequential(&prob);
  double t = bench_now() - t0;
  check(v->name, dag_answer_of(&prob));
  return t;
}

/* A job's argument is its block's index bi * nb + bj. */
static void block_job(void *arg) {
  size_t k = (size_t)(uintptr_t)arg;
  dag_block(&prob, (int)(k / (size_t)prob.nb), (int)(k % (size_t)prob.nb));
}

static double run_jobs(bench_variant *v) {
  pool_t *pool = v->ctx;
  const int nb = prob.nb;
  int rc = 0;
  dag_reset(&prob);
  double t0 = bench_now();
  for (int bi = 0; bi < nb && !rc; bi++)
    for (int bj = 0; bj < nb && !rc; bj++) {
      size_t k = (size_t)bi * (size_t)nb + (size_t)bj;
      pool_job_t *j = &jobs[k];
      rc = pool_job_init(j, pool, block_job, (void *)(uintptr_t)k);
      if (!rc && bi) rc = pool_job_after(j, j - nb);
      if (!rc && bj) rc = pool_job_after(j, j - 1);
      if (!rc) rc = pool_job_start(j);
    }
  double tb = bench_now();
  if (!rc) rc = pool_job_wait(&jobs[(size_t)nb * (size_t)nb - 1]);
  double t = bench_now() - t0;
  if (rc) {
    /* Jobs initialised and never started hold the rest of the graph, and
     * the next run would initialise jobs still running: stop here. */
    fprintf(stderr, "WRONG ANSWER: %s: %s\n", v->name, pool_strerror(rc));
    exit(1);
  }
  v->aux[v->nt] = tb - t0; /* creating the graph (main, while blocks ran) */
  check(v->name, dag_answer_of(&prob));
  return t;
}

#ifdef BENCH_HAVE_OPENMP
static double run_gomp(bench_variant *v) {
  dag_reset(&prob);
  double t = dag_omp_depend(&prob, (int)v->threads);
  check(v->name, dag_answer_of(&prob));
  return t;
}
#else
#define run_gomp NULL
#endif

/* One run of the libomp executable: it makes an untimed run and a timed
 * one, and prints "time <seconds> best <score> hash <hex>" for each. */
static double run_libomp(bench_variant *v) {
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "'%s' %d %d %u", libomp_exe, prob.n, prob.bs, v->threads);
  FILE *f = popen(cmd, "r");
  if (!f) {
    bench_fail("%s: cannot run %s", v->name, libomp_exe);
    return 0;
  }
  char buf[256];
  double t = -1;
  int best = -1;
  unsigned long long hash = 0;
  while (fgets(buf, sizeof buf, f)) {
    double tt;
    int bb;
    unsigned long long hh;
    if (sscanf(buf, "time %lf best %d hash %llx", &tt, &bb, &hh) == 3) {
      t = tt;
      best = bb;
      hash = hh;
    }
  }
  int st = pclose(f);
  if (st != 0 || t < 0) {
    bench_fail("%s: %s exited with status %d, printed no time", v->name, libomp_exe, st);
    return t < 0 ? 0 : t;
  }
  dag_answer r = {best, hash};
  check(v->name, r);
  return t;
}

/* The libomp executable: WSPOOL_BENCH_DAG_LIBOMP, else bench_dag_libomp
 * beside this program. 1 when it is there and runs. */
static int find_libomp(void) {
  const char *e = getenv("WSPOOL_BENCH_DAG_LIBOMP");
  if (e && *e) {
    snprintf(libomp_exe, sizeof libomp_exe, "%s", e);
  } else {
    char self[sizeof libomp_exe - 32];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) {
      libomp_why = "cannot find this program's directory";
      return 0;
    }
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (slash) slash[1] = 0;
    snprintf(libomp_exe, sizeof libomp_exe, "%sbench_dag_libomp", self);
  }
  if (access(libomp_exe, X_OK) != 0) {
    libomp_why = "bench_dag_libomp not built: it needs clang -fopenmp and libomp at configure "
                 "time, peers not disabled, a native build without sanitizers, LTO or coverage";
    return 0;
  }
  return 1;
}

/* Of the rows a and b, the paired ratio a/b ("how many times b is faster"),
 * or the ratio of the medians when they share no round. */
static double paired(const bench_variant *a, const bench_variant *b) {
  double r = bench_paired_ratio(a, b);
  return r > 0 ? r : a->med / b->med;
}

static void target_faster(const char *peer_name, const char *what, bench_variant *ws,
                          bench_variant *peer) {
  if (!peer) {
    bench_target(what, -1, "%s unavailable", peer_name);
    return;
  }
  double r = paired(peer, ws);
  bench_target(what, r > 1.0, "%s / wspool = %.2f paired, %.2f of medians (%.1f vs %.1f ms)",
               peer_name, r, peer->med / ws->med, peer->med * 1e3, ws->med * 1e3);
}

int main(void) {
  int n = (int)bench_env_long("WSPOOL_BENCH_DAG_N", 8192, 64, 1 << 16);
  int bs = (int)bench_env_long("WSPOOL_BENCH_DAG_BS", 64, 4, 1 << 16);
  if (dag_init(&prob, n, bs) != 0) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  const int nb = prob.nb;
  char what[300];
  snprintf(what, sizeof what,
           "Smith-Waterman wavefront, %d x %d cells in blocks of %d x %d (%d x %d = %d jobs)", n, n,
           bs, bs, nb, nb, nb * nb);
  bench_header("bench_dag", what);
  int have_libomp = find_libomp();
  printf("   libomp peer: %s\n", have_libomp ? libomp_exe : libomp_why);

  seq_h = malloc(((size_t)n + 1) * sizeof(int32_t));
  seq_f = malloc(((size_t)n + 1) * sizeof(int32_t));
  jobs = calloc((size_t)nb * (size_t)nb, sizeof(pool_job_t));
  if (!seq_h || !seq_f || !jobs) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  ref = dag_sequential(&prob, seq_h, seq_f);
  printf("   answer: best local score %d, last-row hash %016llx\n", (int)ref.best,
         (unsigned long long)ref.hash);
  fflush(stdout);

  pool_t *pools[2] = {bench_pool(1, BENCH_DEFAULT), bench_pool(2, BENCH_DEFAULT)};
  /* In this order so that the rows each target compares run next to each
   * other in a round (one apart at most): the paired ratios then compare
   * runs made moments apart (this VM's speed drifts by tens of percent
   * over seconds). The first sequential row is the table's baseline. */
  bench_variant v[] = {
      BENCH_PEER_ROW("OpenMP depend " INPROC_OMP " 1 thr", 1, HAVE_OMP, run_gomp, 0),
      BENCH_WSPOOL_ROW("wspool jobs T1", 1, run_jobs, pools[0], 0),
      BENCH_PEER_ROW("OpenMP depend libomp 1 thr", 1, have_libomp, run_libomp, 0),
      BENCH_SEQ_ROW("sequential (plain loop)", run_seq),
      BENCH_PEER_ROW("OpenMP depend " INPROC_OMP " 2 thr", 2, HAVE_OMP, run_gomp, 0),
      BENCH_WSPOOL_ROW("wspool jobs T2", 2, run_jobs, pools[1], 0),
      BENCH_PEER_ROW("OpenMP depend libomp 2 thr", 2, have_libomp, run_libomp, 0),
      BENCH_SEQ_ROW("sequential (blocks)", run_blocked),
  };
  int nv = BENCH_COUNT(v);
  bench_measure(v, nv, bench_runs(), bench_budget());
  bench_table(v, nv);

  bench_variant *ts = bench_find(v, nv, "sequential (plain loop)");
  bench_variant *tb = bench_find(v, nv, "sequential (blocks)");
  bench_variant *w1 = bench_find(v, nv, "wspool jobs T1");
  bench_variant *w2 = bench_find(v, nv, "wspool jobs T2");
  bench_variant *g1 = bench_find(v, nv, "OpenMP depend " INPROC_OMP " 1 thr");
  bench_variant *g2 = bench_find(v, nv, "OpenMP depend " INPROC_OMP " 2 thr");
  bench_variant *l1 = bench_find(v, nv, "OpenMP depend libomp 1 thr");
  bench_variant *l2 = bench_find(v, nv, "OpenMP depend libomp 2 thr");
  if (bench_exit_status()) return 1; /* a row failed: its figures mean nothing */

  printf("ratios (medians):\n");
  printf("  %-18s blocks / plain loop = %.3f\n", "blocking alone", tb->med / ts->med);
  bench_ratio_pair(v, nv, ts, "wspool jobs");
  bench_ratio_line("OpenMP " INPROC_OMP, ts, g1, g2, "built without OpenMP");
  bench_ratio_line("OpenMP libomp", ts, l1, l2, libomp_why);
  printf("  creating the graph (init + after + start from main, while blocks run): "
         "T1 %.2f ms, T2 %.2f ms (medians), %.0f ns per job on T2\n",
         w1->aux_med * 1e3, w2->aux_med * 1e3, w2->aux_med * 1e9 / ((double)nb * nb));
  printf("  one block takes %.2f us (the blocks in order, median)\n",
         tb->med * 1e6 / ((double)nb * nb));

  double sp = paired(ts, w2);
  bench_target("wspool 2 workers >= 1.8x the sequential program", sp >= 1.8,
               "Ts / T2 = %.3f paired, %.3f of medians", sp, ts->med / w2->med);
  target_faster(INPROC_OMP, "wspool faster than OpenMP depend (" INPROC_OMP "), 1 thread", w1, g1);
  target_faster(INPROC_OMP, "wspool faster than OpenMP depend (" INPROC_OMP "), 2 threads", w2, g2);
  target_faster("libomp", "wspool faster than OpenMP depend (libomp), 1 thread", w1, l1);
  target_faster("libomp", "wspool faster than OpenMP depend (libomp), 2 threads", w2, l2);

  pool_destroy(pools[0]);
  pool_destroy(pools[1]);
  free(jobs);
  free(seq_h);
  free(seq_f);
  dag_free(&prob);
  return bench_finish();
}
#endif /* BENCH_DAG_KERNEL */
