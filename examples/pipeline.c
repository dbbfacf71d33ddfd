/* SPDX-License-Identifier: MIT */
/* pipeline: a bounded pipeline of jobs over a stream of items.
 *
 * Each item goes through three stages: decode (make the item's data: here
 * generated from its index), transform (work on the data), write (fold it
 * into one output checksum, in item order). Each stage of each item is a
 * job (pool_job_t) with two predecessors:
 *
 *     stage k of item i  after  stage k - 1 of item i   (its input)
 *                        after  stage k of item i - 1   (stages keep order)
 *
 * so items flow through the stages concurrently (decode of item 5 while
 * item 4 transforms and item 3 is written), each stage handles its items
 * one at a time and in order (a decoder or a writer with state needs no
 * lock), and the writes happen in order.
 *
 * At most `window` items are in flight: their jobs and buffers live in
 * `window` slots, and before item i reuses the slot of item i - window,
 * main waits for that item's write job (pool_job_wait), which completes
 * after its other two stages did.
 *
 *   usage: pipeline [items [window [workers]]]
 *     items    1..10^7 (default 20000)
 *     window   1..4096 items in flight (default 16)
 *     workers  0 = the default pool, one worker per CPU (default)
 *
 * Exits 0 only if the checksum equals the sequential computation's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <wspool.h>

enum { WORDS = 4096 }; /* the data of one item */

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* The three stages, on one item's buffer. */
static void decode(uint64_t item, uint64_t *buf) {
  for (int k = 0; k < WORDS; k++) buf[k] = mix(item * WORDS + (uint64_t)k);
}
static void transform(uint64_t *buf) {
  for (int k = 0; k < WORDS; k++) buf[k] = mix(buf[k] ^ (buf[k] >> 17)) % 1000003;
}
static uint64_t write_out(uint64_t checksum, const uint64_t *buf) {
  for (int k = 0; k < WORDS; k++) checksum = mix(checksum + buf[k]); /* order matters */
  return checksum;
}

/* A slot: the jobs and the buffer of the item in flight in it. */
typedef struct slot {
  pool_job_t decode, transform, write;
  uint64_t item;
  uint64_t buf[WORDS];
} slot;

static uint64_t checksum; /* only the write stage touches it: one at a time */

static void decode_job(void *arg) {
  slot *s = arg;
  decode(s->item, s->buf);
}
static void transform_job(void *arg) { transform(((slot *)arg)->buf); }
static void write_job(void *arg) { checksum = write_out(checksum, ((slot *)arg)->buf); }

/* Runs the pipeline over `items` items with `window` slots; 0 or the first
 * error (a stage's failure, pool_fail(), would be the status of every job
 * after it, so the last write reports it). */
static int run(pool_t *pool, long items, long window) {
  slot *slots = calloc((size_t)window, sizeof *slots);
  if (!slots) return ENOMEM;
  int rc = 0;
  long n = 0; /* items started */
  for (slot *prev = NULL; n < items; n++) {
    slot *s = &slots[n % window];
    if (n >= window && (rc = pool_job_wait(&s->write)) != 0) break; /* item n - window */
    s->item = (uint64_t)n;
    if ((rc = pool_job_init(&s->decode, pool, decode_job, s)) != 0 ||
        (rc = pool_job_init(&s->transform, pool, transform_job, s)) != 0 ||
        (rc = pool_job_init(&s->write, pool, write_job, s)) != 0)
      break; /* (no pool: the jobs initialised here hold nothing back) */
    /* Two predecessors each, which a job holds without memory: these
     * cannot fail. */
    pool_job_after(&s->transform, &s->decode);
    pool_job_after(&s->write, &s->transform);
    if (prev) {
      pool_job_after(&s->decode, &prev->decode);
      pool_job_after(&s->transform, &prev->transform);
      pool_job_after(&s->write, &prev->write);
    }
    pool_job_start(&s->write); /* runs once its predecessors completed */
    pool_job_start(&s->transform);
    pool_job_start(&s->decode);
    prev = s;
  }
  /* The items still in flight. */
  for (long i = n > window ? n - window : 0; i < n; i++) {
    int r = pool_job_wait(&slots[i % window].write);
    if (rc == 0) rc = r;
  }
  free(slots);
  return rc;
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
  long items = 20000, window = 16, workers = 0;
  if (argc > 4 || (argc > 1 && parse(argv[1], 1, 10000000, &items)) ||
      (argc > 2 && parse(argv[2], 1, 4096, &window)) ||
      (argc > 3 && parse(argv[3], 0, POOL_MAX_THREADS, &workers))) {
    fprintf(stderr, "usage: %s [items (1..10^7) [window (1..4096) [workers (0..%u)]]]\n", argv[0],
            POOL_MAX_THREADS);
    return 1;
  }
  pool_t *pool = NULL; /* NULL: the default pool */
  if (workers) {
    pool_config_t cfg;
    pool_config_default(&cfg);
    cfg.threads = (unsigned)workers;
    int rc = pool_create(&pool, &cfg);
    if (rc) {
      fprintf(stderr, "pipeline: pool_create: %s\n", pool_strerror(rc));
      return 1;
    }
  }

  /* The sequential baseline: the same stages, item after item. */
  static uint64_t buf[WORDS];
  double t0 = now();
  uint64_t want = 0;
  for (long i = 0; i < items; i++) {
    decode((uint64_t)i, buf);
    transform(buf);
    want = write_out(want, buf);
  }
  double t_seq = now() - t0;

  t0 = now();
  int rc = run(pool, items, window);
  double t_par = now() - t0;
  int ok = rc == 0 && checksum == want;
  printf("%ld items, %ld in flight, on %u workers: checksum %016llx, %.3f ms; sequential "
         "%016llx, %.3f ms (speedup %.2fx): %s\n",
         items, window, pool_threads(pool), (unsigned long long)checksum, 1e3 * t_par,
         (unsigned long long)want, 1e3 * t_seq, t_seq / t_par, ok ? "ok" : "WRONG");
  if (rc) fprintf(stderr, "pipeline: %s\n", pool_strerror(rc));
  if (pool && pool_destroy(pool) != 0) ok = 0;
  return ok ? 0 : 1;
}
