/*
 * sandbox.c - what psid's engine gives up after the split (privsep.h), as OpenBSD's daemons
 * pledge and unveil: the engine parses every packet and every client message, so whoever
 * takes it should find as little as possible to use.
 *
 *   - no_new_privs (no set-uid program, no file capability ever gives it more) and not
 *     dumpable (no process of its uid may trace it or read its memory);
 *   - Landlock, where the kernel has it (5.13 and later; what a newer ABI adds is used when
 *     there): writing to the file system (writing files, making and removing anything,
 *     truncating, device ioctls) only beneath the client socket's directory and the cgroup
 *     base; no executing anything; no TCP bind or connect (ABI 4); no signal to, and no
 *     abstract UNIX socket of, a process outside the sandbox (ABI 6). Without Landlock the
 *     engine says so once and keeps what psid.user may write;
 *   - a seccomp filter (libseccomp) allowing the system calls the engine makes and no
 *     other: no execve, fork, ptrace, mount, setuid and the like; sockets only of the kinds
 *     it uses (UNIX, IPv4, IPv6, netlink); ioctl only FIONREAD, FIONBIO, TCGETS and
 *     SIOCOUTQ (fdflight.c); kill and tgkill only to itself. A refused call raises
 *     SIGSYS, whose handler writes one line to the log (stderr, and syslog through a socket
 *     opened beforehand: nothing it calls can take a lock) and ends the engine (its
 *     privileged child then ends its tasks). A build with sanitizers also allows what their
 *     runtime does at exit (LeakSanitizer's clone and ptrace of its own threads). A test
 *     build can have the filter let everything through and write down what it would have
 *     refused (PSID_TEST_SECCOMP_LOG=FILE): a thread started before the filter (which then
 *     is not under it) answers the filter's user notifications with "continue" and appends
 *     each call's number to FILE. That is how the list below is kept complete: run the
 *     tests so.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/landlock.h>
#include <linux/sockios.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

/* Landlock rights newer than some kernel headers (linux/landlock.h of Debian 12 has ABI 2) */
#define LL_FS_TRUNCATE     (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV    (1ULL << 15) /* ABI 5 */
#define LL_NET_BIND_TCP    (1ULL << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT  (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL    (1ULL << 1)

struct ll_ruleset_attr { /* struct landlock_ruleset_attr as of ABI 6 */
    uint64_t handled_access_fs, handled_access_net, scoped;
};

static int fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, strerror(errno));
    return -1;
}

/* Landlock: 1 in force, 0 not available, -1 with err. */
static int landlock(const char *const *dirs, size_t n, char *err, size_t errlen)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 0) return 0;
    uint64_t fs =
        LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
        LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
        LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
        LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2) fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) fs |= LL_FS_TRUNCATE;
    if (abi >= 5) fs |= LL_FS_IOCTL_DEV;
    struct ll_ruleset_attr attr = {.handled_access_fs = fs,
                                   .handled_access_net =
                                       abi >= 4 ? LL_NET_BIND_TCP | LL_NET_CONNECT_TCP : 0,
                                   .scoped = abi >= 6 ? LL_SCOPE_ABSTRACT | LL_SCOPE_SIGNAL : 0};
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rfd < 0) return fail(err, errlen, "landlock_create_ruleset");
    for (size_t i = 0; i < n; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        struct landlock_path_beneath_attr pb = {
            .allowed_access = fs & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE,
            .parent_fd = open(dirs[i], O_PATH | O_CLOEXEC | O_DIRECTORY)};
        if (pb.parent_fd < 0) continue; /* gone: nothing to write there */
        long r = syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        close(pb.parent_fd);
        if (r < 0) {
            close(rfd);
            return fail(err, errlen, "landlock_add_rule");
        }
    }
    long r = syscall(SYS_landlock_restrict_self, rfd, 0);
    close(rfd);
    if (r < 0) return fail(err, errlen, "landlock_restrict_self");
    return 1;
}

/* ---- seccomp ---- */

static const char *const allowed[] = {
    /* descriptors and files (reading anywhere; writing is Landlock's to bound) */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "lseek",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "openat",
    "open",
    "newfstatat",
    "fstat",
    "stat",
    "lstat",
    "statx",
    "getdents64",
    "mkdirat",
    "mkdir",
    "unlinkat",
    "unlink",
    "rmdir",
    "readlink",
    "readlinkat",
    "faccessat",
    "faccessat2",
    "access",
    "pipe2",
    "memfd_create",
    "ftruncate",
    /* memory */
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    /* sockets (socket itself below, by family) */
    "socketpair",
    "bind",
    "connect",
    "accept",
    "accept4",
    "listen",
    "getsockname",
    "getpeername",
    "getsockopt",
    "setsockopt",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "shutdown",
    /* waiting */
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "signalfd4",
    "eventfd2",
    "clock_gettime",
    "clock_getres",
    "clock_nanosleep",
    "nanosleep",
    "gettimeofday",
    "time",
    /* itself */
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getgroups",
    "getresuid",
    "getresgid",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "futex",
    "set_robust_list",
    "rseq",
    "restart_syscall",
    "sched_yield",
    "sched_getaffinity",
    "getrandom",
    "prlimit64",
    "getrlimit",
    "uname",
    "sysinfo",
    "exit",
    "exit_group",
    /* clients' processes (pidfds it passes to its child), and its child at its end */
    "pidfd_open",
    "waitid",
    "wait4",
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* the sanitizers' runtime: LeakSanitizer stops the world with a traced clone at exit */
    "clone",
    "clone3",
    "ptrace",
    "prctl",
    "sched_setaffinity",
    "mlock",
    "munlock",
#endif
};

static int sys_stderr = -1, sys_syslog = -1;
static char sys_tag[64];

static size_t put_str(char *b, size_t n, size_t at, const char *s)
{
    while (*s && at + 1 < n) b[at++] = *s++;
    return at;
}

static size_t put_num(char *b, size_t n, size_t at, long v)
{
    char t[24];
    size_t k = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do t[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < sizeof t);
    if (v < 0 && at + 1 < n) b[at++] = '-';
    while (k && at + 1 < n) b[at++] = t[--k];
    return at;
}

/* A refused system call: one line, then the end (async-signal-safe calls only). */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    char line[200];
    size_t at = put_str(line, sizeof line, 0, "<27>");
    at = put_str(line, sizeof line, at, sys_tag);
    at = put_str(line, sizeof line, at, "[");
    at = put_num(line, sizeof line, at, (long)getpid());
    at = put_str(line, sizeof line, at, "]: the engine's sandbox refused system call ");
    at = put_num(line, sizeof line, at, (long)si->si_syscall);
    at = put_str(line, sizeof line, at, " (psid/sandbox.c); stopping\n");
    if (sys_syslog >= 0) (void)!send(sys_syslog, line, at - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sys_stderr >= 0) (void)!write(sys_stderr, line + 4, at - 4);
    _exit(1);
}

static int rule(scmp_filter_ctx ctx, const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return 0; /* not a call of this architecture */
    return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

/* The test build's listener: every notification continued, its call written down. */
static void *notes(void *arg)
{
    int *p = arg, fd = -1;
    if (read(p[0], &fd, sizeof fd) != (ssize_t)sizeof fd || fd < 0) return NULL;
    int out = p[2];
    struct seccomp_notif *req;
    struct seccomp_notif_resp *resp;
    if (seccomp_notify_alloc(&req, &resp) < 0) return NULL;
    for (;;) {
        if (seccomp_notify_receive(fd, req) < 0) {
            if (errno == EINTR || errno == ENOENT) continue;
            break;
        }
        char line[64];
        int n = snprintf(line, sizeof line, "syscall %d pid %u\n", req->data.nr, req->pid);
        (void)!write(out, line, (size_t)n);
        memset(resp, 0, sizeof *resp);
        resp->id = req->id;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        seccomp_notify_respond(fd, resp);
    }
    seccomp_notify_free(req, resp);
    return NULL;
}

/* log: the test build's file (opened before Landlock), or -1. */
static int seccomp(int log, char *err, size_t errlen)
{
    static int p[3] = {-1, -1, -1}; /* a pipe for the listener's descriptor, the file */
    pthread_t th;
    p[2] = log;
    if (log >= 0 && (pipe2(p, O_CLOEXEC) < 0 || pthread_create(&th, NULL, notes, p) != 0))
        return fail(err, errlen, "the test build's seccomp log");
    scmp_filter_ctx ctx = seccomp_init(log >= 0 ? SCMP_ACT_NOTIFY : SCMP_ACT_TRAP);
    if (!ctx) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof allowed / sizeof allowed[0]; i++)
        rc = rule(ctx, allowed[i]);
    static const int families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
    for (size_t i = 0; rc == 0 && i < sizeof families / sizeof families[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
    static const unsigned long ioctls[] = {FIONREAD, FIONBIO, TCGETS, SIOCOUTQ};
    for (size_t i = 0; rc == 0 && i < sizeof ioctls / sizeof ioctls[0]; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctls[i]));
    scmp_datum_t self = (scmp_datum_t)getpid();
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, self));
    if (rc == 0) rc = seccomp_load(ctx);
    if (rc == 0 && log >= 0) {
        int fd = seccomp_notify_fd(ctx);
        (void)!write(p[1], &fd, sizeof fd);
    }
    seccomp_release(ctx);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

int sandbox_engine(const char *const *writable, size_t n, const char *ident, bool use_syslog,
                   const char *log_to, char *err, size_t errlen)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return fail(err, errlen, "no_new_privs");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return fail(err, errlen, "not dumpable");
    int log = log_to ? open(log_to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (log_to && log < 0) return fail(err, errlen, log_to);
    int ll = landlock(writable, n, err, errlen);
    if (ll < 0) return -1;
    /* where the SIGSYS handler writes */
    snprintf(sys_tag, sizeof sys_tag, "%s", ident ? ident : "psid");
    sys_stderr = use_syslog ? -1 : STDERR_FILENO;
    if (use_syslog && (sys_syslog = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0) {
        struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/dev/log"};
        if (connect(sys_syslog, (struct sockaddr *)&a, sizeof a) < 0) {
            close(sys_syslog);
            sys_syslog = -1;
        }
    }
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0) return fail(err, errlen, "SIGSYS");
    if (seccomp(log, err, errlen) < 0) return -1;
    snprintf(err, errlen, "%s",
             ll ? "no_new_privs, Landlock, seccomp" : "no_new_privs, seccomp (no Landlock here)");
    return 0;
}
