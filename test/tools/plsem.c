/*
 * plsem.c - the socket semantics the preload library must keep, as scenarios that print a
 * deterministic transcript (return values, errno names, byte counts; never ports or pids).
 * test/shell/preload_semantics.sh runs each once on kernel TCP and once with the library on
 * both sides, and compares the transcripts: any difference is a difference from the kernel.
 *
 *   plsem server ADDR PORT MODE    prints "ready" once listening; MODE: cmd (one connection
 *                                  that takes commands, below), fork (the same, served by a
 *                                  child after accept), two (two connections: one never
 *                                  read, one read to EOF), many (1000 connections, or
 *                                  PLSEM_MANY, one byte echoed on each), v6mapped (cmd, on an
 * AF_INET6 listener on :: with IPV6_V6ONLY 0; prints the peer's family), reuseport (cmd, from two
 * SO_REUSEPORT listeners), relisten (echo one connection, listen anew on the port, echo a second),
 * cmdt (cmd, each connection served in a thread of its own) plsem client ADDR PORT SCENARIO
 *
 * Commands to a cmd server, one byte each: e: echo everything from now to EOF; w: write
 * "x"; b: write "abcdef"; W: write 3 x 1000 bytes 50 ms apart; F: write 777 bytes; d: write
 * "x" after 300 ms; s: shutdown(SHUT_WR); q: close and exit; l: SO_LINGER 0 and close;
 * k: die of SIGKILL; c: write 1 MiB, then compute for 3 s without a call into any library;
 * S: read nothing for 5 s, then read to EOF (writing nothing).
 * The script bounds every run with timeout(1): a hang shows as a missing transcript tail.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static struct sockaddr_in where;
static volatile sig_atomic_t pipes, alarms;

static void on_pipe(int s)
{
    (void)s;
    pipes++;
}

static void on_alarm(int s)
{
    (void)s;
    alarms++;
}

static const char *en(int e)
{
    switch (e) {
    case 0:
        return "0";
    case EAGAIN:
        return "EAGAIN";
    case EINTR:
        return "EINTR";
    case EPIPE:
        return "EPIPE";
    case ECONNRESET:
        return "ECONNRESET";
    case ECONNREFUSED:
        return "ECONNREFUSED";
    case EINPROGRESS:
        return "EINPROGRESS";
    case ENOTCONN:
        return "ENOTCONN";
    case EBADF:
        return "EBADF";
    case EIO:
        return "EIO";
    case EINVAL:
        return "EINVAL";
    default:
        return strerror(e);
    }
}

static void ms_sleep(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&where, sizeof where) < 0) {
        printf("connect %s\n", en(errno));
        exit(1);
    }
    return fd;
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) return r < 0 ? -1 : (ssize_t)got;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static void write_full(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w <= 0) {
            printf("write %s\n", en(errno));
            return;
        }
        done += (size_t)w;
    }
}

/* many's count of connections: PLSEM_MANY, at most (and by default) 1000 */
static int many_n(void)
{
    const char *v = getenv("PLSEM_MANY");
    int n = v && *v ? atoi(v) : 1000;
    return n > 0 && n < 1000 ? n : 1000;
}

/* --- servers --- */

static void serve_cmds(int fd)
{
    char c, buf[65536];
    while (read(fd, &c, 1) == 1) {
        switch (c) {
        case 'e':
            for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) write_full(fd, buf, (size_t)r);
            close(fd);
            return;
        case 'w':
            write_full(fd, "x", 1);
            break;
        case 'b':
            write_full(fd, "abcdef", 6);
            break;
        case 'W':
            memset(buf, 'W', 1000);
            for (int i = 0; i < 3; i++) {
                write_full(fd, buf, 1000);
                ms_sleep(50);
            }
            break;
        case 'F':
            memset(buf, 'F', 777);
            write_full(fd, buf, 777);
            break;
        case 'd':
            ms_sleep(300);
            write_full(fd, "x", 1);
            break;
        case 's':
            shutdown(fd, SHUT_WR);
            break;
        case 'X': { /* write 4 MiB and end with _exit, closing nothing: the kernel delivers */
            static char big[4 << 20];
            for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 31);
            write_full(fd, big, sizeof big);
            _exit(0);
        }
        case 'K': { /* what arrives while the client corks: after each look, a "t" */
            write_full(fd, "r", 1);
            static const int waits[] = {60, 1000, 60, 1000, 60, 1000};
            for (int i = 0; i < 6; i++) {
                struct pollfd p = {fd, POLLIN, 0};
                long t0 = now_ms();
                char got[64] = "";
                if (poll(&p, 1, waits[i]) == 1) {
                    ssize_t r = recv(fd, got, sizeof got - 1, MSG_DONTWAIT);
                    if (r > 0) got[r] = 0;
                }
                long dt = now_ms() - t0;
                /* the last: bytes MSG_MORE held come by themselves, after about 200 ms */
                printf("cork %d: '%s'%s\n", i + 1, got,
                       i < 5       ? ""
                       : dt >= 100 ? " late"
                                   : " early");
                write_full(fd, "t", 1);
            }
            break;
        }
        case 'O': { /* urgent data: the bytes in line, and the urgent one at its mark */
            write_full(fd, "r", 1);
            char got[64];
            size_t n = 0;
            int urgent = -1;
            for (;;) {
                struct pollfd p = {fd, POLLIN | POLLPRI, 0};
                if (poll(&p, 1, 5000) <= 0) break;
                char u;
                if (urgent < 0 && sockatmark(fd) == 1 && recv(fd, &u, 1, MSG_OOB) == 1) {
                    urgent = u;
                    continue;
                }
                ssize_t r = read(fd, got + n, sizeof got - 1 - n);
                if (r <= 0) break;
                n += (size_t)r;
            }
            got[n] = 0;
            printf("oob: in line '%s', urgent '%c'\n", got, urgent < 0 ? '-' : urgent);
            close(fd);
            return;
        }
        case 'S': /* read nothing for 5 s, then read to the end, writing nothing */
            ms_sleep(5000);
            while (read(fd, buf, sizeof buf) > 0) {
            }
            close(fd);
            return;
        case 'Z': { /* touch nothing for 3 s, then echo one byte */
            ms_sleep(3000);
            char z;
            if (read(fd, &z, 1) == 1) write_full(fd, &z, 1);
            break;
        }
        case 'k': /* a crash */
            raise(SIGKILL);
            break;
        case 'c': { /* write, then compute without a call into any library for 3 s */
            static char big[1 << 20];
            write_full(fd, big, sizeof big);
            long t0 = now_ms();
            volatile unsigned long x = 0;
            while (now_ms() - t0 < 3000) x++;
            break;
        }
        case 'q':
            close(fd);
            return;
        case 'l': {
            struct linger l = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            close(fd);
            return;
        }
        }
    }
    close(fd);
}

/* A listener on where's port: AF_INET on where's address, or AF_INET6 on :: taking IPv4
 * too (IPV6_V6ONLY 0); with SO_REUSEPORT if asked. */
static int listener(bool v6, bool reuseport)
{
    int l = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), one = 1, zero = 0;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport) setsockopt(l, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in6 a6 = {
        .sin6_family = AF_INET6, .sin6_port = where.sin_port, .sin6_addr = IN6ADDR_ANY_INIT};
    int r;
    if (v6) {
        setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        r = bind(l, (struct sockaddr *)&a6, sizeof a6);
    } else {
        r = bind(l, (struct sockaddr *)&where, sizeof where);
    }
    if (r < 0 || listen(l, 1024) < 0) {
        printf("listen %s\n", en(errno));
        exit(1);
    }
    return l;
}

/* Echo everything to EOF. */
static void echo_all(int fd)
{
    static char buf[65536];
    for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) write_full(fd, buf, (size_t)r);
}

static void *serve_thread(void *arg)
{
    serve_cmds((int)(intptr_t)arg);
    return NULL;
}

/* acc2: each of two threads accepts one connection and serves its commands */
static volatile int accept_served;
static void *accept_serve(void *arg)
{
    int fd = accept((int)(intptr_t)arg, NULL, NULL);
    if (fd >= 0) {
        serve_cmds(fd);
        __atomic_fetch_add(&accept_served, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static int server(const char *mode)
{
    if (!strcmp(mode, "v6mapped")) { /* an IPv6 listener on ::, an IPv4 client */
        int l = listener(true, false);
        printf("ready\n");
        for (;;) {
            struct sockaddr_in6 a;
            socklen_t al = sizeof a;
            int fd = accept(l, (struct sockaddr *)&a, &al);
            printf("accept family %s v4mapped %d\n", a.sin6_family == AF_INET6 ? "AF_INET6" : "?",
                   IN6_IS_ADDR_V4MAPPED(&a.sin6_addr));
            struct sockaddr_in6 p = {0};
            socklen_t pl = sizeof p;
            int r = getpeername(fd, (struct sockaddr *)&p, &pl);
            printf("peername %d family %s len %u v4mapped %d\n", r,
                   p.sin6_family == AF_INET6 ? "AF_INET6" : "?", (unsigned)pl,
                   IN6_IS_ADDR_V4MAPPED(&p.sin6_addr));
            serve_cmds(fd);
        }
    }
    if (!strcmp(mode, "reuseport")) { /* two SO_REUSEPORT listeners on one port */
        int l[2] = {listener(false, true), listener(false, true)};
        printf("ready\n");
        for (;;) {
            struct pollfd p[2] = {{l[0], POLLIN, 0}, {l[1], POLLIN, 0}};
            if (poll(p, 2, -1) <= 0) continue;
            int fd = accept(p[0].revents & POLLIN ? l[0] : l[1], NULL, NULL);
            printf("accepted %d\n", fd >= 0);
            serve_cmds(fd);
        }
    }
    if (!strcmp(mode, "relisten")) {
        /* echo one connection; close the listener and listen anew on the same port; only
         * then close the first connection (so its EOF tells the client that the new
         * listener is up); echo a second connection on the new listener */
        int l = listener(false, false);
        printf("ready\n");
        int a = accept(l, NULL, NULL);
        echo_all(a);
        printf("first served, listener closed %d\n", close(l));
        l = listener(false, false);
        printf("listening again\n");
        close(a);
        int b = accept(l, NULL, NULL);
        printf("second accepted %d\n", b >= 0);
        echo_all(b);
        close(b);
        printf("second served\n");
        pause();
        return 0;
    }
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&where, sizeof where) < 0 || listen(l, 1024) < 0) {
        printf("listen %s\n", en(errno));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    if (!strcmp(mode, "cmd")) {
        for (;;) serve_cmds(accept(l, NULL, NULL));
    } else if (!strcmp(mode, "cmdt")) { /* each connection in a thread of its own */
        for (;;) {
            intptr_t fd = accept(l, NULL, NULL);
            pthread_t t;
            if (fd >= 0 && pthread_create(&t, NULL, serve_thread, (void *)fd) == 0)
                pthread_detach(t);
        }
    } else if (!strcmp(mode, "acc2")) { /* two threads in accept on one listener */
        pthread_t t[2];
        intptr_t lf = l;
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, accept_serve, (void *)lf);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        printf("two threads in accept served %d\n", (int)accept_served);
        fflush(stdout);
        pause();
    } else if (!strcmp(mode, "fork")) {
        for (;;) {
            int fd = accept(l, NULL, NULL);
            pid_t p = fork();
            if (p == 0) {
                close(l);
                serve_cmds(fd);
                _exit(0);
            }
            close(fd);
            waitpid(p, NULL, 0);
        }
    } else if (!strcmp(mode, "inetd")) { /* as inetd: the socket on 0 and 1 of an exec'd cat */
        for (;;) {
            int fd = accept(l, NULL, NULL);
            pid_t p = fork();
            if (p == 0) {
                close(l);
                dup2(fd, 0);
                dup2(fd, 1);
                close(fd);
                execl("/bin/cat", "cat", (char *)NULL);
                _exit(127);
            }
            close(fd);
            int st = 0;
            waitpid(p, &st, 0);
            printf("handler exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            fflush(stdout);
        }
    } else if (!strcmp(mode, "two")) {
        int a = accept(l, NULL, NULL), b = accept(l, NULL, NULL);
        char buf[65536];
        size_t n = 0;
        for (ssize_t r; (r = read(b, buf, sizeof buf)) > 0;) n += (size_t)r;
        char msg[32];
        int k = snprintf(msg, sizeof msg, "%zu", n);
        write_full(b, msg, (size_t)k);
        close(b);
        close(a);
        pause();
    } else if (!strcmp(mode, "many")) {
        int ep = epoll_create1(0), open = 0, done = 0;
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
        epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
        while (done < many_n()) {
            struct epoll_event e[64];
            int n = epoll_wait(ep, e, 64, -1);
            for (int i = 0; i < n; i++) {
                int fd = e[i].data.fd;
                if (fd == l) {
                    int c = accept(l, NULL, NULL);
                    ev = (struct epoll_event){.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                    open++;
                    continue;
                }
                char c;
                if (read(fd, &c, 1) == 1) {
                    write_full(fd, &c, 1);
                } else {
                    close(fd);
                    done++;
                }
            }
        }
        pause();
    }
    return 0;
}

/* --- client scenarios --- */

static void s_echo(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    static char out[200000], in[200000];
    for (size_t i = 0; i < sizeof out; i++) out[i] = (char)(i * 7);
    size_t sizes[] = {1, 10, 100, 1000, 10000, 100000, 200000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        write_full(fd, out, sizes[i]);
        ssize_t r = read_full(fd, in, sizes[i]);
        printf("echo %zu: %s\n", sizes[i],
               r == (ssize_t)sizes[i] && !memcmp(in, out, sizes[i]) ? "same" : "DIFFERENT");
    }
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, in, 1));
    close(fd);
}

static void s_halfclose(void)
{
    int fd = dial();
    write_full(fd, "w", 1);
    char c;
    printf("read %zd\n", read(fd, &c, 1));
    write_full(fd, "s", 1);
    printf("read after shutdown %zd\n", read(fd, &c, 1));
    write_full(fd, "w", 1); /* the server still reads and writes */
    printf("write after peer's shutdown: ok\n");
    shutdown(fd, SHUT_WR);
    ssize_t w = send(fd, "w", 1, MSG_NOSIGNAL);
    printf("write after own shutdown %zd %s\n", w, en(w < 0 ? errno : 0));
    close(fd);
}

static void s_peek(void)
{
    int fd = dial();
    char buf[4000];
    ssize_t r = recv(fd, buf, 1, MSG_DONTWAIT);
    printf("dontwait empty %zd %s\n", r, en(r < 0 ? errno : 0));
    write_full(fd, "b", 1);
    struct pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 3000);
    ms_sleep(50);
    r = recv(fd, buf, 3, MSG_PEEK);
    printf("peek %zd %.3s\n", r, buf);
    r = recv(fd, buf, 6, 0);
    printf("read %zd %.6s\n", r, buf);
    write_full(fd, "W", 1);
    r = recv(fd, buf, 3000, MSG_WAITALL);
    printf("waitall %zd\n", r);
    write_full(fd, "F", 1);
    poll(&p, 1, 3000);
    ms_sleep(100);
    int n = -1;
    ioctl(fd, FIONREAD, &n);
    printf("fionread %d\n", n);
    close(fd);
}

static void s_poll(void)
{
    int fd = dial(), pp[2];
    if (pipe(pp) < 0) return;
    struct pollfd p[2] = {{fd, POLLIN | POLLRDHUP, 0}, {pp[0], POLLIN, 0}};
    printf("poll idle %d\n", poll(p, 2, 100));
    write_full(fd, "w", 1);
    int n = poll(p, 2, 3000);
    printf("poll data %d %x %x\n", n, p[0].revents, p[1].revents);
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    FD_SET(pp[0], &r);
    struct timeval tv = {1, 0};
    n = select((fd > pp[0] ? fd : pp[0]) + 1, &r, NULL, NULL, &tv);
    printf("select %d %d %d\n", n, FD_ISSET(fd, &r) != 0, FD_ISSET(pp[0], &r) != 0);
    char c;
    (void)!read(fd, &c, 1);
    write_full(pp[1], "p", 1);
    n = poll(p, 2, 3000);
    printf("poll pipe %d %x %x\n", n, p[0].revents, p[1].revents);
    (void)!read(pp[0], &c, 1);
    struct pollfd o = {fd, POLLOUT, 0};
    n = poll(&o, 1, 1000);
    printf("pollout %d %x\n", n, o.revents);
    write_full(fd, "s", 1);
    n = poll(p, 2, 3000);
    printf("poll shutdown %d %x\n", n, p[0].revents);
    struct timespec ts = {0, 100000000};
    sigset_t m;
    sigemptyset(&m);
    printf("ppoll %d\n", ppoll(p, 1, &ts, &m));
    close(fd);
}

static int ewait(int ep, int ms, uint32_t *ev)
{
    struct epoll_event e[4];
    int n = epoll_wait(ep, e, 4, ms);
    if (ev) *ev = n > 0 ? e[0].events : 0;
    return n;
}

static void s_epoll(void)
{
    int fd = dial();
    int lt = epoll_create1(0), et = epoll_create1(0), one = epoll_create1(0),
        zero = epoll_create1(0), outer = epoll_create1(0), out = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42};
    epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
    ev.events = EPOLLIN | EPOLLET;
    epoll_ctl(et, EPOLL_CTL_ADD, fd, &ev);
    ev.events = EPOLLIN | EPOLLONESHOT;
    epoll_ctl(one, EPOLL_CTL_ADD, fd, &ev);
    ev.events = 0;
    epoll_ctl(zero, EPOLL_CTL_ADD, fd, &ev);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = 7};
    epoll_ctl(outer, EPOLL_CTL_ADD, lt, &ev);
    ev = (struct epoll_event){.events = EPOLLOUT, .data.u64 = 9};
    epoll_ctl(out, EPOLL_CTL_ADD, fd, &ev);
    ev.events = EPOLLIN;
    int rc = epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
    printf("add twice %d %s\n", rc, en(errno));
    printf("idle lt %d et %d\n", ewait(lt, 100, NULL), ewait(et, 0, NULL));
    uint32_t e;
    int n = ewait(out, 1000, &e);
    struct epoll_event got[4];
    printf("out %d %x\n", n, e);
    write_full(fd, "w", 1);
    n = epoll_wait(lt, got, 4, 3000);
    printf("lt %d %x data %llu\n", n, got[0].events, (unsigned long long)got[0].data.u64);
    printf("lt again %d\n", ewait(lt, 0, NULL));
    printf("et %d, again %d\n", ewait(et, 1000, NULL), ewait(et, 100, NULL));
    printf("oneshot %d, again %d\n", ewait(one, 1000, NULL), ewait(one, 100, NULL));
    printf("zero %d\n", ewait(zero, 100, NULL));
    printf("nested %d\n", ewait(outer, 1000, NULL));
    char c;
    (void)!read(fd, &c, 1);
    printf("lt drained %d, nested drained %d\n", ewait(lt, 100, NULL), ewait(outer, 100, NULL));
    write_full(fd, "w", 1);
    printf("et new data %d\n", ewait(et, 1000, NULL));
    printf("oneshot disarmed %d\n", ewait(one, 200, NULL));
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLONESHOT, .data.u64 = 43};
    epoll_ctl(one, EPOLL_CTL_MOD, fd, &ev);
    n = epoll_wait(one, got, 4, 1000);
    printf("oneshot rearmed %d data %llu\n", n, (unsigned long long)got[0].data.u64);
    (void)!read(fd, &c, 1);
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLRDHUP, .data.u64 = 44};
    epoll_ctl(lt, EPOLL_CTL_MOD, fd, &ev);
    write_full(fd, "s", 1);
    n = ewait(lt, 3000, &e);
    printf("rdhup %d %x\n", n, e);
    epoll_ctl(lt, EPOLL_CTL_DEL, fd, NULL);
    printf("deleted %d\n", ewait(lt, 100, NULL));
    rc = epoll_ctl(lt, EPOLL_CTL_DEL, fd, NULL);
    printf("del again %d %s\n", rc, en(errno));
    rc = epoll_ctl(lt, EPOLL_CTL_MOD, fd, &ev);
    printf("mod deleted %d %s\n", rc, en(errno));
    ev = (struct epoll_event){.events = EPOLLOUT, .data.u64 = 45}; /* added anew: other events */
    rc = epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
    n = epoll_wait(lt, got, 4, 1000);
    printf("added again %d: %d %x data %llu\n", rc, n, n > 0 ? got[0].events : 0,
           (unsigned long long)(n > 0 ? got[0].data.u64 : 0));
    rc = epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
    printf("add twice %d %s\n", rc, en(errno));
    close(fd);
}

/* Registrations on the same-node path are looked at by the epoll waits themselves (the
 * library's lazy arming): a set nested in another, a poll on a set's descriptor, a nested
 * set looked at without sleeping, and two threads asleep in two sets (one wakes, the other
 * must still wake) each see the peer's late answer; an edge-triggered one reports bytes
 * that came since, not bytes still there. */
struct lazy_sleeper {
    int ep, n;
};

static void *lazy_sleep(void *arg)
{
    struct lazy_sleeper *z = arg;
    z->n = ewait(z->ep, 5000, NULL);
    return NULL;
}

static void lazy_read(int fd, int ep) /* a byte asked, waited for in ep, read */
{
    char c;
    write_full(fd, "w", 1);
    if (ewait(ep, 3000, NULL) != 1 || read(fd, &c, 1) != 1) printf("no answer\n");
}

static void s_eplazy(void)
{
    int fd = dial(), s = epoll_create1(0), t = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
    epoll_ctl(s, EPOLL_CTL_ADD, fd, &ev);
    ev.data.u64 = 2;
    epoll_ctl(t, EPOLL_CTL_ADD, s, &ev);
    char c;
    for (int i = 0; i < 3; i++) {
        lazy_read(fd, s);
        write_full(fd, "d", 1); /* its answer comes in 300 ms: the outer set's wait sleeps */
        int n = ewait(t, 3000, NULL);
        printf("nested %d: %d, inner %d, read %zd\n", i, n, ewait(s, 0, NULL), read(fd, &c, 1));
    }
    lazy_read(fd, s);
    write_full(fd, "d", 1);
    struct pollfd p = {s, POLLIN, 0};
    int n = poll(&p, 1, 3000);
    printf("poll on the set: %d %x, read %zd\n", n, p.revents, read(fd, &c, 1));
    lazy_read(fd, s);
    write_full(fd, "w", 1);
    long t0 = now_ms();
    while (!(n = ewait(t, 0, NULL)) && now_ms() - t0 < 3000) continue;
    printf("nested, looked at without sleeping: %d, read %zd\n", n, read(fd, &c, 1));

    /* edge-triggered: an event for bytes that came since, not for bytes still there */
    int fe = dial(), e = epoll_create1(0);
    ev = (struct epoll_event){.events = EPOLLIN | EPOLLET, .data.u64 = 4};
    epoll_ctl(e, EPOLL_CTL_ADD, fe, &ev);
    lazy_read(fe, e);
    printf("et idle %d\n", ewait(e, 100, NULL));
    write_full(fe, "b", 1); /* six bytes */
    char six[6];
    n = ewait(e, 3000, NULL);
    printf("et six: %d, read %zd, again %d\n", n, read(fe, six, 2), ewait(e, 100, NULL));
    write_full(fe, "d", 1);
    n = ewait(e, 3000, NULL);
    printf("et one more: %d, read %zd\n", n, read_full(fe, six, 5));
    close(fe);

    int fa = dial(), fc = dial();
    struct lazy_sleeper a = {epoll_create1(0), -1}, z = {epoll_create1(0), -1};
    ev.data.u64 = 3;
    epoll_ctl(a.ep, EPOLL_CTL_ADD, fa, &ev);
    epoll_ctl(z.ep, EPOLL_CTL_ADD, fc, &ev);
    lazy_read(fa, a.ep);
    lazy_read(fc, z.ep);
    pthread_t ta, tz;
    pthread_create(&ta, NULL, lazy_sleep, &a);
    pthread_create(&tz, NULL, lazy_sleep, &z);
    ms_sleep(100); /* both asleep, as a rule (else this tests less, and still passes) */
    write_full(fc, "w", 1);
    pthread_join(tz, NULL);
    write_full(fa, "d", 1);
    pthread_join(ta, NULL);
    printf("two sleepers: %d %d, read %zd %zd\n", z.n, a.n, read(fc, &c, 1), read(fa, &c, 1));
    close(fa);
    close(fc);
    close(fd);
}

static void s_sigpipe(void)
{
    signal(SIGPIPE, on_pipe);
    int fd = dial();
    write_full(fd, "q", 1);
    char c;
    printf("eof %zd\n", read(fd, &c, 1));
    ssize_t w = 0;
    for (int i = 0; i < 100 && w >= 0; i++) {
        w = write(fd, "x", 1);
        if (w >= 0) ms_sleep(10);
    }
    printf("write %s sigpipe %d\n", en(w < 0 ? errno : 0), pipes > 0);
    int before = pipes;
    w = send(fd, "x", 1, MSG_NOSIGNAL);
    printf("nosignal %s new sigpipe %d\n", en(w < 0 ? errno : 0), pipes - before);
    close(fd);
}

static void s_linger0(void)
{
    int fd = dial();
    write_full(fd, "l", 1);
    char c;
    ssize_t r = read(fd, &c, 1);
    printf("read %zd %s\n", r, en(r < 0 ? errno : 0));
    close(fd);
}

static void s_nonblock(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(fd, (struct sockaddr *)&where, sizeof where);
    printf("connect %d %s\n", r, en(r < 0 ? errno : 0));
    struct pollfd p = {fd, POLLOUT, 0};
    int pr = poll(&p, 1, 3000);
    printf("poll %d %x\n", pr, p.revents);
    int e = -1;
    socklen_t l = sizeof e;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
    printf("so_error %s\n", en(e));
    char c;
    ssize_t n = read(fd, &c, 1);
    printf("read empty %zd %s\n", n, en(n < 0 ? errno : 0));
    write_full(fd, "w", 1);
    p.events = POLLIN;
    pr = poll(&p, 1, 3000);
    n = read(fd, &c, 1);
    printf("poll %d %x read %zd\n", pr, p.revents, n);
    close(fd);
    struct sockaddr_in closed = where;
    closed.sin_port = htons((uint16_t)(ntohs(where.sin_port) + 1)); /* nobody listens */
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    r = connect(fd, (struct sockaddr *)&closed, sizeof closed);
    printf("closed port connect %s\n",
           r < 0 && errno == EINPROGRESS ? "EINPROGRESS" : en(r < 0 ? errno : 0));
    p = (struct pollfd){fd, POLLOUT, 0};
    poll(&p, 1, 3000);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
    printf("closed port so_error %s\n", en(e));
    close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    r = connect(fd, (struct sockaddr *)&closed, sizeof closed);
    printf("blocking closed port %d %s\n", r, en(r < 0 ? errno : 0));
    close(fd);
}

static void s_timeo(void)
{
    int fd = dial();
    struct timeval tv = {0, 200000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long t0 = now_ms();
    char c;
    ssize_t r = read(fd, &c, 1);
    long dt = now_ms() - t0;
    printf("rcvtimeo %zd %s %s\n", r, en(r < 0 ? errno : 0),
           dt >= 150 && dt < 1000 ? "in time" : "OUT OF TIME");
    close(fd);
    /* SO_SNDTIMEO: a write to a peer that reads nothing (for 3 s), once every buffer on the
     * way is full */
    fd = dial();
    write_full(fd, "Z", 1);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    static char zero[65536];
    size_t filled = 0;
    ssize_t w;
    while ((w = write(fd, zero, sizeof zero)) > 0 && filled < (64u << 20)) filled += (size_t)w;
    int fe = w < 0 ? errno : 0;
    fcntl(fd, F_SETFL, 0);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    t0 = now_ms();
    w = write(fd, zero, 1);
    int we = w < 0 ? errno : 0;
    dt = now_ms() - t0;
    printf("full: %s; sndtimeo %zd %s %s\n", en(fe), w, en(we),
           dt >= 150 && dt < 1000 ? "in time" : "OUT OF TIME");
    close(fd);
}

static void s_eintr(void)
{
    int fd = dial();
    struct sigaction sa = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART */
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL);
    char c;
    ssize_t r = read(fd, &c, 1);
    printf("no restart: %zd %s alarms %d\n", r, en(r < 0 ? errno : 0), (int)alarms);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    write_full(fd, "d", 1); /* "x" after 300 ms */
    setitimer(ITIMER_REAL, &it, NULL);
    r = read(fd, &c, 1);
    printf("restart: %zd %s alarms %d\n", r, en(r < 0 ? errno : 0), (int)alarms);
    close(fd);
}

/* rdpwait: a thread asleep in a read is the only one waiting, which the library lets sleep
 * in the read of its RDP socket itself (wait.c): a signal handler that reads another
 * connection on top of that read, and then a second thread that polls while the first
 * reads, must each get their bytes, and the sleeper its own */
static int handler_fd = -1;
static char handler_got = '-';

static void on_alarm_read(int s)
{
    (void)s;
    char c;
    int e = errno;
    if (read(handler_fd, &c, 1) == 1) handler_got = c;
    errno = e;
}

static char waited_got = '-';
static void *read_one(void *arg)
{
    char c;
    if (read(*(int *)arg, &c, 1) == 1) waited_got = c;
    return NULL;
}

static void s_rdpwait(void)
{
    int a = dial(), b = dial();
    struct sigaction sa = {.sa_handler = on_alarm_read, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    handler_fd = b;
    write_full(b, "d", 1); /* "x" after 300 ms on each */
    write_full(a, "d", 1);
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_REAL, &it, NULL); /* the handler reads b while we read a */
    char c = '-';
    ssize_t r = read(a, &c, 1);
    printf("under a handler: %zd %c, the handler's %c\n", r, c, handler_got);
    signal(SIGALRM, SIG_DFL);
    pthread_t t;
    pthread_create(&t, NULL, read_one, &a);
    ms_sleep(100); /* it sleeps in its read */
    write_full(b, "d", 1);
    write_full(a, "d", 1);
    struct pollfd p = {.fd = b, .events = POLLIN};
    int n = poll(&p, 1, 5000);
    r = n == 1 ? read(b, &c, 1) : -1;
    pthread_join(t, NULL);
    printf("poll beside a read: %d %zd %c, the read's %c\n", n, r, c, waited_got);
    close(a);
    close(b);
}

/* cancel: a thread blocked in a read, a poll or an epoll_wait on a connection is cancelled
 * (each is a cancellation point); the connection goes on working for the threads that are
 * left: a read, a poll and a read, an epoll_wait and a read */
struct sleeper_arg {
    int fd, how, ep; /* how: 0 read, 1 poll, 2 epoll_wait on ep */
};

static void *sleep_until_cancelled(void *arg)
{
    struct sleeper_arg *s = arg;
    char c;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    struct epoll_event ev;
    if (s->how == 2)
        (void)!epoll_wait(s->ep, &ev, 1, -1);
    else if (s->how == 1)
        (void)!poll(&p, 1, -1);
    else
        (void)!read(s->fd, &c, 1);
    return NULL;
}

static void s_cancel(void)
{
    int a = dial();
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = a};
    epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
    const char *name[] = {"read", "read", "poll", "epoll_wait"};
    for (int round = 0; round < 4; round++) {
        struct sleeper_arg sa = {a, round < 2 ? 0 : round - 1, ep};
        pthread_t t;
        pthread_create(&t, NULL, sleep_until_cancelled, &sa);
        ms_sleep(100); /* it sleeps */
        pthread_cancel(t);
        void *res = NULL;
        pthread_join(t, &res);
        write_full(a, "w", 1); /* "x" back */
        char c = '-';
        int n = 1;
        if (round == 1) {
            struct pollfd p = {.fd = a, .events = POLLIN};
            n = poll(&p, 1, 5000);
        } else if (round == 3) {
            n = epoll_wait(ep, &ev, 1, 5000);
        }
        ssize_t r = n == 1 ? read(a, &c, 1) : -1;
        printf("cancelled in %s %d, then: %d %zd %c\n", name[round], res == PTHREAD_CANCELED, n, r,
               c);
    }
    close(ep);
    close(a);
}

/* threadfds: threads that each waited once on a connection leave no descriptor behind
 * when they end (the library's wake-up eventfd of a thread is the thread's) */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void *one_trip(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char c = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    write_full(fd, "w", 1);
    return poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 1 && c == 'x' ? arg : NULL;
}

static void s_threadfds(void)
{
    int fd = dial();
    int ok = one_trip((void *)(intptr_t)fd) != NULL, before = count_fds();
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        void *res = NULL;
        if (pthread_create(&t, NULL, one_trip, (void *)(intptr_t)fd) != 0) break;
        pthread_join(t, &res);
        ok += res != NULL;
    }
    printf("round trips %d, descriptors left by 200 threads: %d\n", ok, count_fds() - before);
    close(fd);
}

/* closefrom: a program closes what it does not know of by the other routes than close:
 * closefrom (glibc calls the system call inside itself), syscall(SYS_close_range), and
 * fclose of a stream on a copy of the socket (the C library closes that descriptor inside
 * itself; the stream is not used: glibc's stdio reads and writes by calls inside itself,
 * which no preload library sees); the connection goes on, and the number the stream had is
 * a plain pipe's next */
static void s_closefrom(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char b[2];
    write_full(fd, "hi", 2);
    printf("before %zd\n", read_full(fd, b, 2));
    closefrom(fd + 1);
    write_full(fd, "ho", 2);
    printf("after closefrom: %zd\n", read_full(fd, b, 2));
    syscall(SYS_close_range, fd + 1, ~0u, 0);
    write_full(fd, "hu", 2);
    printf("after syscall(SYS_close_range): %zd\n", read_full(fd, b, 2));
    int d = dup(fd);
    FILE *f = fdopen(d, "r");
    printf("fclose %d\n", fclose(f));
    write_full(fd, "hy", 2);
    printf("after fclose of a stream on a copy: %zd\n", read_full(fd, b, 2));
    int p[2];
    if (pipe2(p, O_NONBLOCK) < 0) return;
    write_full(p[1], "zz", 2);
    ssize_t n = read(p[0], b, 2);
    printf("a pipe on the numbers after: %s %zd %s\n", p[0] == d ? "same number" : "other number",
           n, en(n < 0 ? errno : 0));
    close(p[0]);
    close(p[1]);
    close(fd);
}

/* closerace: a thread busy on a connection (a byte each way, in a loop) while another
 * closes the descriptor under it, the program's own race: the busy thread's calls end (its
 * echo, then EOF or EBADF), and the connection made next, which may get the same number,
 * is the new one; 100 times */
static void *busy_trips(void *arg)
{
    int fd = *(int *)arg;
    char c;
    while (write(fd, "w", 1) == 1 && read(fd, &c, 1) == 1) {
    }
    return NULL;
}

static void s_closerace(void)
{
    int ok = 0;
    for (int i = 0; i < 100; i++) {
        int fd = dial();
        pthread_t t;
        pthread_create(&t, NULL, busy_trips, &fd);
        ms_sleep(i % 3);
        close(fd);
        pthread_join(t, NULL);
        ok += one_trip((void *)(intptr_t)(fd = dial())) != NULL;
        close(fd);
    }
    printf("closed under a busy thread 100 times, the next connection works: %d\n", ok);
}

/* cancelall: a cancellation at each cancellation point the library wraps, pending when the
 * call starts and acting in its sleep, and at random moments of calls in a loop; after
 * each, a new connection works (the lock checker of the ASan tree aborts a process whose
 * thread ended holding a lock of the library's, and LSan reports what was not freed) */
enum cx_call {
    CX_READ,
    CX_RECV,
    CX_READV,
    CX_RECVMSG,
    CX_WRITE,
    CX_POLL,
    CX_POLL_BIG,
    CX_PPOLL,
    CX_SELECT,
    CX_PSELECT,
    CX_EPOLL,
    CX_EPOLL_PWAIT,
    CX_CONNECT,
    CX_ACCEPT,
    CX_CLOSE,
    CX_SHUTDOWN,
    CX__N
};
static const char *const cx_name[CX__N] = {"read",    "recv",    "readv",      "recvmsg",
                                           "write",   "poll",    "poll of 20", "ppoll",
                                           "select",  "pselect", "epoll_wait", "epoll_pwait",
                                           "connect", "accept",  "close",      "shutdown"};

struct cx {
    enum cx_call how;
    int fd, ep, pipe, lfd;
    bool pend;
    const struct sockaddr_in *to;
    volatile int state; /* 1: ready for the pending cancellation, 2: it is pending */
};

static void *cx_call(void *arg)
{
    struct cx *x = arg;
    if (x->pend) { /* pending when the call starts */
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        __atomic_store_n(&x->state, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&x->state, __ATOMIC_SEQ_CST) != 2) ms_sleep(1);
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    }
    static char big[8 << 20];
    char c;
    struct iovec v = {&c, 1};
    struct msghdr mh = {.msg_iov = &v, .msg_iovlen = 1};
    struct pollfd p[20];
    for (int i = 0; i < 20; i++)
        p[i] = (struct pollfd){.fd = i ? x->pipe : x->fd, .events = POLLIN};
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(x->fd, &rs);
    struct epoll_event ev;
    sigset_t none;
    sigemptyset(&none);
    switch (x->how) {
    case CX_READ:
        (void)!read(x->fd, &c, 1);
        break;
    case CX_RECV:
        (void)!recv(x->fd, &c, 1, 0);
        break;
    case CX_READV:
        (void)!readv(x->fd, &v, 1);
        break;
    case CX_RECVMSG:
        (void)!recvmsg(x->fd, &mh, 0);
        break;
    case CX_WRITE: /* the peer reads nothing for a while: it fills, and a write sleeps */
        while (write(x->fd, big, sizeof big) > 0) {
        }
        break;
    case CX_POLL:
        (void)!poll(p, 1, -1);
        break;
    case CX_POLL_BIG:
        (void)!poll(p, 20, -1);
        break;
    case CX_PPOLL:
        (void)!ppoll(p, 1, NULL, &none);
        break;
    case CX_SELECT:
        (void)!select(x->fd + 1, &rs, NULL, NULL, NULL);
        break;
    case CX_PSELECT:
        (void)!pselect(x->fd + 1, &rs, NULL, NULL, NULL, &none);
        break;
    case CX_EPOLL:
        (void)!epoll_wait(x->ep, &ev, 1, -1);
        break;
    case CX_EPOLL_PWAIT:
        (void)!epoll_pwait(x->ep, &ev, 1, -1, &none);
        break;
    case CX_CONNECT: /* to a listener whose queue is full: the SYN goes unanswered */
        (void)!connect(x->fd, (const struct sockaddr *)x->to, sizeof *x->to);
        break;
    case CX_ACCEPT:
        (void)!accept(x->lfd, NULL, NULL);
        break;
    case CX_CLOSE:
        (void)!close(x->fd);
        break;
    case CX_SHUTDOWN: /* not a cancellation point: it is done, and the thread goes on */
        (void)!shutdown(x->fd, SHUT_RD);
        break;
    default:
        break;
    }
    return arg;
}

/* A listener of this process on 127.0.0.1 (a port of the kernel's choice), its queue
 * filled by one connection that it never accepts (backlog 0) */
static int cx_listener(struct sockaddr_in *at, int *filler)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 0) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0)
        return -1;
    *at = a;
    if (filler) { /* (nonblocking: nobody accepts it, and a blocking one would wait for
                   * its negotiation under the library's PSP_SYNC) */
        *filler = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        (void)!connect(*filler, (struct sockaddr *)&a, sizeof a);
        ms_sleep(50);
    }
    return l;
}

static bool cx_works(void)
{
    int fd = dial();
    bool ok = one_trip((void *)(intptr_t)fd) != NULL;
    close(fd);
    return ok;
}

/* One cancellation of how: pending at the call's start (pend), or in its sleep. */
static void cx_one(enum cx_call how, bool pend)
{
    struct cx x = {.how = how, .pend = pend, .fd = -1, .ep = -1, .pipe = -1, .lfd = -1};
    int pp[2] = {-1, -1}, filler = -1, lfd2 = -1;
    struct sockaddr_in to;
    if (how == CX_CONNECT) {
        x.lfd = cx_listener(&to, &filler);
        x.to = &to;
        x.fd = socket(AF_INET, SOCK_STREAM, 0);
    } else if (how == CX_ACCEPT) {
        x.lfd = lfd2 = cx_listener(&to, NULL);
    } else {
        x.fd = dial();
        if (how == CX_WRITE) write_full(x.fd, "S", 1);
        if (pipe(pp) == 0) x.pipe = pp[0];
        x.ep = epoll_create1(0);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = x.fd};
        epoll_ctl(x.ep, EPOLL_CTL_ADD, x.fd, &ev);
    }
    pthread_t t;
    pthread_create(&t, NULL, cx_call, &x);
    if (pend) {
        while (__atomic_load_n(&x.state, __ATOMIC_SEQ_CST) != 1) ms_sleep(1);
        pthread_cancel(t);
        __atomic_store_n(&x.state, 2, __ATOMIC_SEQ_CST);
    } else {
        ms_sleep(150); /* it sleeps */
        pthread_cancel(t);
    }
    void *res = NULL;
    pthread_join(t, &res);
    bool open = x.fd >= 0 && fcntl(x.fd, F_GETFD) >= 0;
    printf("cancel %s %s: %s%s, then %s\n", cx_name[how], pend ? "pending" : "asleep",
           res == PTHREAD_CANCELED ? "cancelled" : "not cancelled",
           how == CX_CLOSE ? (open ? " (still open)" : " (closed)") : "",
           cx_works() ? "works" : "FAILS");
    if (open) close(x.fd);
    if (x.ep >= 0) close(x.ep);
    if (pp[0] >= 0) close(pp[0]);
    if (pp[1] >= 0) close(pp[1]);
    if (x.lfd >= 0) close(x.lfd);
    if (filler >= 0) close(filler);
}

/* Random moments: a thread loops over a call (and what it needs); cancelled after a random
 * time it may be anywhere, in the library or not */
enum { CR_TRIP, CR_POLL, CR_EPOLL, CR_DIAL, CR__N };
static const char *const cr_name[CR__N] = {"write and read", "poll", "epoll_wait", "connect"};
struct cr {
    int how, fd, ep;
};

static void close_fd(void *arg)
{
    int *fd = arg;
    if (*fd >= 0) close(*fd);
}

static void *cr_loop(void *arg)
{
    struct cr *r = arg;
    char c;
    for (;;) {
        if (r->how == CR_DIAL) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            pthread_cleanup_push(close_fd, &fd);
            if (connect(fd, (struct sockaddr *)&where, sizeof where) == 0) {
                write_full(fd, "w", 1);
                (void)!read(fd, &c, 1);
            }
            pthread_cleanup_pop(1);
            continue;
        }
        write_full(r->fd, "w", 1);
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        struct epoll_event ev;
        if (r->how == CR_POLL) (void)!poll(&p, 1, 5000);
        if (r->how == CR_EPOLL) (void)!epoll_wait(r->ep, &ev, 1, 5000);
        if (read(r->fd, &c, 1) != 1) break;
    }
    return NULL;
}

static void s_cancelall(void)
{
    for (int how = 0; how < CX__N; how++) {
        cx_one((enum cx_call)how, true);
        if (how != CX_CLOSE && how != CX_SHUTDOWN) cx_one((enum cx_call)how, false);
    }
    unsigned seed = 1;
    for (int how = 0; how < CR__N; how++) {
        for (int i = 0; i < 30; i++) {
            struct cr r = {.how = how, .fd = how == CR_DIAL ? -1 : dial(), .ep = epoll_create1(0)};
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = r.fd};
            if (r.fd >= 0) epoll_ctl(r.ep, EPOLL_CTL_ADD, r.fd, &ev);
            pthread_t t;
            pthread_create(&t, NULL, cr_loop, &r);
            struct timespec ts = {0, (long)(rand_r(&seed) % 3000) * 1000};
            nanosleep(&ts, NULL);
            pthread_cancel(t);
            pthread_join(t, NULL);
            close(r.ep);
            if (r.fd >= 0) close(r.fd);
        }
        printf("cancelled at random moments in %s: then %s\n", cr_name[how],
               cx_works() ? "works" : "FAILS");
    }
}

/* short: PLSEM_SHORT (100000) connections one after the other, each a byte each way and
 * closed by us first (its port stays in TIME_WAIT here): a program that makes many short
 * connections runs out of no port the kernel alone would not run out of (test/shell/
 * preload_short.sh) */
static void s_short(void)
{
    const char *v = getenv("PLSEM_SHORT");
    long n = v && *v ? atol(v) : 100000, ok = 0;
    int first = 0;
    for (long i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        char c = 0;
        if (connect(fd, (struct sockaddr *)&where, sizeof where) == 0 && write(fd, "w", 1) == 1 &&
            read(fd, &c, 1) == 1 && c == 'x')
            ok++;
        else if (!first)
            first = errno ? errno : -1;
        close(fd);
    }
    printf("short connections %ld: %ld answered%s%s\n", n, ok, first ? ", the first failure: " : "",
           first > 0 ? en(first)
           : first   ? "no answer"
                     : "");
}

/* epclose: the program closes an epoll set holding the connection and makes a new one,
 * which gets the old set's number; the connection then moves to its kernel socket (urgent
 * data): nothing of the old set's registration may show in the new one */
static void s_epclose(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    int a = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
    epoll_ctl(a, EPOLL_CTL_ADD, fd, &ev);
    close(a);
    int b = epoll_create1(0);
    printf("a new set on the old number: %d\n", b == a);
    printf("urgent %zd\n", send(fd, "!", 1, MSG_OOB));
    char buf[2];
    write_full(fd, "hi", 2);
    printf("the new set reports %d\n", ewait(b, 300, NULL)); /* (the echo is there by then) */
    printf("echo %zd\n", read_full(fd, buf, 2));
    close(b);
    close(fd);
}

/* calls: the rest of the descriptor and option calls, each compared with the kernel: dup3
 * and F_DUPFD (not close-on-exec), fcntl64 (the _FILE_OFFSET_BITS=64 name of fcntl),
 * close_range on the copies (the original goes on) and with CLOSE_RANGE_CLOEXEC,
 * epoll_pwait2 with a timeout (none, then one event), SO_RCVBUF and SO_SNDBUF, TCP_NODELAY,
 * and SIOCINQ */
static void s_calls(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char b[8];
    int d3 = dup3(fd, 200, O_CLOEXEC);
    write_full(d3, "ab", 2);
    printf("dup3 %d cloexec %d: %zd\n", d3, (fcntl(d3, F_GETFD) & FD_CLOEXEC) != 0,
           read_full(d3, b, 2));
    int dn = fcntl(fd, F_DUPFD, 150);
    write_full(dn, "cd", 2);
    printf("F_DUPFD %d cloexec %d: %zd\n", dn >= 150, (fcntl(dn, F_GETFD) & FD_CLOEXEC) != 0,
           read_full(fd, b, 2));
    int d64 = fcntl64(fd, F_DUPFD_CLOEXEC, 170);
    write_full(d64, "ef", 2);
    printf("fcntl64 %d flags %d: %zd\n", d64 >= 170, fcntl64(d64, F_GETFL) & O_NONBLOCK,
           read_full(d64, b, 2));
    int lo = dn < d3 ? dn : d3, hi = d64 > d3 ? d64 : d3;
    printf("close_range %d\n", close_range((unsigned)lo, (unsigned)hi, 0));
    printf("closed %d %d %d\n", fcntl(d3, F_GETFD) < 0, fcntl(dn, F_GETFD) < 0,
           fcntl(d64, F_GETFD) < 0);
    write_full(fd, "gh", 2);
    printf("original after: %zd\n", read_full(fd, b, 2));
    int cr = close_range((unsigned)fd, (unsigned)fd, CLOSE_RANGE_CLOEXEC);
    printf("close_range cloexec %d: %d\n", cr, (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    struct timespec t10 = {0, 10000000}, t3 = {3, 0};
    printf("epoll_pwait2 nothing yet: %d\n", epoll_pwait2(ep, &out, 1, &t10, NULL));
    write_full(fd, "i", 1);
    printf("epoll_pwait2: %d\n", epoll_pwait2(ep, &out, 1, &t3, NULL));
    printf("then %zd\n", read_full(fd, b, 1));
    close(ep);
    /* (each call before the value it sets is printed) */
    int opts[3][2] = {{SOL_SOCKET, SO_RCVBUF}, {SOL_SOCKET, SO_SNDBUF}, {IPPROTO_TCP, TCP_NODELAY}};
    const char *oname[3] = {"SO_RCVBUF", "SO_SNDBUF", "TCP_NODELAY"};
    for (int i = 0; i < 3; i++) {
        int v = i < 2 ? 65536 : 1, got = -1;
        socklen_t l = sizeof got;
        int rs = setsockopt(fd, opts[i][0], opts[i][1], &v, sizeof v);
        int rg = getsockopt(fd, opts[i][0], opts[i][1], &got, &l);
        printf("%s set %d get %d %d\n", oname[i], rs, rg, got);
    }
    write_full(fd, "jklmno", 6);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, 3000);
    ms_sleep(100); /* all six back */
    int inq = -1;
    int ri = ioctl(fd, SIOCINQ, &inq);
    printf("SIOCINQ %d %d\n", ri, inq);
    printf("then %zd\n", read_full(fd, b, 6));
    close(fd);
    /* the connection ended with the original's close (the copies close_range closed hold it
     * no more): the server, which serves one connection at a time, answers the next */
    int n2 = dial();
    printf("the next connection: %s\n", one_trip((void *)(intptr_t)n2) ? "answered" : "NOT");
    close(n2);
}

/* accept2: two connections to a server whose two threads are both in accept */
static void s_accept2(void)
{
    int a = dial(), b = dial();
    write_full(a, "e", 1);
    write_full(b, "e", 1);
    char x[2];
    write_full(a, "A", 1);
    write_full(b, "B", 1);
    ssize_t ra = read_full(a, x, 1), rb = read_full(b, x + 1, 1);
    printf("accept2: %zd %zd %.2s\n", ra, rb, x);
    close(a);
    close(b);
}

/* forkclose: a fork's child closes the connection and exits; the parent goes on with it */
static void s_forkclose(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    pid_t k = fork();
    if (k == 0) {
        close(fd);
        _exit(0);
    }
    int st = 0;
    waitpid(k, &st, 0);
    char b[4];
    write_full(fd, "abcd", 4);
    printf("child exit %d, parent: %zd\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           read_full(fd, b, 4));
    close(fd);
}

/* daemon: a process that daemon()s (fork, setsid, the parent exits) goes on with the
 * connection it had; its result comes back through a pipe */
static void s_daemon(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    int pp[2];
    if (pipe(pp) < 0) return;
    pid_t k = fork();
    if (k == 0) {
        close(pp[0]);
        if (daemon(1, 1) < 0) _exit(1);
        char b[4], msg[64];
        write_full(fd, "wxyz", 4);
        ssize_t r = read_full(fd, b, 4);
        int n = snprintf(msg, sizeof msg, "daemon %zd %.4s sid %d", r, b, getsid(0) == getpid());
        write_full(pp[1], msg, (size_t)n);
        _exit(0);
    }
    close(pp[1]);
    int st = 0;
    waitpid(k, &st, 0);
    char msg[64] = "";
    ssize_t n = read(pp[0], msg, sizeof msg - 1);
    printf("daemon's parent exit %d; %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           n > 0 ? msg : "nothing");
    close(pp[0]);
    close(fd);
}

/* others: what is not a TCP connection between nodes is the kernel's, under the library as
 * without it: a UNIX socket pair, UDP on loopback, a pipe and a file, read, written and
 * polled, beside a connection that is accelerated */
static void s_others(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    int sv[2];
    char b[16] = "";
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write_full(sv[0], "unix", 4);
    struct pollfd p[2] = {{.fd = sv[1], .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    int n = poll(p, 2, 1000);
    ssize_t ur = read(sv[1], b, 16);
    printf("unix: poll %d %d %d, read %zd\n", n, p[0].revents, p[1].revents, ur);
    close(sv[0]);
    printf("unix: after the peer's close %zd\n", read(sv[1], b, 16));
    close(sv[1]);
    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t ul = sizeof ua;
    bind(u2, (struct sockaddr *)&ua, sizeof ua);
    getsockname(u2, (struct sockaddr *)&ua, &ul);
    ssize_t w = sendto(u1, "udp!", 4, 0, (struct sockaddr *)&ua, sizeof ua);
    ssize_t r = recvfrom(u2, b, sizeof b, 0, NULL, NULL);
    printf("udp: %zd %zd %.4s\n", w, r, b);
    close(u1);
    close(u2);
    int pp[2];
    if (pipe(pp) == 0) {
        write_full(pp[1], "pipe", 4);
        close(pp[1]);
        ssize_t r1 = read(pp[0], b, 16), r2 = read(pp[0], b, 16);
        printf("pipe: %zd then %zd\n", r1, r2);
        close(pp[0]);
    }
    char path[] = "/tmp/plsem.XXXXXX";
    int f = mkstemp(path);
    if (f >= 0) {
        unlink(path);
        write_full(f, "a file", 6);
        struct stat st;
        fstat(f, &st);
        lseek(f, 0, SEEK_SET);
        printf("file: size %lld, read %zd\n", (long long)st.st_size, read(f, b, 16));
        close(f);
    }
    write_full(fd, "tcp", 3);
    printf("and the connection: %zd\n", read_full(fd, b, 3));
    close(fd);
}

static void s_dup(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    int d = dup(fd);
    close(fd);
    write_full(d, "hi", 2);
    char b[2];
    printf("dup %zd\n", read_full(d, b, 2));
    int d2 = dup2(d, 100);
    close(d);
    write_full(d2, "ho", 2);
    printf("dup2 %d %zd\n", d2, read_full(d2, b, 2));
    int d3 = fcntl(d2, F_DUPFD_CLOEXEC, 50);
    printf("cloexec %d %d\n", d3 >= 50, (fcntl(d3, F_GETFD) & FD_CLOEXEC) != 0);
    write_full(d3, "hu", 2);
    printf("dupfd %zd\n", read_full(d2, b, 2));
    close(d2);
    close(d3);
}

static void s_names(void)
{
    int fd = dial();
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    printf("sockname family %d port set %d\n", a.sin_family, a.sin_port != 0);
    l = sizeof a;
    getpeername(fd, (struct sockaddr *)&a, &l);
    printf("peername port ok %d\n", a.sin_port == where.sin_port);
    int v = 0;
    l = sizeof v;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l);
    printf("type %d", v);
    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l);
    printf(" domain %d", v);
    struct stat st;
    fstat(fd, &st);
    printf(" sock %d\n", S_ISSOCK(st.st_mode));
    close(fd);
}

static int thread_fd;
static void *reader(void *arg)
{
    static char in[1 << 20];
    size_t *n = arg;
    ssize_t r = read_full(thread_fd, in, sizeof in);
    *n = r > 0 ? (size_t)r : 0;
    return NULL;
}

static void s_threads(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    thread_fd = fd;
    size_t got = 0;
    pthread_t t;
    pthread_create(&t, NULL, reader, &got);
    static char out[1 << 20];
    write_full(fd, out, sizeof out);
    pthread_join(t, NULL);
    printf("threads %zu\n", got);
    close(fd);
}

static void s_two(void)
{
    int a = dial(), b = dial();
    fcntl(a, F_SETFL, O_NONBLOCK);
    static char buf[65536];
    ssize_t w;
    size_t n = 0;
    while ((w = write(a, buf, sizeof buf)) > 0 && n < (512u << 20)) n += (size_t)w;
    printf("A stops: %s\n", w < 0 ? en(errno) : "NEVER");
    for (int i = 0; i < 256; i++) write_full(b, buf, sizeof buf);
    shutdown(b, SHUT_WR);
    char msg[32] = "";
    ssize_t r = read(b, msg, sizeof msg - 1);
    printf("B carried %s\n", r > 0 ? msg : "nothing");
    close(a);
    close(b);
}

static void s_many(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    static int fds[1000];
    int ok = 0, n = many_n();
    for (int i = 0; i < n; i++) {
        fds[i] = dial();
        write_full(fds[i], "m", 1);
    }
    for (int i = 0; i < n; i++) {
        char c = 0;
        ssize_t r = read(fds[i], &c, 1);
        if (r == 1 && c == 'm')
            ok++;
        else if (i - ok < 3)
            printf("connection %d: %zd %s\n", i, r, en(r < 0 ? errno : 0));
    }
    for (int i = 0; i < n; i++) close(fds[i]);
    printf("many %d\n", ok);
}

static void s_crash(void)
{
    int fd = dial();
    write_full(fd, "k", 1);
    char c;
    ssize_t r = read(fd, &c, 1);
    printf("after the peer's crash: %s\n",
           r == 0 || (r < 0 && errno == ECONNRESET) ? "eof or reset" : "DATA?");
    close(fd);
}

static void s_compute(void)
{
    int fd = dial();
    write_full(fd, "c", 1);
    static char in[1 << 20];
    long t0 = now_ms();
    ssize_t r = read_full(fd, in, sizeof in);
    printf("1 MiB while the peer computes: %zd %s\n", r, now_ms() - t0 < 2000 ? "in time" : "LATE");
    close(fd);
}

static void s_sendfile(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char path[] = "/tmp/plsem.XXXXXX";
    int f = mkstemp(path);
    unlink(path);
    static char out[1 << 20], in[1 << 20];
    for (size_t i = 0; i < sizeof out; i++) out[i] = (char)(i * 13);
    write_full(f, out, sizeof out);
    off_t off = 0;
    ssize_t n = sendfile(fd, f, &off, sizeof out);
    printf("sendfile %zd off %lld\n", n, (long long)off);
    printf("echo: %s\n", read_full(fd, in, sizeof in) == sizeof in && !memcmp(in, out, sizeof in)
                             ? "same"
                             : "DIFFERENT");
    int pp[2];
    if (pipe(pp) < 0) return;
    lseek(f, 0, SEEK_SET);
    size_t moved = 0;
    while (moved < 65536) { /* file -> pipe -> socket */
        ssize_t a = splice(f, NULL, pp[1], NULL, 65536 - moved, 0);
        if (a <= 0) break;
        for (ssize_t b = 0; b < a;) {
            ssize_t k = splice(pp[0], NULL, fd, NULL, (size_t)(a - b), 0);
            if (k <= 0) break;
            b += k;
        }
        moved += (size_t)a;
    }
    printf("spliced %zu\n", moved);
    printf("echo: %s\n",
           read_full(fd, in, 65536) == 65536 && !memcmp(in, out, 65536) ? "same" : "DIFFERENT");
    close(f);
    close(fd);
}

/* A program that closes every descriptor it does not know of (as daemons and shells do)
 * must not take the library's from under it. */
static void s_closeall(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char b[2];
    write_full(fd, "hi", 2);
    printf("before %zd\n", read_full(fd, b, 2));
    /* as daemons do it: every descriptor below the soft limit (sysconf(_SC_OPEN_MAX)),
     * which reaches the library's own (it keeps them in the top quarter of that range) */
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > (1l << 20)) max = 1l << 20;
    for (int i = 3; i < max; i++)
        if (i != fd) close(i);
    write_full(fd, "ho", 2);
    printf("after closing every descriptor below the limit but the socket: %zd\n",
           read_full(fd, b, 2));
    close(fd);
}

static void s_fork(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    static char out[100000], in[100000];
    for (size_t i = 0; i < sizeof out; i++) out[i] = (char)i;
    write_full(fd, out, sizeof out);
    printf("served by a child: %s\n",
           read_full(fd, in, sizeof in) == sizeof in && !memcmp(in, out, sizeof in) ? "same"
                                                                                    : "DIFFERENT");
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, in, 1));
    close(fd);
}

static void wait_bytes(int fd, int n);

/* after some bytes on the connection, fork; the parent closes its descriptor at once and
 * the child goes on with the connection alone (echo, then EOF) */
static void s_fork_close(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char b[8] = {0};
    write_full(fd, "ab", 2);
    printf("before: %zd %.2s\n", read_full(fd, b, 2), b);
    pid_t k = fork();
    if (k == 0) {
        struct timeval tv = {3, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        write_full(fd, "cdef", 4);
        ssize_t r = read_full(fd, b, 4);
        printf("child: %zd %.4s\n", r, b);
        shutdown(fd, SHUT_WR);
        printf("child eof %zd\n", read(fd, b, 1));
        fflush(stdout);
        _exit(0);
    }
    close(fd);
    int st = 0;
    waitpid(k, &st, 0);
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* a fork's child writes while the peer program touches nothing for 3 s: the write returns
 * at once, as on a kernel socket (the move to TCP must not wait for the peer's program) */
static void s_forkidle(void)
{
    int fd = dial();
    write_full(fd, "Z", 1);
    ms_sleep(100); /* the server has read its command and sleeps */
    pid_t k = fork();
    if (k == 0) {
        long t0 = now_ms();
        ssize_t w = write(fd, "x", 1);
        printf("child write %zd %s\n", w, now_ms() - t0 < 1500 ? "at once" : "late");
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    waitpid(k, &st, 0);
    char c = '-';
    ssize_t r = read(fd, &c, 1);
    printf("echo %zd %c\n", r, c);
    close(fd);
}

/* bytes received before the fork and not read by then are read once, by either process:
 * the parent reads 2 of 6, the child the other 4 */
static void s_fork_unread(void)
{
    int fd = dial();
    write_full(fd, "b", 1); /* the server writes "abcdef" */
    wait_bytes(fd, 6);
    char b[8] = {0};
    printf("parent: %zd %.2s\n", read(fd, b, 2), b);
    pid_t k = fork();
    if (k == 0) {
        struct timeval tv = {3, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        memset(b, 0, sizeof b);
        ssize_t r = recv(fd, b, 4, MSG_WAITALL);
        printf("child: %zd %.4s\n", r, b);
        fflush(stdout);
        _exit(0);
    }
    waitpid(k, NULL, 0);
    write_full(fd, "q", 1);
    printf("parent eof %zd\n", read(fd, b, 1));
    close(fd);
}

/* A connection to the echo server, one exchange on it printed, its number in num: what a
 * new image (plsem again) inherits. */
static int dial_for_heir(char *num, size_t n)
{
    int fd = dial();
    write_full(fd, "e", 1);
    char b[8] = {0};
    write_full(fd, "ab", 2);
    printf("before: %zd %.2s\n", read_full(fd, b, 2), b);
    fflush(stdout);
    snprintf(num, n, "%d", fd);
    return fd;
}

/* exec with the connection: the new image (plsem again, "execd") echoes on it */
static void s_exec_rdp(void)
{
    char num[16];
    dial_for_heir(num, sizeof num);
    execl("/proc/self/exe", "plsem", "execd", num, (char *)NULL);
    printf("exec failed: %s\n", strerror(errno));
}

/* The new image's part: 4 bytes each way on the inherited connection; with end, then its
 * end (after exec: nobody else has it), else nothing more (a spawn's parent goes on). */
static int heir(const char *num, const char *label, bool end)
{
    int fd = atoi(num);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[8] = {0};
    write_full(fd, "cdef", 4);
    ssize_t r = read_full(fd, b, 4);
    printf("%s: %zd %.4s\n", label, r, b);
    if (end) {
        shutdown(fd, SHUT_WR);
        printf("eof %zd\n", read(fd, b, 1));
    }
    return 0;
}

/* TCP_CORK and MSG_MORE hold bytes until uncorked, a plain send, or about 200 ms: the
 * server looks after each step (its 'K') */
static void s_cork(void)
{
    int fd = dial();
    char t;
    int one = 1, zero = 0, v = -1;
    write_full(fd, "K", 1);
    read_full(fd, &t, 1); /* the connection is up */
    setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
    write_full(fd, "abc", 3);
    read_full(fd, &t, 1); /* 1: nothing yet */
    setsockopt(fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
    read_full(fd, &t, 1); /* 2: abc */
    send(fd, "de", 2, MSG_MORE);
    read_full(fd, &t, 1); /* 3: nothing yet */
    send(fd, "f", 1, 0);
    read_full(fd, &t, 1); /* 4: def */
    send(fd, "gh", 2, MSG_MORE);
    read_full(fd, &t, 1); /* 5: nothing yet */
    read_full(fd, &t, 1); /* 6: gh, late */
    socklen_t l = sizeof v;
    getsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, &l);
    printf("cork done, TCP_CORK %d\n", v);
    close(fd);
}

/* MSG_OOB: "ab", the urgent "!", "cd"; the server takes the urgent byte at its mark */
static void s_oob(void)
{
    int fd = dial();
    char t, u = 0;
    write_full(fd, "O", 1);
    read_full(fd, &t, 1); /* the connection is up */
    write_full(fd, "ab", 2);
    printf("send oob %zd\n", send(fd, "!", 1, MSG_OOB));
    write_full(fd, "cd", 2);
    ssize_t r = recv(fd, &u, 1, MSG_OOB | MSG_DONTWAIT); /* none came this way */
    printf("recv oob here %zd %s\n", r, r < 0 ? en(errno) : "");
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, &t, 1));
    close(fd);
}

/* vfork (or posix_spawn) and exec of a program that uses the inherited connection; then
 * the parent goes on with it */
static void spawn_on(bool use_vfork)
{
    char num[16], b[8] = {0};
    int fd = dial_for_heir(num, sizeof num);
    char *argv[] = {"plsem", "spawned", num, NULL};
    pid_t k = -1;
    if (use_vfork) {
        k = vfork();
        if (k == 0) {
            execv("/proc/self/exe", argv);
            _exit(127);
        }
    } else if (posix_spawn(&k, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
        k = -1;
    }
    int st = 0;
    if (k > 0) waitpid(k, &st, 0);
    printf("child: %d exit %d\n", k > 0, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    memset(b, 0, sizeof b);
    write_full(fd, "gh", 2);
    printf("parent after: %zd %.2s\n", read_full(fd, b, 2), b);
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, b, 1));
    close(fd);
}

static void s_vfork(void)
{
    spawn_on(true);
}

static void s_spawn(void)
{
    spawn_on(false);
}

/* an inetd-like server execs cat on the connection: its bytes come back at once (the
 * connector is not left holding them until the negotiation's bound, 10 s) */
static void s_inetd(void)
{
    int fd = dial();
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long t0 = now_ms();
    write_full(fd, "hello", 5);
    char b[8] = {0};
    ssize_t r = recv(fd, b, 5, MSG_WAITALL);
    printf("echo %zd %s %.5s, in time %d\n", r, en(r < 0 ? errno : 0), b, now_ms() - t0 < 2000);
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, b, 1));
    close(fd);
}

/* --- v6mapped, reuseport, relisten, vectors, fortify, bulk, shutafter, writeclosed, epoll0,
 * fork_both --- */

/* Until FIONREAD shows n bytes (at most 3 s): a read then takes exactly those. */
static void wait_bytes(int fd, int n)
{
    for (int i = 0; i < 300; i++) {
        int k = 0;
        if (ioctl(fd, FIONREAD, &k) == 0 && k >= n) return;
        ms_sleep(10);
    }
    printf("wait_bytes: %d never came\n", n);
}

/* n bytes through an echoing server, compared. */
static void echo_check(int fd, const char *what, size_t n)
{
    static char out[100000], in[100000];
    for (size_t i = 0; i < n; i++) out[i] = (char)(i * 11 + n);
    write_full(fd, out, n);
    ssize_t r = read_full(fd, in, n);
    printf("%s echo %zd: %s\n", what, r,
           r == (ssize_t)n && !memcmp(in, out, n) ? "same" : "DIFFERENT");
}

static void eof_close(int fd)
{
    char c;
    shutdown(fd, SHUT_WR);
    printf("eof %zd\n", read(fd, &c, 1));
    close(fd);
}

/* O_NONBLOCK changed under a connection that was read blocking (the library keeps what
 * it learnt of the flags): by fcntl, by ioctl FIONBIO, and by a fork's child, which shares
 * the open file. Each read answers as the flags say now. */
static void s_nbflip(void)
{
    int fd = dial();
    int fl = fcntl(fd, F_GETFL);
    char c = '-';
    write_full(fd, "w", 1);
    ssize_t r = read(fd, &c, 1); /* blocking: waits for the answer */
    printf("blocking read %zd %c\n", r, c);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    r = read(fd, &c, 1);
    printf("after F_SETFL O_NONBLOCK: read %zd %s\n", r, en(r < 0 ? errno : 0));
    int off = 0, on = 1;
    ioctl(fd, FIONBIO, &off);
    write_full(fd, "d", 1); /* the answer after 300 ms: the read waits for it */
    long t0 = now_ms();
    r = read(fd, &c, 1);
    printf("after FIONBIO 0: read %zd %s\n", r,
           r == 1 && now_ms() - t0 >= 200 ? "waited" : "no wait");
    ioctl(fd, FIONBIO, &on);
    r = read(fd, &c, 1);
    printf("after FIONBIO 1: read %zd %s\n", r, en(r < 0 ? errno : 0));
    fcntl(fd, F_SETFL, fl);
    write_full(fd, "w", 1);
    r = read(fd, &c, 1); /* blocking again, learnt again */
    printf("blocking read %zd %c\n", r, c);
    pid_t k = fork();
    if (k == 0) {
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        _exit(0);
    }
    waitpid(k, NULL, 0);
    r = read(fd, &c, 1);
    printf("after the child's O_NONBLOCK: read %zd %s\n", r, en(r < 0 ? errno : 0));
    fcntl(fd, F_SETFL, fl);
    eof_close(fd);
}

/* The server writes 4 MiB and ends with _exit: every byte arrives, then EOF. */
static void s_exitw(void)
{
    int fd = dial();
    write_full(fd, "X", 1);
    static char in[1 << 16];
    size_t got = 0, bad = 0;
    for (ssize_t r; (r = read(fd, in, sizeof in)) > 0; got += (size_t)r)
        for (ssize_t i = 0; i < r; i++) bad += in[i] != (char)((got + (size_t)i) * 31);
    printf("after _exit: %zu bytes, %zu wrong, then eof\n", got, bad);
    close(fd);
}

/* The server listens on AF_INET6 :: with IPV6_V6ONLY 0; the client is IPv4. */
static void s_v6mapped(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    echo_check(fd, "v4 client, v6 listener:", 10000);
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    getpeername(fd, (struct sockaddr *)&a, &l);
    printf("client peername family %d len %u\n", a.sin_family, (unsigned)l);
    eof_close(fd);
}

/* The server has two SO_REUSEPORT listeners on the port and serves either. */
static void s_reuseport(void)
{
    for (int k = 0; k < 2; k++) {
        int fd = dial();
        write_full(fd, "e", 1);
        echo_check(fd, k ? "second" : "first", 5000);
        eof_close(fd);
    }
}

/* The server closes its listener after the first connection and listens anew. */
static void s_relisten(void)
{
    int fd = dial();
    echo_check(fd, "first", 3000);
    eof_close(fd); /* the EOF comes after the server listens again */
    fd = dial();
    echo_check(fd, "second", 3000);
    eof_close(fd);
}

static char pat(size_t i)
{
    return (char)(i * 5 + 1);
}

static bool pattern_ok(const char *p, size_t n, size_t from)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(from + i)) return false;
    return true;
}

static void s_vectors(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    static char out[20000], in[20000];
    for (size_t i = 0; i < sizeof out; i++) out[i] = pat(i);

    /* writev of 3 (one empty), readv into 3 */
    struct iovec w[3] = {{out, 3}, {out + 3, 0}, {out + 3, 5000}};
    printf("writev %zd\n", writev(fd, w, 3));
    wait_bytes(fd, 5003);
    memset(in, 0, sizeof in);
    struct iovec r[3] = {{in, 1}, {in + 1, 100}, {in + 101, 10000}};
    ssize_t n = readv(fd, r, 3);
    printf("readv %zd %s\n", n, n == 5003 && pattern_ok(in, 5003, 0) ? "same" : "DIFFERENT");

    /* empty reads and writes on an idle connection (SO_RCVTIMEO bounds a wait) */
    struct timeval tv = {0, 300000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    n = readv(fd, r, 0);
    printf("readv 0 iovecs %zd %s\n", n, en(n < 0 ? errno : 0));
    n = read(fd, in, 0);
    printf("read 0 bytes %zd %s\n", n, en(n < 0 ? errno : 0));
    n = writev(fd, w, 0);
    printf("writev 0 iovecs %zd %s\n", n, en(n < 0 ? errno : 0));
    volatile int neg = -1; /* not a constant: the compiler would object */
    n = readv(fd, r, neg);
    printf("readv -1 iovecs %zd %s\n", n, en(n < 0 ? errno : 0));
    tv = (struct timeval){0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    /* sendmsg of 4, recvmsg MSG_WAITALL into 3, with room for a name and control data */
    struct iovec sv[4] = {{out, 10}, {out + 10, 1}, {out + 11, 989}, {out + 1000, 9000}};
    struct msghdr mh = {.msg_iov = sv, .msg_iovlen = 4};
    printf("sendmsg %zd\n", sendmsg(fd, &mh, 0));
    memset(in, 0, sizeof in);
    struct iovec rv[3] = {{in, 7000}, {in + 7000, 1}, {in + 7001, 2999}};
    struct sockaddr_storage name;
    char ctl[256];
    mh = (struct msghdr){.msg_name = &name,
                         .msg_namelen = sizeof name,
                         .msg_iov = rv,
                         .msg_iovlen = 3,
                         .msg_control = ctl,
                         .msg_controllen = sizeof ctl,
                         .msg_flags = 0x7fff};
    n = recvmsg(fd, &mh, MSG_WAITALL);
    printf("recvmsg waitall %zd %s namelen %u controllen %zu flags %x\n", n,
           n == 10000 && pattern_ok(in, 10000, 0) ? "same" : "DIFFERENT", (unsigned)mh.msg_namelen,
           (size_t)mh.msg_controllen, (unsigned)mh.msg_flags);

    /* recvmsg with less room than there is: a stream gives what fits, no MSG_TRUNC */
    write_full(fd, out, 3000);
    wait_bytes(fd, 3000);
    struct iovec small[2] = {{in, 1000}, {in + 1000, 500}};
    mh = (struct msghdr){.msg_iov = small, .msg_iovlen = 2};
    n = recvmsg(fd, &mh, 0);
    printf("recvmsg short %zd %s flags %x\n", n, pattern_ok(in, 1500, 0) ? "same" : "DIFFERENT",
           (unsigned)mh.msg_flags);
    /* recv with MSG_TRUNC on a stream: the kernel discards, copying nothing */
    memset(in, 0, 1500);
    n = recv(fd, in, 1000, MSG_TRUNC);
    bool untouched = true;
    for (int i = 0; i < 1000; i++) untouched &= in[i] == 0;
    printf("recv MSG_TRUNC %zd %s\n", n, untouched ? "buffer untouched" : "buffer filled");
    n = recv(fd, in, 1000, MSG_DONTWAIT);
    printf("then %zd %s\n", n, n == 500 && pattern_ok(in, 500, 2500) ? "same" : "DIFFERENT");

    /* sendmmsg of 3 messages of 2 iovecs; recvmmsg into 3 of 250 */
    struct iovec mv[6] = {{out, 50},        {out + 50, 50},   {out + 100, 100},
                          {out + 200, 100}, {out + 300, 150}, {out + 450, 150}};
    struct mmsghdr mm[3];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mm[i].msg_hdr.msg_iov = mv + 2 * i;
        mm[i].msg_hdr.msg_iovlen = 2;
    }
    int k = sendmmsg(fd, mm, 3, 0);
    printf("sendmmsg %d: %u %u %u\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    wait_bytes(fd, 600);
    memset(in, 0, sizeof in);
    struct iovec iv[3] = {{in, 250}, {in + 250, 250}, {in + 500, 250}};
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mm[i].msg_hdr.msg_iov = iv + i;
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    k = recvmmsg(fd, mm, 3, MSG_DONTWAIT, NULL);
    printf("recvmmsg %d: %u %u %u %s\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len,
           pattern_ok(in, 600, 0) ? "same" : "DIFFERENT");
    k = recvmmsg(fd, mm, 3, MSG_DONTWAIT, NULL);
    printf("recvmmsg empty %d %s\n", k, en(k < 0 ? errno : 0));
    /* MSG_WAITFORONE: the first blocks, the rest do not */
    write_full(fd, out, 10);
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mm[i].msg_hdr.msg_iov = iv + i;
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    wait_bytes(fd, 10);
    k = recvmmsg(fd, mm, 3, MSG_WAITFORONE, NULL);
    printf("recvmmsg waitforone %d: %u\n", k, mm[0].msg_len);
    /* at EOF: the server echoed 50 more, then closed */
    write_full(fd, out, 50);
    shutdown(fd, SHUT_WR);
    struct pollfd p = {fd, POLLRDHUP, 0};
    wait_bytes(fd, 50);
    for (int i = 0; i < 300 && !(p.revents & POLLRDHUP); i++) poll(&p, 1, 10);
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 3; i++) {
        mm[i].msg_hdr.msg_iov = iv + i;
        mm[i].msg_hdr.msg_iovlen = 1;
        mm[i].msg_len = 12345;
    }
    k = recvmmsg(fd, mm, 3, 0, NULL);
    printf("recvmmsg at eof %d: %u %u %u\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    k = recvmmsg(fd, mm, 3, 0, NULL);
    printf("recvmmsg after eof %d: %u %u %u\n", k, mm[0].msg_len, mm[1].msg_len, mm[2].msg_len);
    close(fd);
}

/* The fortified entry points, as a program built with -D_FORTIFY_SOURCE=2 calls them
 * (glibc's prototypes), and sendfile64. */
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
extern ssize_t __recvfrom_chk(int fd, void *__restrict buf, size_t n, size_t buflen, int flags,
                              __SOCKADDR_ARG addr, socklen_t *__restrict addr_len);
extern int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
extern int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
                       const sigset_t *ss, size_t fdslen);

static void s_fortify(void)
{
    int fd = dial();
    char buf[64];
    struct pollfd p = {fd, POLLIN, 0};
    printf("__poll_chk idle %d\n", __poll_chk(&p, 1, 100, sizeof p));
    struct timespec ts = {0, 100000000};
    printf("__ppoll_chk idle %d\n", __ppoll_chk(&p, 1, &ts, NULL, sizeof p));
    write_full(fd, "b", 1);
    int n = __poll_chk(&p, 1, 3000, sizeof p);
    printf("__poll_chk %d %x\n", n, p.revents);
    wait_bytes(fd, 6);
    ts = (struct timespec){3, 0};
    p.revents = 0;
    n = __ppoll_chk(&p, 1, &ts, NULL, sizeof p);
    printf("__ppoll_chk %d %x\n", n, p.revents);
    ssize_t r = __recv_chk(fd, buf, 3, sizeof buf, MSG_PEEK);
    printf("__recv_chk peek %zd %.3s\n", r, buf);
    r = __read_chk(fd, buf, 2, sizeof buf);
    printf("__read_chk %zd %.2s\n", r, buf);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    r = __recvfrom_chk(fd, buf, sizeof buf, sizeof buf, 0, (struct sockaddr *)&sa, &sl);
    printf("__recvfrom_chk %zd %.4s addrlen %u\n", r, buf, (unsigned)sl);
    r = __recv_chk(fd, buf, 1, sizeof buf, MSG_DONTWAIT);
    printf("__recv_chk empty %zd %s\n", r, en(r < 0 ? errno : 0));
    /* sendfile64 through an echo */
    write_full(fd, "e", 1);
    char path[] = "/tmp/plsem.XXXXXX";
    int f = mkstemp(path);
    unlink(path);
    static char out[300000], in[300000];
    for (size_t i = 0; i < sizeof out; i++) out[i] = pat(i);
    write_full(f, out, sizeof out);
    off64_t off = 1000;
    r = sendfile64(fd, f, &off, 200000);
    printf("sendfile64 %zd off %lld\n", r, (long long)off);
    printf("echo: %s\n", read_full(fd, in, 200000) == 200000 && pattern_ok(in, 200000, 1000)
                             ? "same"
                             : "DIFFERENT");
    lseek(f, 5, SEEK_SET);
    r = sendfile64(fd, f, NULL, 100);
    printf("sendfile64 at the file offset %zd now %lld\n", r, (long long)lseek(f, 0, SEEK_CUR));
    printf("echo: %s\n",
           read_full(fd, in, 100) == 100 && pattern_ok(in, 100, 5) ? "same" : "DIFFERENT");
    close(f);
    /* a fortified read into a buffer too small for it: the program dies (stderr to /dev/null) */
    pid_t c = fork();
    if (c == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        int pp[2];
        if (pipe(pp) == 0) {
            write_full(pp[1], "0123456789", 10);
            (void)!__read_chk(pp[0], buf, 10, 5);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("__read_chk overflow: %s\n", WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no signal");
    eof_close(fd);
}

/* 64 MiB each way at once: a writer thread, and the reader here. */
#define BULK (64u << 20)
static uint64_t bulk_sum(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int bulk_fd;
static uint64_t bulk_sent_sum;
static unsigned bulk_limit = BULK;
static void *bulk_writer(void *arg)
{
    (void)arg;
    static unsigned char out[1 << 16];
    uint64_t h = 0xcbf29ce484222325ull, x = 88172645463325252ull;
    for (size_t sent = 0; sent < bulk_limit; sent += sizeof out) {
        for (size_t i = 0; i < sizeof out; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(out + i, &x, 8);
        }
        h = bulk_sum(h, out, sizeof out);
        write_full(bulk_fd, out, sizeof out);
    }
    bulk_sent_sum = h;
    return NULL;
}

static void s_bulk(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    bulk_fd = fd;
    pthread_t t;
    pthread_create(&t, NULL, bulk_writer, NULL);
    static unsigned char in[1 << 16];
    uint64_t h = 0xcbf29ce484222325ull;
    size_t got = 0;
    for (ssize_t r; got < BULK && (r = read(fd, in, sizeof in)) > 0; got += (size_t)r)
        h = bulk_sum(h, in, (size_t)r);
    pthread_join(t, NULL);
    printf("sent %u received %zu\n", BULK, got);
    printf("%s\n", h == bulk_sent_sum ? "sum ok" : "SUM DIFFERENT");
    eof_close(fd);
}

/* The move from the kernel socket onto the fast path, under way while bytes flow: two
 * connections start at once, one a ping-pong of messages of changing sizes from its first
 * byte, the other a stream each way (4 MiB, as bulk); every byte must arrive once, in
 * order. (Without PSP_SYNC the library moves both in the middle of this: the script checks
 * that bytes went over both paths.) */
static void s_upgrade(void)
{
    int fa = dial(), fb = dial();
    write_full(fa, "e", 1);
    write_full(fb, "e", 1);
    bulk_fd = fb;
    bulk_limit = 4u << 20;
    pthread_t t;
    pthread_create(&t, NULL, bulk_writer, NULL);
    static unsigned char out[4096], in[4096], sin[1 << 16];
    bool same = true;
    for (unsigned i = 0; i < 2000; i++) {
        size_t n = 1 + (i * 37) % sizeof out;
        for (size_t k = 0; k < n; k++) out[k] = (unsigned char)(i + k * 3);
        write_full(fa, out, n);
        if (read_full(fa, in, n) != (ssize_t)n || memcmp(in, out, n)) same = false;
    }
    printf("pingpong %s\n", same ? "same" : "DIFFERENT");
    uint64_t h = 0xcbf29ce484222325ull;
    size_t got = 0;
    for (ssize_t r; got < bulk_limit && (r = read(fb, sin, sizeof sin)) > 0; got += (size_t)r)
        h = bulk_sum(h, sin, (size_t)r);
    pthread_join(t, NULL);
    printf("stream received %zu %s\n", got, h == bulk_sent_sum ? "sum ok" : "SUM DIFFERENT");
    eof_close(fa);
    eof_close(fb);
}

/* One write of 32 MiB in flight while the connection moves up (without PSP_SYNC: after its
 * first millisecond, in the middle of the call): the kernel's part of the call and the rest
 * over the fast path must join where they meet (the rest once went from the buffer's
 * start). A thread reads the echo, from 100 ms on. */
#define UPWRITE (32u << 20)
static void *upwrite_reader(void *arg)
{
    /* late: the echo fills our receive buffer, the server stops reading, the write stops
     * in the kernel's part with some of the 32 MiB taken, and the move comes meanwhile */
    ms_sleep(100);
    static unsigned char in[1 << 16];
    uint64_t h = 0xcbf29ce484222325ull;
    size_t got = 0;
    for (ssize_t r; got < UPWRITE && (r = read(bulk_fd, in, sizeof in)) > 0; got += (size_t)r)
        h = bulk_sum(h, in, (size_t)r);
    *(uint64_t *)arg = h;
    printf("received %zu\n", got);
    return NULL;
}

static void s_upwrite(void)
{
    unsigned char *out = malloc(UPWRITE); /* made before the connection: the write comes
                                           * within its first millisecond */
    if (!out) return;
    uint64_t x = 88172645463325252ull, h, rh = 0;
    for (size_t i = 0; i < UPWRITE; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(out + i, &x, 8);
    }
    h = bulk_sum(0xcbf29ce484222325ull, out, UPWRITE);
    int fd = dial();
    write_full(fd, "e", 1);
    bulk_fd = fd;
    pthread_t t;
    pthread_create(&t, NULL, upwrite_reader, &rh);
    write_full(fd, out, UPWRITE); /* one call, unless a signal cuts it */
    pthread_join(t, NULL);
    printf("%s\n", rh == h ? "sum ok" : "SUM DIFFERENT");
    free(out);
    eof_close(fd);
}

/* shutdown after the peer closed and its EOF was read */
static void s_shutafter(void)
{
    int fd = dial();
    write_full(fd, "q", 1);
    char c;
    printf("eof %zd\n", read(fd, &c, 1));
    int r = shutdown(fd, SHUT_WR);
    printf("shutdown WR %d %s\n", r, en(r < 0 ? errno : 0));
    ms_sleep(100);
    r = shutdown(fd, SHUT_WR);
    printf("shutdown WR again %d %s\n", r, en(r < 0 ? errno : 0));
    r = shutdown(fd, SHUT_RDWR);
    printf("shutdown RDWR %d %s\n", r, en(r < 0 ? errno : 0));
    ssize_t n = read(fd, &c, 1);
    printf("read %zd %s\n", n, en(n < 0 ? errno : 0));
    r = shutdown(fd, 7);
    printf("shutdown 7 %d %s\n", r, en(r < 0 ? errno : 0));
    close(fd);
}

/* writes after the peer closed and its EOF was read */
static void s_writeclosed(void)
{
    int fd = dial();
    write_full(fd, "q", 1);
    char c;
    printf("eof %zd\n", read(fd, &c, 1));
    for (int i = 0; i < 3; i++) {
        ssize_t w = send(fd, "x", 1, MSG_NOSIGNAL);
        printf("write %d: %zd %s\n", i + 1, w, en(w < 0 ? errno : 0));
        ms_sleep(10);
    }
    ssize_t n = read(fd, &c, 1);
    printf("read %zd %s\n", n, en(n < 0 ? errno : 0));
    close(fd);
}

/* a connection in an epoll set with events 0: only EPOLLHUP and EPOLLERR can show */
static void s_epoll0(void)
{
    uint32_t e;
    int fd = dial(), ep = epoll_create1(0);
    struct epoll_event ev = {.events = 0, .data.u64 = 5};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    printf("idle %d\n", ewait(ep, 100, NULL));
    write_full(fd, "q", 1);
    int n = ewait(ep, 1000, &e);
    printf("peer closed: %d %x\n", n, e);
    char c;
    printf("eof %zd\n", read(fd, &c, 1));
    n = ewait(ep, 200, &e);
    printf("after eof: %d %x\n", n, e);
    ssize_t w = send(fd, "x", 1, MSG_NOSIGNAL);
    printf("write %zd %s\n", w, en(w < 0 ? errno : 0));
    n = ewait(ep, 1000, &e);
    printf("after the write: %d %x\n", n, e);
    close(fd);
    close(ep);

    fd = dial();
    ep = epoll_create1(0);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    write_full(fd, "s", 1);
    n = ewait(ep, 1000, &e);
    printf("peer shut down: %d %x\n", n, e);
    printf("eof %zd\n", read(fd, &c, 1));
    shutdown(fd, SHUT_WR);
    n = ewait(ep, 1000, &e);
    printf("both shut down: %d %x\n", n, e);
    close(fd);
    close(ep);
}

/* after a fork, parent and child both write and read one connection */
static void s_fork_both(void)
{
    int fd = dial();
    write_full(fd, "e", 1);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int pp[2];
    if (pipe(pp) < 0) return;
    pid_t k = fork();
    char got = '-';
    ssize_t w = write(fd, k == 0 ? "c" : "p", 1);
    int we = w < 0 ? errno : 0;
    ssize_t r = read(fd, &got, 1);
    int re = r < 0 ? errno : 0;
    char line[128];
    int len = snprintf(line, sizeof line, "write %zd %s, read %zd %s", w, en(we), r, en(re));
    if (k == 0) {
        line[len++] = got;
        (void)!write(pp[1], line, (size_t)len);
        _exit(0);
    }
    char cl[128] = "";
    ssize_t cn = read(pp[0], cl, sizeof cl - 1);
    waitpid(k, NULL, 0);
    char cgot = cn > 0 ? cl[cn - 1] : '-';
    if (cn > 0) cl[cn - 1] = 0;
    printf("parent: %s\n", line);
    printf("child: %s\n", cl);
    printf("bytes read: %c%c\n", got < cgot ? got : cgot, got < cgot ? cgot : got);
    eof_close(fd);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "execd")) { /* exec_rdp's new image */
        setvbuf(stdout, NULL, _IOLBF, 0);
        return heir(argv[2], "after exec", true);
    }
    if (argc == 3 && !strcmp(argv[1], "spawned")) { /* vfork's and spawn's new image */
        setvbuf(stdout, NULL, _IOLBF, 0);
        return heir(argv[2], "spawned", false);
    }
    if (argc != 5) {
        fprintf(stderr, "usage: plsem server|client ADDR PORT MODE|SCENARIO\n");
        return 2;
    }
    where.sin_family = AF_INET;
    where.sin_port = htons((uint16_t)atoi(argv[3]));
    if (inet_pton(AF_INET, argv[2], &where.sin_addr) != 1) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "server")) return server(argv[4]);
    static const struct {
        const char *name;
        void (*fn)(void);
    } sc[] = {{"echo", s_echo},
              {"halfclose", s_halfclose},
              {"peek", s_peek},
              {"poll", s_poll},
              {"epoll", s_epoll},
              {"sigpipe", s_sigpipe},
              {"linger0", s_linger0},
              {"nonblock", s_nonblock},
              {"timeo", s_timeo},
              {"eintr", s_eintr},
              {"dup", s_dup},
              {"names", s_names},
              {"threads", s_threads},
              {"two", s_two},
              {"many", s_many},
              {"fork", s_fork},
              {"crash", s_crash},
              {"compute", s_compute},
              {"sendfile", s_sendfile},
              {"closeall", s_closeall},
              {"v6mapped", s_v6mapped},
              {"reuseport", s_reuseport},
              {"relisten", s_relisten},
              {"vectors", s_vectors},
              {"fortify", s_fortify},
              {"bulk", s_bulk},
              {"shutafter", s_shutafter},
              {"writeclosed", s_writeclosed},
              {"epoll0", s_epoll0},
              {"fork_both", s_fork_both},
              {"inetd", s_inetd},
              {"fork_close", s_fork_close},
              {"forkidle", s_forkidle},
              {"fork_unread", s_fork_unread},
              {"exec_rdp", s_exec_rdp},
              {"vfork", s_vfork},
              {"cork", s_cork},
              {"oob", s_oob},
              {"spawn", s_spawn},
              {"exitw", s_exitw},
              {"upgrade", s_upgrade},
              {"upwrite", s_upwrite},
              {"nbflip", s_nbflip},
              {"eplazy", s_eplazy},
              {"rdpwait", s_rdpwait},
              {"cancel", s_cancel},
              {"calls", s_calls},
              {"accept2", s_accept2},
              {"forkclose", s_forkclose},
              {"daemon", s_daemon},
              {"others", s_others},
              {"threadfds", s_threadfds},
              {"closefrom", s_closefrom},
              {"closerace", s_closerace},
              {"cancelall", s_cancelall},
              {"short", s_short},
              {"epclose", s_epclose}};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++)
        if (!strcmp(sc[i].name, argv[4])) {
            sc[i].fn();
            return 0;
        }
    fprintf(stderr, "plsem: unknown scenario %s\n", argv[4]);
    return 2;
}
