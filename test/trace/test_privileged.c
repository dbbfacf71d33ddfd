/* SPDX-License-Identifier: MIT */
/* A setuid-root program linked with wspool, run by an unprivileged user
 * (nobody), ignores every WSPOOL_* variable: WSPOOL_TRACE naming a root-only
 * file leaves that file as it was, and WSPOOL_STATS, WSPOOL_VERBOSE and
 * WSPOOL_THREADS change nothing and print nothing, while the program still
 * runs its work. The same program without the setuid bit, given the same
 * environment by the same user, does read them (the control: it proves the
 * environment reaches the program, so the silence above is the library's).
 * The program (privileged_app.c) is linked statically with the library: a
 * setuid program's loader ignores $ORIGIN run paths.
 *
 * Needs root, to make the setuid copy and drop to nobody (CI runs as root);
 * skipped otherwise and under an emulator. Case: setuid. */
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <wspool.h>

#include "check.h"

enum { NOBODY = 65534, WORKERS_ASKED = 7 };

static const char secret_text[] = "root only: must not change\n";

static void copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  CHECK(in >= 0);
  int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  CHECK(out >= 0);
  char buf[1 << 16];
  ssize_t k;
  while ((k = read(in, buf, sizeof buf)) > 0) CHECK(write(out, buf, (size_t)k) == k);
  CHECK(k == 0);
  close(in);
  CHECK_OK(fchown(out, 0, 0));
  CHECK_OK(fchmod(out, mode)); /* after chown, which clears the setuid bit */
  CHECK_OK(close(out));
}

/* The whole of a small file, into buf; its length. */
static size_t slurp(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  ssize_t k = read(fd, buf, size - 1);
  CHECK(k >= 0);
  close(fd);
  buf[k] = 0;
  return (size_t)k;
}

typedef struct run {
  int status;
  char out[4096], err[65536];
} run;

/* Runs `prog` as nobody with the WSPOOL_* variables pointing the trace at
 * `secret`; its stdout and stderr into r. */
static void run_as_nobody(const char *prog, const char *secret, const char *dir, run *r) {
  char out_path[4096], err_path[4096];
  snprintf(out_path, sizeof out_path, "%s/../%s.out", dir, strrchr(prog, '/') + 1);
  snprintf(err_path, sizeof err_path, "%s/../%s.err", dir, strrchr(prog, '/') + 1);
  int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = open(err_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(out >= 0 && err >= 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    char threads[16];
    snprintf(threads, sizeof threads, "%d", WORKERS_ASKED);
    char trace[4200];
    snprintf(trace, sizeof trace, "WSPOOL_TRACE=%s", secret);
    char thr[40];
    snprintf(thr, sizeof thr, "WSPOOL_THREADS=%s", threads);
    /* The sanitizers' leak check stops the process's threads by ptrace,
     * which a setuid process does not allow; leaks are the other tests'. */
    char *env[] = {trace, thr, "WSPOOL_STATS=1", "WSPOOL_VERBOSE=1", "ASAN_OPTIONS=detect_leaks=0",
                   "PATH=/usr/bin:/bin", NULL};
    if (dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(120);
    if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)) _exit(121);
    if (getuid() != NOBODY || geteuid() != NOBODY) _exit(122);
    execve(prog, (char *[]){(char *)prog, NULL}, env);
    _exit(123);
  }
  CHECK(waitpid(pid, &r->status, 0) == pid);
  close(out);
  close(err);
  slurp(out_path, r->out, sizeof r->out);
  slurp(err_path, r->err, sizeof r->err);
  unlink(out_path);
  unlink(err_path);
}

static void check_secret(const char *secret) {
  struct stat st;
  CHECK_OK(lstat(secret, &st));
  CHECK(S_ISREG(st.st_mode));
  CHECK_EQ(st.st_mode & 07777, 0600);
  CHECK_EQ(st.st_uid, 0);
  CHECK_EQ(st.st_nlink, 1);
  char text[256];
  slurp(secret, text, sizeof text);
  CHECK(!strcmp(text, secret_text));
}

/* The directory's entries other than the two programs and the secret. */
static void check_no_other_files(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -v -x -e app-setuid -e app-plain -e secret", dir);
  FILE *ls = popen(cmd, "r");
  CHECK(ls);
  char line[512];
  bool extra = false;
  while (fgets(line, sizeof line, ls)) {
    fprintf(stderr, "unexpected file in %s: %s", dir, line);
    extra = true;
  }
  pclose(ls);
  CHECK(!extra);
}

static void case_setuid(void) {
  if (geteuid() != 0) TEST_SKIP("needs root to install a setuid program and run it as nobody");
  if (getenv("WSPOOL_TEST_EMULATED")) TEST_SKIP("a setuid program under qemu-user");
  const char *app = getenv("WSPOOL_PRIVILEGED_APP");
  CHECK(app && *app);

  /* /tmp/wspool-priv-XXXXXX/d: root's, 0755, so nobody can read and run
   * the programs but create nothing there. */
  char top[] = "/tmp/wspool-priv-XXXXXX";
  CHECK(mkdtemp(top));
  CHECK_OK(chmod(top, 0755));
  char dir[64], setuid_app[96], plain_app[96], secret[96];
  snprintf(dir, sizeof dir, "%s/d", top);
  CHECK_OK(mkdir(dir, 0755));
  snprintf(setuid_app, sizeof setuid_app, "%s/app-setuid", dir);
  snprintf(plain_app, sizeof plain_app, "%s/app-plain", dir);
  snprintf(secret, sizeof secret, "%s/secret", dir);
  copy_file(app, setuid_app, 04755);
  copy_file(app, plain_app, 0755);
  int fd = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  CHECK(fd >= 0);
  CHECK(write(fd, secret_text, strlen(secret_text)) == (ssize_t)strlen(secret_text));
  CHECK_OK(close(fd));

  static run priv, plain;
  run_as_nobody(setuid_app, secret, dir, &priv);
  run_as_nobody(plain_app, secret, dir, &plain);
  fprintf(stderr, "setuid: status %d, stdout: %sstderr: [%s]\n", priv.status, priv.out, priv.err);
  fprintf(stderr, "plain: status %d, stdout: %s", plain.status, plain.out);

  /* The control: the environment reaches the program. */
  CHECK(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0);
  char expect[64];
  snprintf(expect, sizeof expect, "secure=0 threads=%d tasks=1000\n", WORKERS_ASKED);
  CHECK(!strcmp(plain.out, expect));
  CHECK(strstr(plain.err, "WSPOOL_TRACE")); /* it could not create the trace there */
  CHECK(strstr(plain.err, "wspool: pool"));  /* the statistics table */

  /* The setuid program ran its work as a privileged process, read none of
   * the variables and printed nothing. */
  CHECK(WIFEXITED(priv.status) && WEXITSTATUS(priv.status) == 0);
  CHECK(!strncmp(priv.out, "secure=1 threads=", 17));
  CHECK(strstr(priv.out, " tasks=1000\n"));
  unsigned threads = 0;
  CHECK(sscanf(priv.out, "secure=1 threads=%u", &threads) == 1);
  CHECK(threads != WORKERS_ASKED || sysconf(_SC_NPROCESSORS_ONLN) == WORKERS_ASKED);
  CHECK_EQ(priv.err[0], 0);

  check_secret(secret);
  check_no_other_files(dir);

  unlink(setuid_app);
  unlink(plain_app);
  unlink(secret);
  rmdir(dir);
  rmdir(top);
}

TEST_MAIN(120, TEST_CASE(setuid))
