/* SPDX-License-Identifier: MIT */
/* The runnable-thread sample of busy.h. */
#include "busy.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "atomics.h"

/* How old a sample may be. A phase of the machine (a build, the program's
 * own compute threads) lasts far longer; at this rate a process spends
 * about 10 us of every 10 ms reading it, and only while its workers keep
 * going idle. */
enum { WS_BUSY_PERIOD_NS = 10 * 1000 * 1000 };

/* The last sample: when it was taken (0: never) and its runnable count (0:
 * unreadable). Relaxed throughout: the pair is a hint that one decision
 * to poll or not reads, and a reader that sees a new time beside an old
 * count makes one decision on the older sample. The CAS on `sampled_at`
 * only elects the one thread that reads the file this period; nothing is
 * published through it. */
static ws_u64 sampled_at;
static ws_u32 running;
static ws_u32 online; /* online CPUs, read once (0: not yet) */
static ws_u32 usable; /* CPUs the process may use, as last noted (0: not yet) */

/* The R of /proc/loadavg's "a b c R/T pid", 0 when it cannot be read. */
static uint32_t read_running(void) {
  int saved = errno; /* a worker's errno is its tasks' business */
  uint32_t r = 0;
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    int spaces = 0;
    for (ssize_t i = 0; i < n && spaces <= 3; i++) {
      if (buf[i] == ' ') {
        spaces++;
      } else if (spaces == 3) {
        if (buf[i] < '0' || buf[i] > '9') break;
        r = r * 10 + (uint32_t)(buf[i] - '0');
        if (r > 1000000) break; /* not a count: ignore it */
      }
    }
    if (r > 1000000) r = 0;
  }
  errno = saved;
  return r;
}

static ws_u32 awake;

void ws_awake_add(int32_t d) { ws_u32_fetch_add(&awake, (uint32_t)d, ws_relaxed); }

uint32_t ws_awake(void) { return ws_u32_load(&awake, ws_relaxed); }

void ws_awake_forget(void) { ws_u32_store(&awake, 0, ws_relaxed); }

void ws_usable_note(uint32_t n) { ws_u32_store(&usable, n, ws_relaxed); }

uint32_t ws_usable_cpus(void) {
  uint32_t n = ws_u32_load(&usable, ws_relaxed);
  return n ? n : 1;
}

static uint32_t online_cpus(void) {
  uint32_t n = ws_u32_load(&online, ws_relaxed);
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (uint32_t)c : 1;
    ws_u32_store(&online, n, ws_relaxed);
  }
  return n;
}

bool ws_cpus_busy(unsigned own) {
  uint64_t now = ws_mono_ns(), at = ws_u64_load(&sampled_at, ws_relaxed);
  if ((at == 0 || now - at >= WS_BUSY_PERIOD_NS) &&
      ws_u64_cas(&sampled_at, &at, now, ws_relaxed))
    ws_u32_store(&running, read_running(), ws_relaxed);
  uint32_t r = ws_u32_load(&running, ws_relaxed);
  return r > own && r - own >= online_cpus();
}
