/* SPDX-License-Identifier: MIT */
/* The x86-64 trampolines between the header's inline fork/join paths and
 * the library (wspool/inline.h, runtime/tramp.S):
 *  1. each preserves every general register but rax, returns the library's
 *     result in eax, and leaves the caller's red zone alone;
 *  2. a backtrace taken inside a task that the library runs from a slow
 *     pool_sync() gets through the trampoline into the caller and past it
 *     (the trampoline's unwind information);
 *  3. the inline paths, with the trampolines under them, give the exact
 *     result of a recursion whose spawns mostly leave the fast path
 *     (spawned from a thread outside the pool);
 *  4. on a CPU with AVX-512, zmm16-31 and k1-7 survive a trampoline call
 *     whose library code runs a task that overwrites them (the header
 *     cannot name them in its clobber list: runtime/tramp.S).
 * Cases: registers, unwind, outside_fib, avx512 (skipped without AVX-512).
 * Skipped (77) where the header uses no trampolines (other targets, builds
 * without optimisation). */
#include <execinfo.h>
#include <stdatomic.h>
#include <stdint.h>
#include <wspool.h>

#include "check.h"
#include "testutil.h"

#ifndef POOL__CLOBBERS
#define NO_TRAMPOLINES "no trampolines in this build (not x86-64, or no inline paths)"
/* The same cases, each reported skipped. */
static void case_registers(void) {}
static void case_avx512(void) {}
static void case_unwind(void) {}
static void case_outside_fib(void) {}
#else
#define NO_TRAMPOLINES NULL

static void dummy_fn(void *arg) { (void)arg; }

/* in: rdi, rsi, rdx, rcx as the inline path passes them; out: rax and the
 * eight other caller-saved registers after the call; zone: three words of
 * the red zone after the call. */
struct regs {
  uint64_t in[4];
  uint64_t out[9];
  uint64_t zone[3];
};

#define PATTERN 0x5a5a5a5a5a5a5a5au

/* Sets every caller-saved general register to a known value, fills the red
 * zone with PATTERN, calls the trampoline with the header's own sequence
 * (POOL__TRAMP), and records what it finds afterwards. rbx holds the record (callee-saved, so
 * the call must keep it too). */
#define CALL_TRAMP(tramp, r)                              \
  __asm__ __volatile__("mov 0(%%rbx), %%rdi\n\t"          \
                       "mov 8(%%rbx), %%rsi\n\t"          \
                       "mov 16(%%rbx), %%rdx\n\t"         \
                       "mov 24(%%rbx), %%rcx\n\t"         \
                       "mov $0x0808080808080808, %%r8\n\t" \
                       "mov $0x0909090909090909, %%r9\n\t" \
                       "mov $0x1010101010101010, %%r10\n\t" \
                       "mov $0x1111111111111111, %%r11\n\t" \
                       "mov $0x5a5a5a5a5a5a5a5a, %%rax\n\t" \
                       "mov %%rax, -8(%%rsp)\n\t"         \
                       "mov %%rax, -64(%%rsp)\n\t"        \
                       "mov %%rax, -128(%%rsp)\n\t"       \
                       POOL__TRAMP(tramp) "\n\t"         \
                       "mov %%rax, 32(%%rbx)\n\t"         \
                       "mov %%rdi, 40(%%rbx)\n\t"         \
                       "mov %%rsi, 48(%%rbx)\n\t"         \
                       "mov %%rdx, 56(%%rbx)\n\t"         \
                       "mov %%rcx, 64(%%rbx)\n\t"         \
                       "mov %%r8, 72(%%rbx)\n\t"          \
                       "mov %%r9, 80(%%rbx)\n\t"          \
                       "mov %%r10, 88(%%rbx)\n\t"         \
                       "mov %%r11, 96(%%rbx)\n\t"         \
                       "mov -8(%%rsp), %%rax\n\t"         \
                       "mov %%rax, 104(%%rbx)\n\t"        \
                       "mov -64(%%rsp), %%rax\n\t"        \
                       "mov %%rax, 112(%%rbx)\n\t"        \
                       "mov -128(%%rsp), %%rax\n\t"       \
                       "mov %%rax, 120(%%rbx)\n\t"        \
                       :                                  \
                       : "b"(r)                           \
                       : "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11", POOL__CLOBBERS)

static void check_regs(const struct regs *r, int want) {
  CHECK_EQ((int)r->out[0], want); /* the library's answer, in eax */
  for (int i = 0; i < 4; i++) CHECK(r->out[1 + i] == r->in[i]);
  CHECK(r->out[5] == 0x0808080808080808u);
  CHECK(r->out[6] == 0x0909090909090909u);
  CHECK(r->out[7] == 0x1010101010101010u);
  CHECK(r->out[8] == 0x1111111111111111u);
  for (int i = 0; i < 3; i++) CHECK(r->zone[i] == PATTERN);
}

static atomic_int ran;
static void count_fn(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void case_registers(void) {
  _Static_assert(sizeof(struct regs) == 128, "offsets in CALL_TRAMP");
  /* Misuse: each entry point answers EINVAL at once (spawn with a NULL
   * task in rsi, sync and take of a NULL task in rdi). */
  struct regs r = {.in = {0x1234, 0, (uint64_t)(uintptr_t)dummy_fn, 0x4444444444444444u}};
  CALL_TRAMP(pool__spawn_tramp, &r);
  check_regs(&r, EINVAL);
  struct regs s = {.in = {0, 0x2222222222222222u, 0x3333333333333333u, 0x4444444444444444u}};
  CALL_TRAMP(pool__sync_tramp, &s);
  check_regs(&s, EINVAL);
  struct regs t = {.in = {0, 0x2222222222222222u, 0x3333333333333333u, 0x4444444444444444u}};
  CALL_TRAMP(pool__take_tramp, &t);
  check_regs(&t, EINVAL);

  /* Real work, from this outside thread: the spawn goes to the global queue
   * (a lock, a wake-up: system calls, which clobber rcx and r11), the sync
   * blocks until a worker ran it; then a take of a frame a worker may or may
   * not have started. Each round checks the registers again. */
  pool_t *p = make_pool(2);
  const int rounds = 200;
  int taken = 0;
  for (int i = 0; i < rounds; i++) {
    pool_task_t task;
    struct regs a = {.in = {(uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)&task,
                            (uint64_t)(uintptr_t)count_fn, (uint64_t)(uintptr_t)&ran}};
    CALL_TRAMP(pool__spawn_tramp, &a);
    check_regs(&a, 0);
    struct regs b = {.in = {(uint64_t)(uintptr_t)&task, 0x2222222222222222u,
                            0x3333333333333333u, 0x4444444444444444u}};
    if (i % 2)
      CALL_TRAMP(pool__take_tramp, &b);
    else
      CALL_TRAMP(pool__sync_tramp, &b);
    int rc = (int)b.out[0];
    if (i % 2 && rc == POOL_TAKEN) {
      b.out[0] = 0; /* handed back unstarted: the caller does the work */
      taken++;
    }
    check_regs(&b, 0);
  }
  CHECK_OK(pool_wait_idle(p));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(atomic_load(&ran) + taken, rounds);
}

/* 4. AVX-512 state across a trampoline. On a one-worker pool a task
 * spawns A then B and syncs A first: the library runs B (newer private
 * frames first) inside the trampoline call, and B overwrites zmm16-31 and
 * k1-7; the caller's values must be back afterwards. */
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw"), noinline))
AVX512_TARGET static void clobber_avx512(void *arg) {
  (void)arg;
  __asm__ __volatile__(".irp r,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
                       "vpxorq %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"
                       ".endr\n\t"
                       ".irp k,1,2,3,4,5,6,7\n\t"
                       "kxorq %%k\\k, %%k\\k, %%k\\k\n\t"
                       ".endr" ::: "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
                       "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30",
                       "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

typedef struct avx_out {
  uint64_t z[16]; /* lane 0 of zmm16-31 after the call */
  uint64_t k[7];  /* k1-7 after the call */
  int rc;
} avx_out;

/* Loads zmm16+i with 0x1010101010101010 * (i + 1) in every lane and k_j
 * with 0x0101010101010101 * j, calls pool__sync_tramp(task) with the
 * header's sequence, and records lane 0 of each and the masks. */
AVX512_TARGET static void sync_keeping_avx512(pool_task_t *task, avx_out *o) {
  __asm__ __volatile__(
      ".irp r,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
      "mov $(0x1010101010101010 * (\\r - 15)), %%rax\n\t"
      "vpbroadcastq %%rax, %%zmm\\r\n\t"
      ".endr\n\t"
      ".irp k,1,2,3,4,5,6,7\n\t"
      "mov $(0x0101010101010101 * \\k), %%rax\n\t"
      "kmovq %%rax, %%k\\k\n\t"
      ".endr\n\t"
      "mov %[task], %%rdi\n\t"
      POOL__TRAMP(pool__sync_tramp) "\n\t"
      "mov %%eax, %[rc]\n\t"
      ".irp r,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
      "vmovq %%xmm\\r, %%rax\n\t"
      "mov %%rax, (\\r - 16) * 8(%[z])\n\t"
      ".endr\n\t"
      ".irp k,1,2,3,4,5,6,7\n\t"
      "kmovq %%k\\k, %%rax\n\t"
      "mov %%rax, (\\k - 1) * 8(%[k])\n\t"
      ".endr"
      : [rc] "=m"(o->rc)
      : [task] "r"(task), [z] "r"(o->z), [k] "r"(o->k)
      : "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11", POOL__CLOBBERS, "xmm16",
        "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",
        "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7");
}

static void avx_root(void *arg) {
  avx_out *o = arg;
  pool_task_t a, b;
  CHECK_OK(pool_spawn(NULL, &a, dummy_fn, NULL));
  CHECK_OK(pool_spawn(NULL, &b, clobber_avx512, NULL));
  sync_keeping_avx512(&a, o); /* runs b, then a, inside the library */
  CHECK_OK(pool_sync(&b)); /* b already ran: done */
}

static void case_avx512(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
    TEST_SKIP("no AVX-512 here");
  pool_t *p = make_pool(1);
  avx_out o = {.rc = -1};
  pool_task_t root;
  CHECK_OK(pool_spawn(p, &root, avx_root, &o));
  CHECK_OK(pool_sync(&root));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(o.rc, 0);
  for (int i = 0; i < 16; i++) CHECK(o.z[i] == 0x1010101010101010u * (uint64_t)(i + 1));
  for (int j = 0; j < 7; j++) CHECK(o.k[j] == 0x0101010101010101u * (uint64_t)(j + 1));
}

/* 2. Unwinding. On a one-worker pool, a task spawns A (which takes the
 * backtrace) and then B, and syncs A first: A is not the newest frame, so
 * the sync leaves the fast path through the trampoline and the library runs
 * B and A there, on this stack. */
static void *trace_pc[64];
static int trace_n;
static int ran_b;

static void tracing_task(void *arg) {
  (void)arg;
  trace_n = backtrace(trace_pc, 64);
}

static void plain_task(void *arg) { *(int *)arg = 1; }

/* Spawns and syncs through the inline paths. */
__attribute__((noinline)) static int sync_caller(void) {
  pool_task_t a, b;
  int rc = pool_spawn(NULL, &a, tracing_task, NULL);
  if (rc) return rc;
  rc = pool_spawn(NULL, &b, plain_task, &ran_b);
  if (rc) return rc;
  rc = pool_sync(&a);
  int rc2 = pool_sync(&b);
  return rc ? rc : rc2;
}

static int caller_rc = -1;

__attribute__((noinline)) static void outer(void *arg) {
  (void)arg;
  caller_rc = sync_caller();
  __asm__ __volatile__("" ::: "memory"); /* not a tail call */
}

/* Which of the functions listed holds pc: the one starting last at or
 * below it (each list entry is a function of this file). */
typedef void (*any_fn)(void);
static int holder(void *pc, const any_fn *fns, int n) {
  int best = -1;
  for (int i = 0; i < n; i++)
    if ((uintptr_t)fns[i] < (uintptr_t)pc &&
        (best < 0 || (uintptr_t)fns[i] > (uintptr_t)fns[best]))
      best = i;
  return best;
}

static void case_unwind(void) {
  pool_t *p = make_pool(1);
  CHECK_OK(pool_submit(p, outer, NULL));
  CHECK_OK(pool_wait_idle(p));
  CHECK_OK(pool_destroy(p));
  CHECK_EQ(caller_rc, 0);
  CHECK_EQ(ran_b, 1);
  /* Every function of this file defined above, so that a return address
   * in one of them is not taken for one in its neighbour. */
  const any_fn fns[] = {(any_fn)dummy_fn,     (any_fn)check_regs,  (any_fn)case_registers,
                        (any_fn)tracing_task, (any_fn)plain_task,  (any_fn)sync_caller,
                        (any_fn)outer,        (any_fn)holder,      (any_fn)case_unwind};
  const int nf = (int)(sizeof fns / sizeof fns[0]);
  int in_caller = -1, in_outer = -1;
  for (int i = 0; i < trace_n; i++) {
    int h = holder(trace_pc[i], fns, nf);
    if (in_caller < 0 && h == 5) in_caller = i;
    if (in_outer < 0 && h == 6) in_outer = i;
  }
  if (in_caller < 0 || in_outer != in_caller + 1) {
    fprintf(stderr, "backtrace from the task (%d frames):\n", trace_n);
    backtrace_symbols_fd(trace_pc, trace_n, 2);
  }
  CHECK(in_caller > 0);
  CHECK_EQ(in_outer, in_caller + 1);
}

/* 3. fib from an outside thread: every spawn and sync leaves the fast path
 * through a trampoline, with results held in registers across them. */
typedef struct {
  pool_t *p;
  int n;
  long r;
} tfib_arg;

static void tfib_task(void *v) {
  tfib_arg *a = v;
  if (a->n < 2) {
    a->r = a->n;
    return;
  }
  tfib_arg x = {a->p, a->n - 1, 0}, y = {a->p, a->n - 2, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(a->p, &t, tfib_task, &x));
  tfib_task(&y);
  CHECK_OK(pool_sync(&t));
  a->r = x.r + y.r;
}

static long pfib(pool_t *p, int n) {
  if (n < 2) return n;
  tfib_arg x = {p, n - 1, 0};
  pool_task_t t;
  CHECK_OK(pool_spawn(p, &t, tfib_task, &x));
  long y = pfib(p, n - 2);
  int rc = pool_take(&t);
  if (rc == POOL_TAKEN) return pfib(p, n - 1) + y;
  CHECK_OK(rc);
  return x.r + y;
}

static void case_outside_fib(void) {
  pool_t *p = make_pool(2);
  CHECK_EQ(pfib(p, 20), 6765);
  CHECK_OK(pool_destroy(p));
}
#endif

TEST_MAIN_WITH(NO_TRAMPOLINES, NULL, 60, TEST_CASE(registers), TEST_CASE(avx512),
               TEST_CASE(unwind), TEST_CASE(outside_fib))
