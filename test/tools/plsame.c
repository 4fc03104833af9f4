/*
 * plsame.c - programs for the same-node path's tests (test/shell/preload_same_programs.sh):
 * both ends of a TCP connection in one process, and a writer and a reader whose progress the
 * script watches from outside. Every byte sent is the pattern (a table of pseudo-random bytes,
 * of a prime length, repeated), so that the receiver checks each byte at its offset.
 *
 *   plsame threads PORT N MIB  a server thread and a client thread of one process over
 *                              127.0.0.1:PORT: N request/response pairs of varying sizes, each
 *                              response checked, then MIB MiB client->server, checked by the
 *                              server; prints "rr N ok" and "bulk BYTES ok"
 *   plsame pair PORT MIB       one thread: listen, a nonblocking connect, poll, accept; the two
 *                              ends then exchange MIB MiB each way in one poll loop, checked;
 *                              prints "pair BYTES BYTES ok"
 *   plsame send [-H] ADDR PORT BYTES   connects and writes BYTES of the pattern; another thread
 *                              prints "wrote N" every 50 ms (a blocked write shows as a count
 *                              that stops growing); then "done N" or "error ENAME after N"
 *   plsame recv [-H] [-s AT:SECS] ADDR PORT   listens ("ready"), accepts one connection and
 *                              reads it to its end, checking the pattern; -s: once AT bytes
 *                              arrived it stops reading for SECS seconds ("pause N", "resume");
 *                              prints "eof N ok" (or "eof N BAD at OFFSET") or "error ENAME
 *                              after N"
 *   plsame busy PORT N MS      a server thread in an epoll loop (level-triggered) that reads
 *                              what is there, then computes for MS ms; a client thread of
 *                              the same process writes one byte every millisecond, N in
 *                              all: the server's waits find bytes each time, so (under the
 *                              library) the client rings no doorbell (the script reads
 *                              shm_bells in PSP_STATS); prints "busy N ok"
 * -H: after the outcome, close the connection, print "closed" and wait to be killed (the script
 * looks at the process's mappings then). Exit status 0 when all was as expected, 1 if not, 2
 * for usage. Lines go out at once (stdout line-buffered).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PAT   1048573u /* a prime: the pattern lines up with no ring or buffer size */
#define CHUNK (256u << 10)

static uint8_t tab[2 * PAT]; /* the pattern twice: any PAT bytes from any offset in one piece */

static void pattern_init(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < PAT; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tab[i] = tab[i + PAT] = (uint8_t)(x >> 24);
    }
}

static const uint8_t *pat_at(uint64_t off)
{
    return tab + off % PAT;
}

/* the offset of the first byte of buf[0..n) that is not the pattern at off, or -1 */
static int64_t pat_check(uint64_t off, const uint8_t *buf, size_t n)
{
    while (n) {
        size_t k = n < PAT ? n : PAT;
        if (memcmp(buf, pat_at(off), k))
            for (size_t i = 0; i < k; i++)
                if (buf[i] != pat_at(off + i)[0]) return (int64_t)(off + i);
        buf += k, off += k, n -= k;
    }
    return -1;
}

static const char *en(int e)
{
    const char *s = strerrorname_np(e);
    return s ? s : "?";
}

static void die(const char *what)
{
    printf("error %s: %s\n", what, en(errno));
    exit(1);
}

static int write_full(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w, n -= (size_t)w;
    }
    return 0;
}

/* 0 when all n bytes came, 1 at EOF first, -1 on an error */
static int read_full(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r == 0 ? 1 : -1;
        b += r, n -= (size_t)r;
    }
    return 0;
}

static struct sockaddr_in addr_of(const char *a, const char *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    if (inet_pton(AF_INET, a, &sa.sin_addr) != 1) {
        fprintf(stderr, "plsame: bad address %s\n", a);
        exit(2);
    }
    return sa;
}

static int listener(struct sockaddr_in sa)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("bind");
    if (listen(fd, 16) < 0) die("listen");
    return fd;
}

static int dial(struct sockaddr_in sa)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    return fd;
}

static void hold(int fd)
{
    close(fd);
    printf("closed\n");
    for (;;) pause();
}

/* --- threads: request/response and bulk between two threads of one process --- */

struct rr_hdr {
    uint32_t len, seq;
};

static int t_listen, t_n;
static uint64_t t_bulk;
static const char *t_server_says = "server did not finish";

static size_t rr_len(uint32_t seq)
{
    return 1 + (seq * 7919u) % 2000u; /* 1 to 2000 bytes */
}

static void *t_server(void *arg)
{
    (void)arg;
    int fd = accept(t_listen, NULL, NULL);
    if (fd < 0) {
        t_server_says = "accept failed";
        return NULL;
    }
    static uint8_t msg[4096], in[CHUNK];
    uint8_t *body = msg + sizeof(struct rr_hdr);
    for (int i = 0; i < t_n; i++) {
        struct rr_hdr h;
        if (read_full(fd, &h, sizeof h) || h.len > sizeof msg - sizeof h ||
            read_full(fd, body, h.len)) {
            t_server_says = "request cut short";
            close(fd);
            return NULL;
        }
        for (uint32_t k = 0; k < h.len; k++) body[k] ^= 0x5a;
        h.seq++;
        memcpy(msg, &h, sizeof h); /* one write: no Nagle delay on the kernel's path */
        if (write_full(fd, msg, sizeof h + h.len)) {
            t_server_says = "response not written";
            close(fd);
            return NULL;
        }
    }
    uint64_t got = 0;
    int64_t bad = -1;
    for (ssize_t r; (r = read(fd, in, sizeof in)) != 0;) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (bad < 0) bad = pat_check(got, in, (size_t)r);
        got += (uint64_t)r;
    }
    t_server_says = bad >= 0 ? "bulk BAD" : got == t_bulk ? "ok" : "bulk short";
    write_full(fd, &got, sizeof got);
    close(fd);
    return NULL;
}

static int threads(int argc, char **argv)
{
    if (argc != 5) return 2;
    struct sockaddr_in sa = addr_of("127.0.0.1", argv[2]);
    t_n = atoi(argv[3]);
    t_bulk = (uint64_t)atoi(argv[4]) << 20;
    t_listen = listener(sa);
    pthread_t srv;
    pthread_create(&srv, NULL, t_server, NULL);
    int fd = dial(sa), ok = 1;
    static uint8_t msg[4096], resp[4096];
    const uint8_t *req = msg + sizeof(struct rr_hdr);
    for (int i = 0; i < t_n && ok; i++) {
        struct rr_hdr h = {(uint32_t)rr_len((uint32_t)i), (uint32_t)i}, r;
        memcpy(msg, &h, sizeof h);
        memcpy(msg + sizeof h, pat_at((uint64_t)i * 4099u), h.len);
        ok = !write_full(fd, msg, sizeof h + h.len) && !read_full(fd, &r, sizeof r) &&
             r.len == h.len && r.seq == h.seq + 1 && !read_full(fd, resp, r.len);
        for (uint32_t k = 0; ok && k < h.len; k++) ok = resp[k] == (req[k] ^ 0x5a);
        if (!ok) printf("rr BAD at %d\n", i);
    }
    if (ok) printf("rr %d ok\n", t_n);
    for (uint64_t sent = 0; ok && sent < t_bulk;) {
        size_t k = t_bulk - sent < CHUNK ? (size_t)(t_bulk - sent) : CHUNK;
        ok = !write_full(fd, pat_at(sent), k);
        sent += k;
    }
    shutdown(fd, SHUT_WR);
    uint64_t got = 0;
    ok = ok && !read_full(fd, &got, sizeof got);
    pthread_join(srv, NULL);
    ok = ok && got == t_bulk && !strcmp(t_server_says, "ok");
    printf("bulk %llu %s\n", (unsigned long long)got, ok ? "ok" : t_server_says);
    close(fd);
    return !ok;
}

/* --- pair: connect and accept in one thread, both ends in one poll loop --- */

static int pair(int argc, char **argv)
{
    if (argc != 4) return 2;
    struct sockaddr_in sa = addr_of("127.0.0.1", argv[2]);
    uint64_t total = (uint64_t)atoi(argv[3]) << 20;
    int l = listener(sa);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c < 0) die("socket");
    if (connect(c, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) die("connect");
    struct pollfd p = {.fd = l, .events = POLLIN};
    if (poll(&p, 1, 5000) != 1) die("poll for the connection");
    int a = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    if (a < 0) die("accept");
    p = (struct pollfd){.fd = c, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof err;
    if (poll(&p, 1, 5000) != 1) die("poll for the connect");
    if (getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
        errno = err;
        die("connect (SO_ERROR)");
    }
    /* [0]: the connecting end, [1]: the accepted one; each sends total, reads the other's */
    int fd[2] = {c, a};
    uint64_t sent[2] = {0, 0}, got[2] = {0, 0};
    bool eof[2] = {false, false}, shut[2] = {false, false};
    int64_t bad = -1;
    static uint8_t in[CHUNK];
    while (!eof[0] || !eof[1]) {
        struct pollfd ps[2];
        for (int i = 0; i < 2; i++)
            ps[i] = (struct pollfd){
                .fd = fd[i],
                .events = (short)((eof[i] ? 0 : POLLIN) | (sent[i] < total ? POLLOUT : 0))};
        int n = poll(ps, 2, 10000);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            printf("pair stalled: sent %llu %llu got %llu %llu\n", (unsigned long long)sent[0],
                   (unsigned long long)sent[1], (unsigned long long)got[0],
                   (unsigned long long)got[1]);
            return 1;
        }
        for (int i = 0; i < 2; i++) {
            if (ps[i].revents & POLLOUT && sent[i] < total) {
                size_t k = total - sent[i] < CHUNK ? (size_t)(total - sent[i]) : CHUNK;
                ssize_t w = write(fd[i], pat_at(sent[i]), k);
                if (w < 0 && errno != EAGAIN && errno != EINTR) die("write");
                if (w > 0) sent[i] += (uint64_t)w;
            }
            if (sent[i] == total && !shut[i]) {
                shutdown(fd[i], SHUT_WR);
                shut[i] = true;
            }
            if (ps[i].revents & (POLLIN | POLLHUP | POLLERR) && !eof[i]) {
                ssize_t r = read(fd[i], in, sizeof in);
                if (r < 0 && errno != EAGAIN && errno != EINTR) die("read");
                if (r == 0) eof[i] = true;
                if (r > 0) {
                    if (bad < 0) bad = pat_check(got[i], in, (size_t)r);
                    got[i] += (uint64_t)r;
                }
            }
        }
    }
    bool ok = bad < 0 && got[0] == total && got[1] == total;
    printf("pair %llu %llu %s\n", (unsigned long long)got[0], (unsigned long long)got[1],
           ok ? "ok" : "BAD");
    close(a);
    close(c);
    close(l);
    return !ok;
}

/* --- send and recv: one end each, watched from outside --- */

static atomic_ullong written;
static atomic_bool writing = true;

static void *reporter(void *arg)
{
    (void)arg;
    struct timespec t = {0, 50 * 1000 * 1000};
    while (atomic_load(&writing)) {
        printf("wrote %llu\n", atomic_load(&written));
        nanosleep(&t, NULL);
    }
    return NULL;
}

static int send_main(int argc, char **argv, bool keep)
{
    if (argc != 3) return 2;
    struct sockaddr_in sa = addr_of(argv[0], argv[1]);
    uint64_t total = strtoull(argv[2], NULL, 0);
    signal(SIGPIPE, SIG_IGN);
    int fd = dial(sa);
    pthread_t rep;
    pthread_create(&rep, NULL, reporter, NULL);
    int e = 0;
    for (uint64_t sent = 0; sent < total;) {
        size_t k = total - sent < CHUNK ? (size_t)(total - sent) : CHUNK;
        ssize_t w = write(fd, pat_at(sent), k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            break;
        }
        sent += (uint64_t)w;
        atomic_store(&written, sent);
    }
    atomic_store(&writing, false);
    pthread_join(rep, NULL);
    unsigned long long n = atomic_load(&written);
    if (e)
        printf("error %s after %llu\n", en(e), n);
    else
        printf("done %llu\n", n);
    if (keep) hold(fd);
    return e != 0;
}

static int recv_main(int argc, char **argv, bool keep, uint64_t stop_at, int stop_secs)
{
    if (argc != 2) return 2;
    int l = listener(addr_of(argv[0], argv[1]));
    printf("ready\n");
    int fd = accept(l, NULL, NULL);
    if (fd < 0) die("accept");
    close(l);
    static uint8_t in[CHUNK];
    uint64_t got = 0;
    int64_t bad = -1;
    bool paused = false;
    int e = 0;
    for (;;) {
        if (stop_secs && !paused && got >= stop_at) {
            printf("pause %llu\n", (unsigned long long)got);
            sleep((unsigned)stop_secs);
            printf("resume\n");
            paused = true;
        }
        size_t want = sizeof in;
        if (stop_secs && !paused && stop_at - got < want) want = (size_t)(stop_at - got);
        ssize_t r = read(fd, in, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        if (bad < 0) bad = pat_check(got, in, (size_t)r);
        got += (uint64_t)r;
    }
    if (e)
        printf("error %s after %llu\n", en(e), (unsigned long long)got);
    else if (bad >= 0)
        printf("eof %llu BAD at %lld\n", (unsigned long long)got, (long long)bad);
    else
        printf("eof %llu ok\n", (unsigned long long)got);
    if (keep) hold(fd);
    return e || bad >= 0;
}

/* --- busy: a busy event loop, its peer writing meanwhile --- */

static struct sockaddr_in b_sa;
static int b_n;

static void *b_client(void *arg)
{
    (void)arg;
    int fd = dial(b_sa);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < b_n; i++) {
        if (write_full(fd, pat_at((uint64_t)i), 1) < 0) die("write");
        nanosleep(&ms, NULL);
    }
    close(fd);
    return NULL;
}

static int busy(int argc, char **argv)
{
    if (argc != 5) return 2;
    b_sa = addr_of("127.0.0.1", argv[2]);
    b_n = atoi(argv[3]);
    int ms = atoi(argv[4]), l = listener(b_sa), ep = epoll_create1(0);
    pthread_t t;
    if (ep < 0 || pthread_create(&t, NULL, b_client, NULL)) die("thread");
    int fd = accept(l, NULL, NULL);
    struct epoll_event ev = {.events = EPOLLIN};
    if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("accept");
    uint64_t got = 0;
    uint8_t buf[4096];
    while (got < (uint64_t)b_n) {
        if (epoll_wait(ep, &ev, 1, 5000) != 1) {
            printf("busy: nothing for 5 s after %llu\n", (unsigned long long)got);
            return 1;
        }
        ssize_t k = read(fd, buf, sizeof buf);
        if (k <= 0) break;
        if (pat_check(got, buf, (size_t)k) >= 0) {
            printf("busy: bad byte after %llu\n", (unsigned long long)got);
            return 1;
        }
        got += (uint64_t)k;
        struct timespec t0, t1; /* compute, touching nothing */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do clock_gettime(CLOCK_MONOTONIC, &t1);
        while ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < ms);
    }
    pthread_join(t, NULL);
    printf("busy %llu %s\n", (unsigned long long)got, got == (uint64_t)b_n ? "ok" : "short");
    return got == (uint64_t)b_n ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: plsame threads PORT N MIB | pair PORT MIB | busy PORT N MS |\n"
                    "       send [-H] ADDR PORT BYTES | recv [-H] [-s AT:SECS] ADDR PORT\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) return usage();
    pattern_init();
    int r = 2;
    if (!strcmp(argv[1], "threads")) {
        r = threads(argc, argv);
    } else if (!strcmp(argv[1], "pair")) {
        r = pair(argc, argv);
    } else if (!strcmp(argv[1], "busy")) {
        r = busy(argc, argv);
    } else if (!strcmp(argv[1], "send") || !strcmp(argv[1], "recv")) {
        bool keep = false;
        unsigned long long at = 0;
        int secs = 0, o;
        optind = 2;
        while ((o = getopt(argc, argv, "Hs:")) != -1) {
            if (o == 'H')
                keep = true;
            else if (o == 's' && sscanf(optarg, "%llu:%d", &at, &secs) == 2 && secs > 0)
                continue;
            else
                return usage();
        }
        if (argv[1][0] == 's')
            r = send_main(argc - optind, argv + optind, keep);
        else
            r = recv_main(argc - optind, argv + optind, keep, at, secs);
    }
    return r == 2 ? usage() : r;
}
