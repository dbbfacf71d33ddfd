/* SPDX-License-Identifier: MIT */
/* Binding made impossible, as in sandboxes that refuse it: a seccomp
 * filter makes sched_setaffinity fail with ENOSYS. Shared by the placement
 * and hooks tests. NO_AFFINITY_AVAILABLE is 0 on architectures this filter
 * does not know, where refuse_setaffinity() installs nothing and returns
 * ENOSYS. */
#ifndef WSPOOL_TEST_NO_AFFINITY_H
#define WSPOOL_TEST_NO_AFFINITY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__) || defined(__aarch64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#define NO_AFFINITY_AVAILABLE 1
#if defined(__x86_64__)
#define NO_AFFINITY_ARCH AUDIT_ARCH_X86_64
#else
#define NO_AFFINITY_ARCH AUDIT_ARCH_AARCH64
#endif

/* Refuse sched_setaffinity with ENOSYS from now on, in this process and
 * the threads it starts; when only_others, only for a pid argument other
 * than 0 (the low 32 bits of the first argument; pid_t), so a thread can
 * still set its own. Returns 0, or the errno of a failed prctl. */
static inline int refuse_setaffinity(bool only_others) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NO_AFFINITY_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, only_others ? 0 : 1, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
  struct sock_fprog prog = {sizeof f / sizeof *f, f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return errno;
  return 0;
}
#else
#define NO_AFFINITY_AVAILABLE 0
static inline int refuse_setaffinity(bool only_others) {
  (void)only_others;
  return ENOSYS;
}
#endif

#endif
