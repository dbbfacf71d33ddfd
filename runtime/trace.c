/* SPDX-License-Identifier: MIT */
/* Chrome trace-event output; see trace.h. The file uses the JSON array
 * format, whose closing bracket is optional, so a process that dies before
 * exit still leaves a file the viewers open. */
#include "trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"

/* Events per worker: 64 Ki x 32 bytes = 2 MiB per worker at most. */
enum { TRACE_CAP = 1 << 16 };

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *trace_file;      /* NULL: tracing off (or closed at exit) */
static uint64_t trace_epoch;  /* CLOCK_MONOTONIC ns at start: the file's 0 */
static unsigned trace_next_pid = 1;
static bool trace_first = true;
/* Pools being traced and not yet destroyed, written at exit. */
static struct pool **live;
static size_t nlive, caplive;

static void sep(void) {
  fputs(trace_first ? "\n" : ",\n", trace_file);
  trace_first = false;
}

static void put_name(ws_fnptr fn) {
  /* dladdr takes an object pointer; the union converts without a cast ISO C
   * forbids (GCC documents union type punning). */
  union {
    ws_fnptr f;
    void *p;
  } addr = {.f = fn};
  Dl_info info;
  if (fn && dladdr(addr.p, &info) && info.dli_sname) {
    fputc('"', trace_file);
    for (const char *c = info.dli_sname; *c; c++)
      if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, trace_file);
    fputc('"', trace_file);
  } else {
    fprintf(trace_file, "\"task %p\"", addr.p);
  }
}

/* Under trace_lock. */
static void write_pool(struct pool *p) {
  if (!trace_file) return;
  sep();
  fprintf(trace_file,
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":\"wspool pool %u "
          "(%u workers)\"}}",
          p->trace_pid, p->trace_pid, p->nthreads);
  const pool_profile_t *r = &p->prof.result;
  if (p->prof.have && r->work > 0 && r->span > 0) {
    /* The last work/span region's summary (profile.c), in the form
     * runtime/tools/wspool-timeline reads. */
    sep();
    fprintf(trace_file,
            "{\"name\":\"wspool_profile\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"work_ns\":%.0f,"
            "\"span_ns\":%.0f,\"tasks\":%" PRIu64 ",\"burdened_span_ns\":%.0f}}",
            p->trace_pid, r->work * 1e9, r->span * 1e9, r->tasks, r->burdened_span * 1e9);
  }
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_worker *w = p->workers[i];
    ws_trace_buf *b = w->trace;
    if (!b) continue;
    sep();
    fprintf(trace_file,
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":"
            "\"worker %u\"}}",
            p->trace_pid, i, i);
    uint64_t n = ws_u64_load(&b->count, ws_acquire);
    for (uint64_t k = 0; k < n; k++) {
      ws_trace_event *e = &b->ev[k];
      sep();
      double ts = (double)(e->t0 - trace_epoch) / 1e3, dur = (double)(e->t1 - e->t0) / 1e3;
      switch (e->kind) {
      case WS_EV_TASK:
        fputs("{\"name\":", trace_file);
        put_name(e->what);
        fprintf(trace_file, ",\"cat\":\"task\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,"
                            "\"dur\":%.3f}",
                p->trace_pid, i, ts, dur);
        break;
      case WS_EV_STEAL:
        fprintf(trace_file,
                "{\"name\":\"steal\",\"cat\":\"steal\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,"
                "\"tid\":%u,\"ts\":%.3f,\"args\":{\"victim\":%u}}",
                p->trace_pid, i, ts, e->arg);
        break;
      default:
        fprintf(trace_file, "{\"name\":\"sleep\",\"cat\":\"sleep\",\"ph\":\"X\",\"pid\":%u,"
                            "\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f}",
                p->trace_pid, i, ts, dur);
      }
    }
    if (n >= b->cap) {
      sep();
      fprintf(trace_file,
              "{\"name\":\"trace buffer full: recording stopped\",\"ph\":\"i\",\"s\":\"t\","
              "\"pid\":%u,\"tid\":%u,\"ts\":%.3f}",
              p->trace_pid, i, (double)(b->ev[n - 1].t1 - trace_epoch) / 1e3);
    }
  }
  fflush(trace_file);
}

static void trace_at_exit(void) {
  pthread_mutex_lock(&trace_lock);
  for (size_t i = 0; i < nlive; i++) write_pool(live[i]);
  nlive = 0;
  if (trace_file) {
    fputs("\n]\n", trace_file);
    fclose(trace_file);
    trace_file = NULL;
  }
  pthread_mutex_unlock(&trace_lock);
}

/* The trace file, as a stream on a file this process created: made with
 * O_CREAT | O_EXCL under a name of its own beside `path` (an existing file
 * or symbolic link of that name fails the open rather than being followed),
 * then renamed to `path`. A regular file already at `path` is so replaced
 * as a directory entry, never opened, truncated or written: its other hard
 * links keep their content. (trace_init leaves anything else at `path`
 * alone; an entry swapped in since is replaced, not followed, which harms
 * no other file.) rename() succeeds only where the process may replace the
 * entry anyway (the directory's write permission and sticky bit decide),
 * as `mv` would. NULL with errno set on failure, and nothing is left
 * behind. */
static FILE *create_trace_file(const char *path) {
  size_t size = strlen(path) + 32;
  char *tmp = malloc(size);
  if (!tmp) return NULL;
  int fd = -1;
  for (unsigned k = 0; k < 100; k++) {
    snprintf(tmp, size, "%s.%ld.%u~", path, (long)getpid(), k);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) break;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (fd >= 0 && (!f || rename(tmp, path) != 0)) {
    int e = errno;
    if (f)
      fclose(f);
    else
      close(fd);
    unlink(tmp);
    f = NULL;
    errno = e;
  }
  free(tmp);
  return f;
}

static void trace_init(void) {
  const char *path = ws_option_str(WS_OPT_TRACE);
  if (!path) return;
  /* Only a regular file is replaced. Anything else of that name (a
   * symbolic link, a device such as /dev/null, a pipe, a directory) is
   * there for other programs too: replaced, it would be gone for them (as
   * root, /dev/null would become a file). */
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    fprintf(stderr,
            "wspool: ignoring WSPOOL_TRACE=\"%s\": it names something other than a regular "
            "file (a symbolic link, a device, a pipe or a directory), left as it is\n",
            path);
    return;
  }
  FILE *f = create_trace_file(path);
  if (!f) {
    fprintf(stderr, "wspool: ignoring WSPOOL_TRACE=\"%s\": cannot create it (%s)\n", path,
            strerror(errno));
    return;
  }
  fputs("[", f);
  /* Flushed, as after every write: a fork()ed child's copy of the stream
   * then holds no buffered bytes it would write again at its exit. */
  fflush(f);
  trace_epoch = ws_trace_now();
  trace_file = f;
  atexit(trace_at_exit);
}

void ws_trace_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&trace_lock);
    return;
  }
  if (phase == 2) {
    /* The file and the pools in it are the parent's: the child traces
     * nothing (its pools get no buffers) and writes nothing at exit. The
     * stream's buffer is empty (every write is flushed under the lock). */
    trace_file = NULL;
    nlive = 0;
  }
  pthread_mutex_unlock(&trace_lock);
}

void ws_trace_pool_created(struct pool *p) {
  pthread_once(&trace_once, trace_init);
  pthread_mutex_lock(&trace_lock);
  bool on = trace_file != NULL;
  if (on) {
    if (nlive == caplive) {
      size_t cap = caplive ? 2 * caplive : 8;
      struct pool **grown = realloc(live, cap * sizeof(*live));
      if (grown) {
        live = grown;
        caplive = cap;
      }
    }
    on = nlive < caplive;
    if (on) {
      live[nlive++] = p;
      p->trace_pid = trace_next_pid++;
    }
  }
  pthread_mutex_unlock(&trace_lock);
  if (!on) return;
  for (unsigned i = 0; i < p->nthreads; i++) {
    ws_trace_buf *b = malloc(sizeof(ws_trace_buf) + TRACE_CAP * sizeof(ws_trace_event));
    if (!b) continue; /* this worker goes untraced */
    ws_u64_store(&b->count, 0, ws_relaxed);
    b->cap = TRACE_CAP;
    p->workers[i]->trace = b;
  }
}

void ws_trace_pool_destroyed(struct pool *p) {
  pthread_mutex_lock(&trace_lock);
  for (size_t i = 0; i < nlive; i++)
    if (live[i] == p) {
      write_pool(p);
      live[i] = live[--nlive];
      break;
    }
  pthread_mutex_unlock(&trace_lock);
  for (unsigned i = 0; i < p->nthreads; i++) {
    if (!p->workers[i]) continue;
    free(p->workers[i]->trace);
    p->workers[i]->trace = NULL;
  }
}
