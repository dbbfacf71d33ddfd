/* SPDX-License-Identifier: MIT */
/* pool_dump_state (wspool.h): the state of every live pool, for a hang.
 * Async-signal-safe: it formats into a stack buffer and calls write(2)
 * only; it takes no lock and reads every word relaxed, so a pool that is
 * changing shows a mix of moments. Pool structs are never freed, so the
 * list is safe to walk; a pool is read while `dumpable` (from the end of
 * pool_create until destroy frees its workers). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "api.h"

static ws_ptr all_pools; /* struct pool *, linked through next_any */

void ws_dump_add(struct pool *p) {
  /* Under pool.c's global lock (one writer); release: a reader that finds
   * p finds its next_any. */
  p->next_any = ws_ptr_load(&all_pools, ws_relaxed);
  ws_ptr_store(&all_pools, p, ws_release);
}

typedef struct out {
  int fd, err;
  size_t n;
  char buf[512];
} out;

static void flush(out *o) {
  size_t done = 0;
  while (!o->err && done < o->n) {
    ssize_t k = write(o->fd, o->buf + done, o->n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) o->err = k < 0 ? errno : EIO;
    else done += (size_t)k;
  }
  o->n = 0;
}

static void put(out *o, const char *s) {
  for (; *s; s++) {
    if (o->n == sizeof o->buf) flush(o);
    o->buf[o->n++] = *s;
  }
}

static void put_num(out *o, uint64_t v, unsigned base) {
  char d[24];
  int i = 0;
  do {
    d[i++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  char s[27] = "0x";
  int k = base == 16 ? 2 : 0;
  while (i) s[k++] = d[--i];
  s[k] = 0;
  put(o, s);
}

/* A label, then a decimal number. */
static void put_field(out *o, const char *label, uint64_t v) {
  put(o, label);
  put_num(o, v, 10);
}

/* The wait a worker noted (latch.c): never the awaited memory itself,
 * which may be gone by the time this reads it. */
static void put_wait(out *o, ws_worker *w) {
  uint32_t kind = ws_u32_load(&w->wait_kind, ws_relaxed);
  void *word = ws_ptr_load(&w->wait_word, ws_relaxed);
  if (kind == WS_LATCH_VALUE) {
    put(o, "word ");
    put_num(o, (uintptr_t)word, 16);
    put_field(o, " to become ", ws_u64_load(&w->wait_value, ws_relaxed));
  } else if (kind == WS_LATCH_ZERO) {
    put(o, "count ");
    put_num(o, (uintptr_t)word, 16);
    put(o, " to reach 0");
  } else {
    put(o, "the pool's submissions to finish");
  }
}

/* One line: what worker (or stand-in) `id` does, its deque, its tasks. */
static void put_worker(out *o, const char *label, unsigned id, ws_worker *w) {
  put_field(o, label, id);
  uint32_t doing = ws_u32_load(&w->doing, ws_relaxed);
  if (doing == WS_DOING_SLEEP || doing == WS_DOING_NAP) {
    put(o, ": asleep");
  } else if (doing == WS_DOING_WAIT) {
    put(o, ": waiting (helping) for ");
    put_wait(o, w);
  } else if (doing == WS_DOING_PARKED) {
    put(o, w->standin ? ": parked (no region needs it)" : ": parked (beyond the pool's size)");
  } else {
    put(o, ": running or looking for work");
  }
  int64_t n = ws_deque_size_hint(&w->dq);
  put_field(o, "; deque ", n > 0 ? (uint64_t)n : 0);
  put_field(o, " tasks; tasks run ", ws_u64_load(&w->stats.tasks, ws_relaxed));
  put(o, "\n");
}

static void dump_pool(out *o, struct pool *p) {
  put(o, "wspool: pool ");
  put_num(o, (uintptr_t)p, 16);
  put(o, " \"");
  put(o, p->hooks.name);
  put_field(o, "\", ", p->nthreads);
  put_field(o, " workers: sleepers ", ws_u32_load(&p->sleep.sleepers, ws_relaxed));
  put_field(o, ", waking ", ws_u32_load(&p->sleep.waking, ws_relaxed));
  put_field(o, ", epoch ", ws_u32_load(&p->sleep.epoch, ws_relaxed));
  put_field(o, ", waiting workers ", ws_u32_load(&p->sleep.waiters, ws_relaxed));
  put_field(o, " (wait_epoch ", ws_u32_load(&p->sleep.wait_epoch, ws_relaxed));
  put_field(o, "), blocked outside threads ", ws_u32_load(&p->ext.waiters, ws_relaxed));
  put_field(o, " (epoch ", ws_u32_load(&p->ext.epoch, ws_relaxed));
  uint32_t gate = ws_u32_load(&p->gate, ws_relaxed);
  put_field(o, "), outside calls in the gate ", gate & ~WS_GATE_CLOSED);
  if (gate & WS_GATE_CLOSED) put(o, " (destroy began)");
  put(o, ", global queue ");
  for (unsigned l = 0; l < WS_LANES; l++) {
    put(o, l ? "/" : "");
    int64_t h = ws_i64_load(&p->gq[l].size_hint, ws_relaxed);
    put(o, h == 0 ? "empty" : h == 1 ? "short" : "full");
  }
  put(o, "\n");
  for (unsigned i = 0; i < p->nthreads && p->workers; i++) {
    ws_worker *w = p->workers[i];
    if (w) put_worker(o, "  worker ", i, w);
  }
  /* Stand-ins (docs/design.md 5.9): the count's acquire makes the slots it
   * covers readable; they are freed only after `dumpable` is cleared. */
  unsigned ns = ws_standins_count(p);
  if (ns || ws_u32_load(&p->blocked, ws_relaxed)) {
    put_field(o, "  blocking regions: threads blocked ", ws_u32_load(&p->blocked, ws_relaxed));
    put_field(o, ", stand-ins awake ", ws_u32_load(&p->active, ws_relaxed));
    put_field(o, " of at most ", ws_u32_load(&p->standin_limit, ws_relaxed));
    put_field(o, ", started ", ns);
    put(o, "\n");
  }
  for (unsigned k = 0; k < ns; k++) put_worker(o, "  stand-in ", p->nthreads + k, ws_standin_at(p, k));
}

static void on_sigquit(int sig) {
  pool_dump_state(2);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_sigquit(void) {
  struct sigaction old;
  if (sigaction(SIGQUIT, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigquit;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGQUIT, &sa, NULL);
}

void ws_dump_on_sigquit(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, install_sigquit);
}

int pool_dump_state(int fd) {
  out o = {.fd = fd};
  unsigned n = 0;
  for (struct pool *p = ws_ptr_load(&all_pools, ws_acquire); p && !o.err; p = p->next_any) {
    if (!ws_u32_load(&p->dumpable, ws_acquire)) continue;
    dump_pool(&o, p);
    n++;
  }
  if (!n) put(&o, "wspool: no live pool\n");
  flush(&o);
  return o.err;
}
