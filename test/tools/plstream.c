/*
 * plstream.c - one TCP stream of known bytes, for the tests of stopped, killed and
 * restarted peers (test/shell/preload_stop.sh, preload_restart.sh): one side writes BYTES
 * pseudo-random bytes in blocks of 16 KiB, the other reads to the end; each prints what it
 * moved, the SHA-256 of it and how the stream ended, so that a test compares the two ends.
 *
 *   plstream listen|connect ADDR PORT send|recv BYTES [--progress FILE] [--rate MBPS]
 *            [--keepalive IDLE] [--wait-line]
 *
 * listen: bind ADDR:PORT (SO_REUSEADDR), print "listening", accept one connection, close
 * the listener. connect: connect to ADDR:PORT. Then the role: send writes BYTES bytes and
 * closes (the end of the stream); recv reads until the end (EOF or an error), at most BYTES
 * (0: no bound). The last line is
 *
 *   sent|received N SHA256HEX end eof|ok|ERRNAME
 *
 * where "ok" is a sender that wrote everything and closed, "eof" a reader's clean end of
 * stream, and ERRNAME the errno name of the call that failed (ECONNRESET, ETIMEDOUT, EPIPE).
 * --progress FILE: "MS BYTES" appended there (CLOCK_REALTIME milliseconds, as date +%s%3N
 * prints them, and bytes so far)
 * at most every 20 ms, and once at the end, so that a test sees the stream move. --rate: a
 * sender writes at most MBPS megabytes (10^6) a second, paced block by block, and does not
 * catch up on time it lost (stopped): a test stops it in mid-stream, not after.
 * --keepalive IDLE: SO_KEEPALIVE on with TCP_KEEPIDLE IDLE on the connection, and a thread
 * that every 20 ms sets TCP_KEEPINTVL (to 30..39 in turn) and reads the four keepalive
 * options back: the program's own settings, whatever the library does on the socket
 * meanwhile; a last line "keepalive kept" or "keepalive CHANGED ..." before the report.
 * --wait-line
 * (connect only): read one line from standard input first, then connect (the test starts
 * the stream when it is ready to watch it). SIGPIPE is ignored (EPIPE is an answer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (16u << 10)

static FILE *prog;
static uint64_t last_ms;
static double rate; /* bytes per ns, 0: as fast as it goes */

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void progress(uint64_t bytes, bool last)
{
    if (!prog) return;
    uint64_t t = now_ms();
    if (!last && t - last_ms < 20) return;
    last_ms = t;
    fprintf(prog, "%llu %llu\n", (unsigned long long)t, (unsigned long long)bytes);
    fflush(prog);
}

static const char *errname(int e)
{
    switch (e) {
    case ECONNRESET:
        return "ECONNRESET";
    case ETIMEDOUT:
        return "ETIMEDOUT";
    case EPIPE:
        return "EPIPE";
    case ECONNABORTED:
        return "ECONNABORTED";
    case EHOSTUNREACH:
        return "EHOSTUNREACH";
    case ENETUNREACH:
        return "ENETUNREACH";
    default:
        return strerror(e);
    }
}

/* the stream's bytes: xorshift64*, the same on both sides */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static void fill(uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        uint64_t v = rng * 0x2545f4914f6cdd1dull;
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* --keepalive: the watcher thread */
static int ka_fd = -1, ka_idle;
static volatile int ka_stop;
static char ka_bad[160];

static void *ka_watch(void *arg)
{
    (void)arg;
    for (int k = 0; !ka_stop && !ka_bad[0]; k++) {
        int intvl = 30 + k % 10, v[4];
        const int opt[4][2] = {{SOL_SOCKET, SO_KEEPALIVE},
                               {IPPROTO_TCP, TCP_KEEPIDLE},
                               {IPPROTO_TCP, TCP_KEEPINTVL},
                               {IPPROTO_TCP, TCP_KEEPCNT}};
        if (setsockopt(ka_fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl) < 0) break;
        for (int i = 0; i < 4; i++) {
            socklen_t l = sizeof v[i];
            if (getsockopt(ka_fd, opt[i][0], opt[i][1], &v[i], &l) < 0) v[i] = -1;
        }
        if (v[0] != 1 || v[1] != ka_idle || v[2] != intvl || v[3] < 1 || v[3] > 127)
            snprintf(ka_bad, sizeof ka_bad, "keepalive %d idle %d intvl %d (set %d) cnt %d", v[0],
                     v[1], v[2], intvl, v[3]);
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void report(const char *what, uint64_t n, crypto_hash_sha256_state *st, const char *end)
{
    uint8_t h[crypto_hash_sha256_BYTES];
    char hex[2 * sizeof h + 1];
    crypto_hash_sha256_final(st, h);
    sodium_bin2hex(hex, sizeof hex, h, sizeof h);
    progress(n, true);
    if (ka_fd >= 0) {
        ka_stop = 1;
        printf("keepalive %s%s\n", ka_bad[0] ? "CHANGED " : "kept", ka_bad);
    }
    printf("%s %llu %s end %s\n", what, (unsigned long long)n, hex, end);
    fflush(stdout);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* --rate: wait until the next block is due (and never owe the time a stop took) */
static void pace(uint64_t *due, size_t n)
{
    if (!rate) return;
    uint64_t t = now_ns();
    if (*due > t) {
        struct timespec ts = {(time_t)((*due - t) / 1000000000ull),
                              (long)((*due - t) % 1000000000ull)};
        nanosleep(&ts, NULL);
    } else {
        *due = t;
    }
    *due += (uint64_t)((double)n / rate);
}

static int do_send(int fd, uint64_t bytes)
{
    static uint8_t buf[BLOCK];
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    uint64_t done = 0, due = 0;
    while (done < bytes) {
        pace(&due, BLOCK);
        size_t n = bytes - done < BLOCK ? (size_t)(bytes - done) : BLOCK;
        fill(buf, n);
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(fd, buf + off, n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                int e = errno;
                crypto_hash_sha256_update(&st, buf, off);
                report("sent", done + off, &st, errname(e));
                return 1;
            }
            off += (size_t)w;
        }
        crypto_hash_sha256_update(&st, buf, n);
        done += n;
        progress(done, false);
    }
    if (close(fd) < 0) {
        report("sent", done, &st, errname(errno));
        return 1;
    }
    report("sent", done, &st, "ok");
    return 0;
}

static int do_recv(int fd, uint64_t bytes)
{
    static uint8_t buf[64u << 10];
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    uint64_t done = 0;
    for (;;) {
        size_t want = sizeof buf;
        if (bytes && bytes - done < want) want = (size_t)(bytes - done);
        if (bytes && !want) {
            report("received", done, &st, "ok");
            close(fd);
            return 0;
        }
        ssize_t r = read(fd, buf, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            report("received", done, &st, errname(errno));
            return 1;
        }
        if (r == 0) {
            report("received", done, &st, "eof");
            close(fd);
            return 0;
        }
        crypto_hash_sha256_update(&st, buf, (size_t)r);
        done += (uint64_t)r;
        progress(done, false);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: plstream listen|connect ADDR PORT send|recv BYTES [--progress FILE] "
                    "[--rate MBPS] [--keepalive IDLE] [--wait-line]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 6 || sodium_init() < 0) return usage();
    bool lis = !strcmp(argv[1], "listen"), send = !strcmp(argv[4], "send"), wait_line = false;
    if ((!lis && strcmp(argv[1], "connect")) || (!send && strcmp(argv[4], "recv"))) return usage();
    uint64_t bytes = strtoull(argv[5], NULL, 0);
    int keepalive = 0;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "--progress") && i + 1 < argc) {
            prog = fopen(argv[++i], "a");
            if (!prog) return usage();
        } else if (!strcmp(argv[i], "--keepalive") && i + 1 < argc) {
            keepalive = atoi(argv[++i]);
            if (keepalive < 1) return usage();
        } else if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
            rate = strtod(argv[++i], NULL) * 1e6 / 1e9;
        } else if (!strcmp(argv[i], "--wait-line")) {
            wait_line = true;
        } else {
            return usage();
        }
    }
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
    if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) return usage();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        perror("socket");
        return 1;
    }
    if (lis) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4) < 0) {
            perror("bind/listen");
            return 1;
        }
        printf("listening\n");
        fflush(stdout);
        int c = accept(fd, NULL, NULL);
        if (c < 0) {
            perror("accept");
            return 1;
        }
        close(fd);
        fd = c;
    } else {
        if (wait_line) {
            char line[64];
            if (!fgets(line, sizeof line, stdin)) return 1;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            printf("connect %s\n", errname(errno));
            return 1;
        }
    }
    printf("connected\n");
    fflush(stdout);
    if (keepalive) {
        int one = 1;
        pthread_t t;
        ka_fd = fd;
        ka_idle = keepalive;
        if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) < 0 ||
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &keepalive, sizeof keepalive) < 0 ||
            pthread_create(&t, NULL, ka_watch, NULL) != 0) {
            perror("keepalive");
            return 1;
        }
        pthread_detach(t);
    }
    return send ? do_send(fd, bytes) : do_recv(fd, bytes);
}
