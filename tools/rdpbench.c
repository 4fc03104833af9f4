/*
 * rdpbench - RDP benchmark and end-to-end verifier: ping-pong latency and stream throughput
 * between two RDP endpoints, optionally side by side with kernel TCP on the same workload.
 *
 *   rdpbench server ADDR:PORT [options]
 *   rdpbench client ADDR:PORT --mode pingpong|stream --size BYTES|MIN-MAX --count N [options]
 *
 * Roles. The server listens on TCP ADDR:PORT (the control channel) and, per client, opens an
 * RDP endpoint (node 0) on UDP ADDR:PORT; the client is RDP node 1. A fresh endpoint per
 * session keeps every run's statistics its own; the server then waits for the next client
 * (--once: exit after one). The client binds RDP on --bind ADDR[:PORT]; by default on the
 * local address of its control connection (the address the kernel routes towards the server:
 * 127.0.0.1 on loopback, its own namespace address across namespaces) with an ephemeral port.
 *
 * Control channel (TCP, one connection per session). Every frame is a 12-byte header --
 * magic "RDPB", version 1 (u8), type (u8), reserved 0 (u16), body length (u32, at most
 * CTL_MAX_BODY) -- and a body of fixed-width big-endian fields whose length is checked
 * exactly per type:
 *   HELLO      c->s  mode, flags, MAC algorithm, sizes, count, warmup, seed, mtu, timeout,
 *                    the client's RDP address, and a 16-byte key check (BLAKE2b of the key
 *                    under a label) so that a key mismatch is reported at once instead of as
 *                    MAC drops; the server adopts the client's MTU, MAC and timeout unless
 *                    given its own (a different MAC is refused)
 *   READY      s->c  the TCP data port (--vs-tcp), whether the server injects faults, its MTU
 *   DONE       s->c  stream: every message arrived verified (count, bytes)
 *   FIN        c->s  the client's RDP statistics; the server drains its queue, then answers
 *   STATS      s->c  the server's RDP statistics
 *   TCP_START  c->s  start the kernel TCP run: the server forks an echo/sink child
 *   TCP_READY  s->c  the child is waiting on the data port
 *   TCP_RESULT s->c  the child's exit status (0: every message verified)
 *   ERR        both  text: what went wrong; the receiver prints it and exits 1
 *
 * Messages. Message i (0-based, warm-up included) has a length from (seed, i): fixed, or
 * log-uniform in [MIN, MAX] computed with sqrt and products only (IEEE-exact, so both ends
 * agree on any platform). Its first 8 bytes are i in network order (shorter messages carry
 * the low-order bytes of i); the rest is a ChaCha20 stream keyed by the seed, read at an
 * offset chosen by (seed, i) and XORed with a per-message 64-bit mask. The receiver checks
 * that each message is exactly the next expected one, length and every byte, so loss,
 * duplication, reordering, corruption and mixed-up fragments are all caught. Any mismatch,
 * an undeliverable or lost callback, or a stall longer than --timeout prints what went wrong
 * and exits 1, on both sides (the detecting side tells the other over the control channel).
 *
 * Self-test hook: RDPBENCH_TEST_FAULT=swap:N|dup:N|flip:N in the client's environment makes
 * it send messages N+1 and N swapped, message N twice (at N+1), or message N with a byte
 * flipped -- over RDP and TCP alike -- so a test can show that the checker catches each.
 *
 * Event loop: epoll on the RDP socket, the control socket and a timerfd that fires no later
 * than rdp_next_deadline() (lazytimer.h: set only before sleeping, and only when the deadline
 * moved earlier or the timer is past half its span, not at every wait); the program sleeps in
 * the kernel between packets like a daemon would, it never spins. The TCP baseline uses
 * blocking I/O with TCP_NODELAY and 4-byte length framing (the best case for kernel TCP, as
 * in the peers' pingpong.c).
 */
#include "lazytimer.h"
#include "bebytes.h"
#include "rdp.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MODE_PINGPONG 1
#define MODE_STREAM   2

#define CTL_MAGIC    0x52445042u /* "RDPB" */
#define CTL_VERSION  1
#define CTL_HDR      12
#define CTL_MAX_BODY 2048
#define CTL_ERR_MAX  1024

enum ctl_type {
    CT_HELLO = 1,
    CT_READY,
    CT_ERR,
    CT_DONE,
    CT_FIN,
    CT_STATS,
    CT_TCP_START,
    CT_TCP_READY,
    CT_TCP_RESULT,
};

#define HELLO_LEN      80
#define READY_LEN      8
#define DONE_LEN       16
#define TCP_RESULT_LEN 12
#define HELLO_F_VSTCP  0x01
#define HELLO_F_FAULTS 0x02
#define READY_F_FAULTS 0x01

#define STAT_FIELDS 26
#define STATS_LEN   (4 + 8 * (STAT_FIELDS + RDP_DROP__COUNT))

#define PAT_LEN      (RDP_MAX_MSG + 65536 + 16)
#define NODE_SRV     0
#define NODE_CLI     1
#define STEP_NS      100000000ull /* longest single wait: progress checks run this often */
#define TCP_ACK      8            /* stream sink's final acknowledgement: u64 count */
#define NSEC         1000000000ull
#define KEY_FILE_MAX 4096
#define OPT_BUF_MAX  (1ull << 32) /* rdpbench's cap on --sndbuf, --rcvbuf, --sock-buf */

static const char *prog_role = "rdpbench";

/* ---------------------------------------------------------------- options */

struct opts {
    bool server;
    struct sockaddr_storage addr; /* server ADDR:PORT */
    socklen_t addrlen;
    struct sockaddr_storage bind; /* client --bind */
    socklen_t bindlen;
    bool have_bind;
    int mode;
    uint32_t smin, smax;
    uint64_t count;
    int64_t warmup; /* -1: default */
    uint64_t seed;
    bool have_seed;
    const char *keyfile;
    unsigned char key[RDP_KEY_BYTES];
    double loss, dup, reorder, corrupt;
    unsigned mtu; /* 0: default */
    unsigned rto_min_us, max_retrans;
    size_t sndbuf, rcvbuf, sock_buf; /* 0: library default */
    bool vs_tcp, json, once, quiet;
    bool no_offload;
    bool joined;  /* RDP's recv callback (messages joined) instead of recvv (pieces) */
    int mac_impl; /* enum rdp_mac_impl */
    unsigned timeout_s;
    bool have_timeout; /* else the server adopts the client's --timeout */
    int mac;           /* enum rdp_mac_alg; -1: not given (server: follow the client) */
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rdpbench server ADDR:PORT [options]\n"
            "       rdpbench client ADDR:PORT --mode pingpong|stream --size BYTES|MIN-MAX\n"
            "                --count N [options]\n"
            "\n"
            "The server listens on TCP ADDR:PORT (control) and binds RDP's UDP on ADDR:PORT;\n"
            "PORT 0 picks a free port (printed). The client connects, runs, and both verify\n"
            "every message (order, exactly once, every byte). Addresses are numeric\n"
            "(127.0.0.1:7000, [::1]:7000).\n"
            "\n"
            "client options:\n"
            "  --mode pingpong|stream   round trips (RTT) or one-way throughput\n"
            "  --size BYTES | MIN-MAX   message size, fixed or log-uniform random (1..%u)\n"
            "  --count N                measured round trips / messages sent\n"
            "  --warmup W               pingpong round trips not measured (default N/10, at\n"
            "                           most 100)\n"
            "  --seed S                 message contents and sizes (default: random)\n"
            "  --bind ADDR[:PORT]       client RDP address (default: the control connection's\n"
            "                           local address, port 0)\n"
            "  --vs-tcp                 then the same workload over kernel TCP, and the ratio\n"
            "  --json                   one JSON object on stdout (human output to stderr)\n"
            "server options:\n"
            "  --once                   exit after one client (status 1 if it failed)\n"
            "both:\n"
            "  --key FILE               cluster key = BLAKE2b-256 of FILE (>= 32 bytes);\n"
            "                           default: a fixed, public benchmark key\n"
            "  --loss P --dup P --reorder P --corrupt P\n"
            "                           RDP fault injector on this side, both directions\n"
            "  --mtu N                  link MTU (default 65536 on loopback, else 1500; the\n"
            "                           server follows the client unless given; packets\n"
            "                           fit the smaller MTU of the two)\n"
            "  --mac auto|chacha20poly1305|aes256gcm\n"
            "                           which packet MACs this side allows (default auto:\n"
            "                           AES-256-GCM where both CPUs have it; RDP negotiates;\n"
            "                           the server follows the client unless given)\n"
            "  --no-offload             no UDP GSO/GRO on this side (they are used where the\n"
            "                           MTU is small, e.g. 1500 or 9000)\n"
            "  --joined                 receive whole messages (RDP joins the fragments into\n"
            "                           one buffer) instead of in pieces (packets as read)\n"
            "  --mac-impl best|portable|ipsec-mb\n"
            "                           which library computes this side's MACs (same tags;\n"
            "                           default best: Intel IPsec-MB where built in)\n"
            "  --rto-min-us N --max-retrans N --sndbuf BYTES --rcvbuf BYTES --sock-buf BYTES\n"
            "                           RDP tunables (default: the library's)\n"
            "  --timeout S              give up after S seconds without progress (default 30)\n"
            "  --quiet                  (server) only errors\n"
            "  -h, --help\n",
            RDP_MAX_MSG);
}

static void vsay(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void vsay(const char *fmt, va_list ap)
{
    fprintf(stderr, "rdpbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
}

static void bad_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    usage(stderr);
    exit(2);
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+') return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The value of --NAME, in lo..hi; else a usage error that gives the range (and why, if not
 * NULL). */
static uint64_t parse_opt(const char *name, const char *s, uint64_t lo, uint64_t hi,
                          const char *why)
{
    uint64_t v;
    if (!parse_u64(s, lo, hi, &v))
        bad_usage("--%s %s: must be %" PRIu64 "..%" PRIu64 "%s%s", name, s, lo, hi, why ? " " : "",
                  why ? why : "");
    return v;
}

static double parse_prob(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.0 && v <= 1.0))
        bad_usage("--%s: need a probability in [0,1], got '%s'", opt, s);
    return v;
}

/* "a.b.c.d:port", "[v6]:port", or (need_port false) a bare address. */
static int parse_addr(const char *s, bool need_port, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 8];
    const char *port = NULL;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close) return -1;
        hl = (size_t)(close - s - 1);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return -1;
        s++;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon && colon == strchr(s, ':')) {
            hl = (size_t)(colon - s);
            port = colon + 1;
        } else {
            hl = strlen(s); /* no port, or a bare IPv6 address */
        }
    }
    if (hl == 0 || hl >= sizeof host) return -1;
    memcpy(host, s, hl);
    host[hl] = '\0';
    if (need_port && !port) return -1;
    uint64_t pv = 0;
    if (port && !parse_u64(port, 0, 65535, &pv)) return -1;
    char pbuf[8];
    snprintf(pbuf, sizeof pbuf, "%u", (unsigned)pv);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                             .ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM},
                    *ai;
    if (getaddrinfo(host, pbuf, &hints, &ai) != 0) return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static void addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, addr_port(ss));
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, addr_port(ss));
    }
    return buf;
}

static bool addr_is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
}

static bool addr_is_any(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static const char *mac_name(int mac)
{
    return rdp_mac_alg_name((enum rdp_mac_alg)mac);
}

/* A --key FILE that cannot be used: the command line is well-formed, the file is not, so
 * exit 1 without the usage text, as psid and psconf do for a bad key_file. */
static void key_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void key_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    exit(1);
}

/* The key rule of conf/keyfile.c: a regular file, not open to group or others, 32..4096
 * bytes; the key is the 32-byte BLAKE2b hash of its contents. */
static void load_key(const char *path, unsigned char key[RDP_KEY_BYTES])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) key_error("--key %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) key_error("--key %s: not a regular file", path);
    if (st.st_mode & 077)
        key_error("--key %s: mode %04o lets group or others at the key; run chmod 600 %s", path,
                  (unsigned)(st.st_mode & 07777), path);
    unsigned char buf[KEY_FILE_MAX + 1];
    size_t n = 0;
    while (n < sizeof buf) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) key_error("--key %s: %s", path, strerror(errno));
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (n < 32)
        key_error("--key %s: %zu bytes, a key needs at least 32 (head -c 32 /dev/urandom > %s)",
                  path, n, path);
    if (n > KEY_FILE_MAX) key_error("--key %s: longer than %d bytes", path, KEY_FILE_MAX);
    crypto_generichash(key, RDP_KEY_BYTES, buf, n, NULL, 0);
    sodium_memzero(buf, sizeof buf);
}

static void fixed_key(unsigned char key[RDP_KEY_BYTES])
{
    static const char label[] = "pscluster rdpbench fixed benchmark key (public, not secret)";
    crypto_generichash(key, RDP_KEY_BYTES, (const unsigned char *)label, sizeof label - 1, NULL, 0);
}

static void key_check(const unsigned char key[RDP_KEY_BYTES], uint8_t out[16])
{
    static const char label[] = "rdpbench key check v1";
    crypto_generichash(out, 16, (const unsigned char *)label, sizeof label - 1, key, RDP_KEY_BYTES);
}

/* ---------------------------------------------------------------- message contents */

struct gen {
    uint64_t seed;
    uint32_t smin, smax;
    double root[24]; /* (smax+1)/smin ^ 2^-(k+1) */
    uint8_t *pat;    /* PAT_LEN bytes of ChaCha20 keyed by the seed */
};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int gen_init(struct gen *g, uint64_t seed, uint32_t smin, uint32_t smax)
{
    g->seed = seed;
    g->smin = smin;
    g->smax = smax;
    double r = ((double)smax + 1.0) / (double)smin;
    for (int k = 0; k < 24; k++) g->root[k] = r = sqrt(r);
    g->pat = malloc(PAT_LEN);
    if (!g->pat) return -1;
    uint8_t k[crypto_stream_chacha20_KEYBYTES], s[8], nonce[crypto_stream_chacha20_NONCEBYTES];
    static const char label[] = "rdpbench pattern v1";
    be_put64(s, seed);
    crypto_generichash(k, sizeof k, s, sizeof s, (const unsigned char *)label, sizeof label - 1);
    memset(nonce, 0, sizeof nonce);
    crypto_stream_chacha20(g->pat, PAT_LEN, nonce, k);
    return 0;
}

static uint64_t msg_hash(const struct gen *g, uint64_t i)
{
    return mix64(g->seed ^ mix64(i));
}

static size_t msg_len(const struct gen *g, uint64_t i)
{
    if (g->smin == g->smax) return g->smin;
    uint64_t u = mix64(msg_hash(g, i) ^ 0x5a5a5a5a5a5a5a5aull) >> 40; /* 24 fraction bits */
    double v = (double)g->smin;
    for (int k = 0; k < 24; k++)
        if (u & (1ull << (23 - k))) v *= g->root[k];
    uint64_t n = (uint64_t)v;
    if (n < g->smin) n = g->smin;
    if (n > g->smax) n = g->smax;
    return (size_t)n;
}

static void msg_fill(const struct gen *g, uint64_t i, uint8_t *buf, size_t len)
{
    uint8_t idx[8];
    be_put64(idx, i);
    if (len < 8) {
        memcpy(buf, idx + 8 - len, len);
        return;
    }
    memcpy(buf, idx, 8);
    uint64_t h = msg_hash(g, i), m = htole64(mix64(h));
    const uint8_t *src = g->pat + (h & 0xffff);
    size_t k = 8;
    for (; k + 8 <= len; k += 8) {
        uint64_t w;
        memcpy(&w, src + k, 8);
        w ^= m;
        memcpy(buf + k, &w, 8);
    }
    for (; k < len; k++) buf[k] = src[k] ^ ((const uint8_t *)&m)[k & 7];
}

/* The first position in [pos, pos + n) at which the bytes at buf (message i's bytes from pos
 * on) differ from message i's pattern, or SIZE_MAX. Bytes 0..7 (the index) are not looked at. */
static size_t pattern_diff(const struct gen *g, uint64_t i, size_t pos, const uint8_t *buf,
                           size_t n)
{
    uint64_t h = msg_hash(g, i), m = htole64(mix64(h)), mk;
    const uint8_t *src = g->pat + (h & 0xffff), *mb = (const uint8_t *)&m;
    size_t k = pos < 8 ? 8 : pos, end = pos + n;
    /* byte k is masked with mb[k & 7]: words from any k on take the mask rotated by k & 7
     * bytes (a piece of a message may start anywhere) */
    uint8_t m2[16];
    memcpy(m2, mb, 8);
    memcpy(m2 + 8, mb, 8);
    memcpy(&mk, m2 + (k & 7), 8);
    for (; k + 8 <= end; k += 8) {
        uint64_t w, x;
        memcpy(&w, src + k, 8);
        memcpy(&x, buf + k - pos, 8);
        if ((w ^ mk) != x) break;
    }
    for (; k < end; k++)
        if (buf[k - pos] != (src[k] ^ mb[k & 7])) return k;
    return SIZE_MAX;
}

/* true if the pieces iov[0..n), joined (len bytes), are message i; else why says what is
 * wrong. */
static bool msg_check_iov(const struct gen *g, uint64_t i, const struct iovec *iov, int n,
                          size_t len, char *why, size_t wl)
{
    size_t want = msg_len(g, i);
    uint8_t idx[8], head[8];
    be_put64(idx, i);
    size_t hl = len < 8 ? len : 8, got = 0;
    for (int k = 0; k < n && got < hl; k++) {
        size_t c = iov[k].iov_len < hl - got ? iov[k].iov_len : hl - got;
        memcpy(head + got, iov[k].iov_base, c);
        got += c;
    }
    if (len >= 8 && want >= 8 && be_get64(head) != i) {
        uint64_t h = be_get64(head);
        if (h < i)
            snprintf(why, wl,
                     "message #%" PRIu64 " expected, got #%" PRIu64
                     " (%zu bytes) again: duplicated or reordered",
                     i, h, len);
        else
            snprintf(why, wl,
                     "message #%" PRIu64 " expected, got #%" PRIu64
                     " (%zu bytes): lost or reordered",
                     i, h, len);
        return false;
    }
    if (len != want) {
        snprintf(why, wl,
                 "message #%" PRIu64 ": %zu bytes, expected %zu (lost, mixed or truncated)", i, len,
                 want);
        return false;
    }
    if (memcmp(head, idx + 8 - hl, hl) != 0) {
        snprintf(why, wl, "message #%" PRIu64 " (%zu bytes): index bytes differ (another message?)",
                 i, len);
        return false;
    }
    size_t pos = 0;
    for (int k = 0; k < n; k++) {
        const uint8_t *buf = iov[k].iov_base;
        size_t at = pattern_diff(g, i, pos, buf, iov[k].iov_len);
        if (at != SIZE_MAX) {
            uint64_t h = msg_hash(g, i), m = htole64(mix64(h));
            uint8_t e = g->pat[(h & 0xffff) + at] ^ ((const uint8_t *)&m)[at & 7];
            snprintf(why, wl,
                     "message #%" PRIu64 " (%zu bytes): byte %zu is 0x%02x, expected 0x%02x "
                     "(corrupted)",
                     i, len, at, buf[at - pos], e);
            return false;
        }
        pos += iov[k].iov_len;
    }
    return true;
}

/* true if buf is message i; else why says what is wrong. */
static bool msg_check(const struct gen *g, uint64_t i, const uint8_t *buf, size_t len, char *why,
                      size_t wl)
{
    struct iovec one = {(void *)(uintptr_t)buf, len};
    return msg_check_iov(g, i, &one, 1, len, why, wl);
}

/* RDPBENCH_TEST_FAULT (client only): what the sender does wrong, at which message. */
static enum { TF_NONE, TF_SWAP, TF_DUP, TF_FLIP } test_fault;
static uint64_t test_fault_at;

static void test_fault_parse(void)
{
    const char *s = getenv("RDPBENCH_TEST_FAULT");
    if (!s || !*s) return;
    const char *colon = strchr(s, ':');
    if (colon && parse_u64(colon + 1, 0, UINT64_MAX - 2, &test_fault_at)) {
        size_t n = (size_t)(colon - s);
        if (n == 4 && strncmp(s, "swap", 4) == 0) test_fault = TF_SWAP;
        if (n == 3 && strncmp(s, "dup", 3) == 0) test_fault = TF_DUP;
        if (n == 4 && strncmp(s, "flip", 4) == 0) test_fault = TF_FLIP;
    }
    if (test_fault == TF_NONE) {
        fprintf(stderr, "rdpbench: RDPBENCH_TEST_FAULT: swap:N, dup:N or flip:N, not '%s'\n", s);
        exit(2);
    }
    fprintf(stderr, "rdpbench: RDPBENCH_TEST_FAULT=%s: sending wrong data on purpose\n", s);
}

/* The message the client sends at step i (message i, unless a test fault says otherwise). */
static size_t make_msg(const struct gen *g, uint64_t i, uint8_t *buf)
{
    uint64_t idx = i, n = test_fault_at;
    if (test_fault == TF_SWAP && (i == n || i == n + 1)) idx = i == n ? n + 1 : n;
    if (test_fault == TF_DUP && i == n + 1) idx = n;
    size_t len = msg_len(g, idx);
    msg_fill(g, idx, buf, len);
    if (test_fault == TF_FLIP && i == n) buf[len / 2] ^= 0x40;
    return len;
}

/* ---------------------------------------------------------------- statistics */

struct bstats {
    uint64_t f[STAT_FIELDS];
    uint64_t drops[RDP_DROP__COUNT];
};

enum {
    S_PKTS_SENT,
    S_PKTS_RECV,
    S_BYTES_SENT,
    S_BYTES_RECV,
    S_MSGS_SENT,
    S_MSGS_RECV,
    S_RETRANS,
    S_TIMEOUTS,
    S_CONNECTS,
    S_LOSSES,
    S_ICMP,
    S_SRTT,
    S_RTTVAR,
    S_RTO,
    S_CWND,
    S_INJ_DROP,
    S_INJ_DUP,
    S_INJ_REORDER,
    S_INJ_CORRUPT,
    S_GSO_SENDS,
    S_GRO_READS,
    S_MAC,
    S_OOO,
    S_PEER_WND,
    S_RCV_WND,
    S_PAYLOAD,
};

static const char *const stat_names[] = {
    "pkts_sent",   "pkts_recv", "bytes_sent", "bytes_recv", "msgs_sent",    "msgs_recv",
    "retransmits", "timeouts",  "connects",   "losses",     "icmp_errors",  "srtt_us",
    "rttvar_us",   "rto_us",    "cwnd",       "inj_drop",   "inj_dup",      "inj_reorder",
    "inj_corrupt", "gso_sends", "gro_reads",  "mac_used",   "out_of_order", "peer_wnd",
    "rcv_wnd",     "payload",
};
_Static_assert(sizeof stat_names / sizeof stat_names[0] == STAT_FIELDS, "a name per field");

static void stats_collect(const rdp_t *rdp, uint32_t peer, struct bstats *s)
{
    struct rdp_stats es;
    struct rdp_peer_stats ps;
    memset(s, 0, sizeof *s);
    memset(&ps, 0, sizeof ps);
    rdp_stats(rdp, &es);
    rdp_peer_stats(rdp, peer, &ps);
    s->f[S_PKTS_SENT] = es.pkts_sent;
    s->f[S_PKTS_RECV] = es.pkts_recv;
    s->f[S_BYTES_SENT] = ps.bytes_sent;
    s->f[S_BYTES_RECV] = ps.bytes_recv;
    s->f[S_MSGS_SENT] = ps.msgs_sent;
    s->f[S_MSGS_RECV] = ps.msgs_recv;
    s->f[S_RETRANS] = es.retransmits;
    s->f[S_TIMEOUTS] = ps.timeouts;
    s->f[S_CONNECTS] = ps.connects;
    s->f[S_LOSSES] = ps.losses;
    s->f[S_ICMP] = es.icmp_errors;
    s->f[S_SRTT] = ps.srtt_us;
    s->f[S_RTTVAR] = ps.rttvar_us;
    s->f[S_RTO] = ps.rto_us;
    s->f[S_CWND] = ps.cwnd;
    s->f[S_INJ_DROP] = es.inj_drop;
    s->f[S_INJ_DUP] = es.inj_dup;
    s->f[S_INJ_REORDER] = es.inj_reorder;
    s->f[S_INJ_CORRUPT] = es.inj_corrupt;
    s->f[S_GSO_SENDS] = es.gso_sends;
    s->f[S_GRO_READS] = es.gro_reads;
    s->f[S_MAC] = ps.mac;
    s->f[S_OOO] = ps.out_of_order;
    s->f[S_PEER_WND] = ps.peer_wnd;
    s->f[S_RCV_WND] = ps.rcv_wnd;
    s->f[S_PAYLOAD] = ps.payload;
    for (int r = 0; r < RDP_DROP__COUNT; r++) s->drops[r] = es.drops[r];
}

static void stats_encode(const struct bstats *s, uint8_t *p)
{
    be_put16(p, STAT_FIELDS);
    be_put16(p + 2, RDP_DROP__COUNT);
    p += 4;
    for (int k = 0; k < STAT_FIELDS; k++, p += 8) be_put64(p, s->f[k]);
    for (int r = 0; r < RDP_DROP__COUNT; r++, p += 8) be_put64(p, s->drops[r]);
}

static bool stats_decode(const uint8_t *p, size_t len, struct bstats *s)
{
    if (len != STATS_LEN || be_get16(p) != STAT_FIELDS || be_get16(p + 2) != RDP_DROP__COUNT)
        return false;
    p += 4;
    for (int k = 0; k < STAT_FIELDS; k++, p += 8) s->f[k] = be_get64(p);
    for (int r = 0; r < RDP_DROP__COUNT; r++, p += 8) s->drops[r] = be_get64(p);
    return true;
}

static void stats_print(FILE *f, const char *side, const struct bstats *s)
{
    const uint64_t *v = s->f;
    fprintf(f,
            "%s rdp: packets %" PRIu64 " sent / %" PRIu64 " received, retransmits %" PRIu64
            ", timeouts %" PRIu64 ", srtt %" PRIu64 " us (rttvar %" PRIu64 ", rto %" PRIu64
            "), cwnd %" PRIu64 " (windows: peer's %" PRIu64 ", own %" PRIu64 "; %" PRIu64
            " B per packet), connects %" PRIu64 ", losses %" PRIu64 ", mac used %s\n",
            side, v[S_PKTS_SENT], v[S_PKTS_RECV], v[S_RETRANS], v[S_TIMEOUTS], v[S_SRTT],
            v[S_RTTVAR], v[S_RTO], v[S_CWND], v[S_PEER_WND], v[S_RCV_WND], v[S_PAYLOAD],
            v[S_CONNECTS], v[S_LOSSES], mac_name((int)v[S_MAC]));
    fprintf(f, "%s drops:", side);
    bool any = false;
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        if (!s->drops[r]) continue;
        fprintf(f, " %s %" PRIu64, rdp_drop_reason_name((enum rdp_drop_reason)r), s->drops[r]);
        any = true;
    }
    fprintf(f, "%s", any ? "\n" : " none\n");
    fprintf(f,
            "%s injected: drop %" PRIu64 ", dup %" PRIu64 ", reorder %" PRIu64 ", corrupt %" PRIu64
            "; icmp errors %" PRIu64 "; offload: %" PRIu64 " GSO sends, %" PRIu64
            " GRO reads; %" PRIu64 " packets arrived out of order\n",
            side, v[S_INJ_DROP], v[S_INJ_DUP], v[S_INJ_REORDER], v[S_INJ_CORRUPT], v[S_ICMP],
            v[S_GSO_SENDS], v[S_GRO_READS], v[S_OOO]);
}

static void json_name(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) fputc(((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) ? *s : '_', f);
    fputc('"', f);
}

static void stats_json(FILE *f, const struct bstats *s)
{
    fputc('{', f);
    for (int k = 0; k < STAT_FIELDS; k++) fprintf(f, "\"%s\":%" PRIu64 ",", stat_names[k], s->f[k]);
    fprintf(f, "\"drops\":{");
    for (int r = 0; r < RDP_DROP__COUNT; r++) {
        json_name(f, rdp_drop_reason_name((enum rdp_drop_reason)r));
        fprintf(f, ":%" PRIu64 "%s", s->drops[r], r + 1 < RDP_DROP__COUNT ? "," : "");
    }
    fprintf(f, "}}");
}

/* ---------------------------------------------------------------- session state */

struct bench {
    const struct opts *o;
    bool server;
    FILE *out; /* human-readable output */
    rdp_t *rdp;
    uint32_t peer;
    int epfd, ctl;
    struct lazytimer wake; /* in epfd: RDP's deadlines and the loop's own */
    uint8_t cbuf[CTL_HDR + CTL_MAX_BODY];
    size_t clen;
    bool ctl_eof, aborted;
    uint64_t progress_ns;

    /* run parameters: client from options, server from HELLO */
    int mode;
    uint32_t smin, smax;
    uint64_t count, warmup, total, seed;
    unsigned mtu, timeout_s;
    unsigned peer_mtu; /* client: the server's (packets carry the smaller one's payload) */
    int mac;
    const char *mac_impl; /* rdp_mac_impl() of our endpoint, kept past rdp_close */
    bool vs_tcp;
    struct gen gen;
    bool gen_ok;

    /* receive side */
    uint64_t recv_next, recv_bytes, recv_ns;
    bool teardown; /* losses no longer matter: the run is over */
    uint64_t cansend_gen;

    /* server: an echo waiting for room in the send queue */
    uint8_t *pend;
    size_t pend_len;
    bool pend_on;

    /* control state */
    bool got_hello, got_ready, got_done, got_fin, got_stats, got_tcp_start, got_tcp_ready,
        got_tcp_result, stats_sent, tcp_started;
    uint64_t done_ns, fin_ns;
    struct sockaddr_storage peer_addr; /* the other side's RDP address */
    socklen_t peer_addrlen;
    uint16_t data_port;
    bool peer_faults;
    struct bstats my_stats, peer_stats;
    uint32_t tcp_status;
    int dlisten, pidfd, errpipe;
    pid_t child;
};

static int ctl_send(struct bench *b, uint8_t type, const void *body, size_t len);
static size_t rdp_queued(struct bench *b);

static void fatal(struct bench *b, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void fatal(struct bench *b, const char *fmt, ...)
{
    static bool in_fatal;
    char msg[CTL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b && b->out) fflush(b->out);
    fprintf(stderr, "rdpbench: %s: error: %s\n", prog_role, msg);
    if (b && !in_fatal) {
        in_fatal = true;
        if (b->rdp && (b->recv_next || rdp_queued(b) || b->got_ready)) {
            /* what the endpoint looked like when it failed */
            struct bstats st;
            struct rdp_peer_stats ps;
            memset(&ps, 0, sizeof ps);
            stats_collect(b->rdp, b->peer, &st);
            rdp_peer_stats(b->rdp, b->peer, &ps);
            fprintf(stderr,
                    "rdpbench: %s: at failure: messages received %" PRIu64 "/%" PRIu64
                    ", sent %" PRIu64 "; peer state %d, queued %zu, inflight %u, cwnd %u, "
                    "peer window %u\n",
                    prog_role, b->recv_next, b->total, ps.msgs_sent, (int)ps.state, ps.queued,
                    ps.inflight, ps.cwnd, ps.peer_wnd);
            stats_print(stderr, prog_role, &st);
        }
        if (b->ctl >= 0) ctl_send(b, CT_ERR, msg, strlen(msg));
        if (b->child > 0) {
            kill(b->child, SIGKILL);
            waitpid(b->child, NULL, 0);
        }
    }
    exit(1);
}

static void sys_fatal(struct bench *b, const char *what)
{
    fatal(b, "%s: %s", what, strerror(errno));
}

/* ---------------------------------------------------------------- control channel */

static int wait_fd(int fd, short ev, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = ETIMEDOUT;
        return r > 0 ? 0 : -1;
    }
}

static int ctl_send(struct bench *b, uint8_t type, const void *body, size_t len)
{
    uint8_t frame[CTL_HDR + CTL_MAX_BODY];
    if (len > CTL_MAX_BODY) len = CTL_MAX_BODY;
    be_put32(frame, CTL_MAGIC);
    frame[4] = CTL_VERSION;
    frame[5] = type;
    be_put16(frame + 6, 0);
    be_put32(frame + 8, (uint32_t)len);
    if (len) memcpy(frame + CTL_HDR, body, len);
    size_t n = CTL_HDR + len, off = 0;
    while (off < n) {
        ssize_t r = send(b->ctl, frame + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            off += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(b->ctl, POLLOUT, (int)b->timeout_s * 1000) < 0) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

static void ctl_send_or_die(struct bench *b, uint8_t type, const void *body, size_t len)
{
    if (ctl_send(b, type, body, len) < 0) {
        int e = errno;
        b->ctl = -1;
        errno = e;
        sys_fatal(b, "control connection: send");
    }
}

/* The server's answer to a malformed control frame: say so, end the session. A client
 * does not survive a bad server. */
static void proto_error(struct bench *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void proto_error(struct bench *b, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!b->server) fatal(b, "control protocol: %s", msg);
    fprintf(stderr, "rdpbench: server: control protocol: %s; dropping the client\n", msg);
    ctl_send(b, CT_ERR, msg, strlen(msg));
    b->ctl_eof = b->aborted = true;
}

static void on_hello(struct bench *b, const uint8_t *p, size_t len);

static void ctl_dispatch(struct bench *b, uint8_t type, const uint8_t *p, size_t len)
{
    b->progress_ns = rdp_now_ns();
    if (type == CT_ERR) {
        char msg[CTL_ERR_MAX + 1];
        size_t n = len < CTL_ERR_MAX ? len : CTL_ERR_MAX;
        for (size_t k = 0; k < n; k++) msg[k] = (p[k] >= 32 && p[k] < 127) ? (char)p[k] : '?';
        msg[n] = '\0';
        b->ctl = -1; /* nothing to tell a side that failed */
        fatal(b, "%s reported: %s", b->server ? "client" : "server", msg);
    }
    if (b->server) {
        switch (type) {
        case CT_HELLO:
            if (b->got_hello) {
                proto_error(b, "second HELLO");
                return;
            }
            return on_hello(b, p, len);
        case CT_FIN:
            if (!b->got_hello || b->got_fin) {
                proto_error(b, "unexpected FIN");
                return;
            }
            if (!stats_decode(p, len, &b->peer_stats)) {
                proto_error(b, "bad FIN length");
                return;
            }
            b->got_fin = true;
            b->fin_ns = rdp_now_ns();
            b->teardown = true;
            return;
        case CT_TCP_START:
            if (!b->stats_sent || !b->vs_tcp || b->got_tcp_start || len) {
                proto_error(b, "unexpected TCP_START");
                return;
            }
            b->got_tcp_start = true;
            return;
        default: {
            proto_error(b, "unexpected message type %u (%zu bytes)", type, len);
            return;
        }
        }
    }
    switch (type) {
    case CT_READY:
        if (b->got_ready || len != READY_LEN) break;
        b->data_port = be_get16(p);
        b->peer_faults = be_get16(p + 2) & READY_F_FAULTS;
        b->peer_mtu = be_get32(p + 4);
        b->got_ready = true;
        return;
    case CT_DONE:
        if (b->got_done || len != DONE_LEN || b->mode != MODE_STREAM) break;
        b->done_ns = rdp_now_ns();
        if (be_get64(p) != b->total)
            fatal(b, "server's DONE says %" PRIu64 " messages, expected %" PRIu64, be_get64(p),
                  b->total);
        b->got_done = true;
        return;
    case CT_STATS:
        if (b->got_stats || !stats_decode(p, len, &b->peer_stats)) break;
        b->got_stats = true;
        return;
    case CT_TCP_READY:
        if (b->got_tcp_ready || len) break;
        b->got_tcp_ready = true;
        return;
    case CT_TCP_RESULT:
        if (b->got_tcp_result || len != TCP_RESULT_LEN) break;
        b->tcp_status = be_get32(p);
        b->got_tcp_result = true;
        return;
    default:
        break;
    }
    proto_error(b, "unexpected message type %u (%zu bytes)", type, len);
}

static void ctl_read(struct bench *b)
{
    while (!b->ctl_eof) {
        ssize_t r = recv(b->ctl, b->cbuf + b->clen, sizeof b->cbuf - b->clen, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {
            if (r < 0 && !b->server) sys_fatal(b, "control connection");
            b->ctl_eof = true;
            epoll_ctl(b->epfd, EPOLL_CTL_DEL, b->ctl, NULL); /* EOF stays readable */
            return;
        }
        b->clen += (size_t)r;
        while (b->clen >= CTL_HDR && !b->ctl_eof) {
            uint32_t len = be_get32(b->cbuf + 8);
            if (be_get32(b->cbuf) != CTL_MAGIC || b->cbuf[4] != CTL_VERSION ||
                be_get16(b->cbuf + 6) != 0 || len > CTL_MAX_BODY) {
                proto_error(b, "bad frame header (magic %08x, version %u, length %u)",
                            be_get32(b->cbuf), b->cbuf[4], len);
                return;
            }
            if (b->clen < CTL_HDR + len) break;
            ctl_dispatch(b, b->cbuf[5], b->cbuf + CTL_HDR, len);
            memmove(b->cbuf, b->cbuf + CTL_HDR + len, b->clen - CTL_HDR - len);
            b->clen -= CTL_HDR + len;
        }
    }
}

/* ---------------------------------------------------------------- RDP callbacks */

/* Echo the message (pieces iov[0..n)); when the queue is full, keep a joined copy for
 * can_send. */
static void try_echo(struct bench *b, const struct iovec *iov, int n, size_t len)
{
    uint64_t gen0 = b->cansend_gen;
    if (rdp_sendv(b->rdp, b->peer, iov, n) == 0) return;
    if (errno != EAGAIN) sys_fatal(b, "rdp_send (echo)");
    if (b->cansend_gen != gen0) { /* room came back during the call: once more */
        if (rdp_sendv(b->rdp, b->peer, iov, n) == 0) return;
        if (errno != EAGAIN) sys_fatal(b, "rdp_send (echo)");
    }
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        if (iov[k].iov_base != b->pend + off)
            memcpy(b->pend + off, iov[k].iov_base, iov[k].iov_len);
        off += iov[k].iov_len;
    }
    b->pend_len = len;
    b->pend_on = true;
}

/* A message from RDP, in pieces (recvv) or joined (recv, with --joined). */
static void cb_recvv(void *ctx, uint32_t node, const struct iovec *iov, int n, size_t len)
{
    struct bench *b = ctx;
    uint64_t now = rdp_now_ns();
    char why[256];
    if (node != b->peer) fatal(b, "rdp: message from unexpected node %u", node);
    if ((!b->server && b->mode == MODE_STREAM) || b->recv_next >= b->total)
        fatal(b, "rdp: unexpected message (%zu bytes) after all %" PRIu64 " expected", len,
              b->recv_next);
    if (!msg_check_iov(&b->gen, b->recv_next, iov, n, len, why, sizeof why))
        fatal(b, "rdp: verification failed: %s", why);
    b->recv_next++;
    b->recv_bytes += len;
    b->recv_ns = b->progress_ns = now;
    if (!b->server) return;
    if (b->mode == MODE_PINGPONG) {
        if (b->pend_on)
            fatal(b,
                  "rdp: client sent message #%" PRIu64 " before the echo of the "
                  "last one could be queued",
                  b->recv_next - 1);
        try_echo(b, iov, n, len);
    } else if (b->recv_next == b->total) {
        uint8_t d[DONE_LEN];
        be_put64(d, b->recv_next);
        be_put64(d + 8, b->recv_bytes);
        ctl_send_or_die(b, CT_DONE, d, sizeof d);
    }
}

static void cb_recv(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct iovec one = {(void *)(uintptr_t)msg, len};
    cb_recvv(ctx, node, &one, 1, len);
}

static void cb_connected(void *ctx, uint32_t node)
{
    (void)ctx;
    (void)node;
}

static void cb_lost(void *ctx, uint32_t node, enum rdp_lost_reason why)
{
    struct bench *b = ctx;
    if (b->teardown) return;
    fatal(b, "rdp: connection to node %u lost (%s)", node, rdp_lost_reason_name(why));
}

static void cb_undeliverable(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct bench *b = ctx;
    if (b->teardown) return;
    char idx[32] = "";
    if (len >= 8) snprintf(idx, sizeof idx, " #%" PRIu64, be_get64(msg));
    fatal(b, "rdp: message%s (%zu bytes) to node %u reported undeliverable", idx, len, node);
}

static void cb_can_send(void *ctx, uint32_t node)
{
    struct bench *b = ctx;
    (void)node;
    b->cansend_gen++;
    if (b->pend_on) {
        b->pend_on = false;
        struct iovec one = {b->pend, b->pend_len};
        try_echo(b, &one, 1, b->pend_len);
    }
}

/* ---------------------------------------------------------------- event loop */

enum { TAG_RDP = 1, TAG_CTL, TAG_CHILD, TAG_WAKE };

static void ep_add(struct bench *b, int fd, uint32_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
    if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) sys_fatal(b, "epoll_ctl");
}

static void child_reaped(struct bench *b);

/* Wait for the next event (at most max_ns), then handle it: control frames, the child's
 * exit, RDP input and timers. */
static void step(struct bench *b, uint64_t max_ns)
{
    uint64_t at = rdp_now_ns() + max_ns;
    if (b->rdp) {
        uint64_t dl = rdp_next_deadline(b->rdp);
        if (dl < at) at = dl;
    }
    struct epoll_event ev[8];
    int n = lazytimer_wait(&b->wake, b->epfd, ev, 8, at);
    if (n < 0) {
        if (errno == EINTR) return;
        sys_fatal(b, "epoll_wait");
    }
    bool run = false;
    for (int k = 0; k < n; k++) {
        switch (ev[k].data.u32) {
        case TAG_RDP:
            run = true;
            break;
        case TAG_CTL:
            ctl_read(b);
            break;
        case TAG_CHILD:
            child_reaped(b);
            break;
        case TAG_WAKE:
            lazytimer_fired(&b->wake);
            break;
        }
    }
    if (b->rdp && (run || rdp_next_deadline(b->rdp) <= rdp_now_ns()))
        if (rdp_process(b->rdp) < 0) sys_fatal(b, "rdp_process");
}

static void check_progress(struct bench *b, const char *what)
{
    if (b->ctl_eof && !b->server) fatal(b, "server closed the control connection while %s", what);
    if (rdp_now_ns() - b->progress_ns > (uint64_t)b->timeout_s * NSEC) {
        struct rdp_peer_stats ps;
        memset(&ps, 0, sizeof ps);
        if (b->rdp) rdp_peer_stats(b->rdp, b->peer, &ps);
        fatal(b,
              "no progress for %u s while %s (received %" PRIu64 "/%" PRIu64
              "; rdp: state %d, queued %zu bytes, inflight %u, cwnd %u, peer window %u, "
              "retransmits %" PRIu64 ", timeouts %" PRIu64 ")",
              b->timeout_s, what, b->recv_next, b->total, (int)ps.state, ps.queued, ps.inflight,
              ps.cwnd, ps.peer_wnd, ps.retransmits, ps.timeouts);
    }
}

static size_t rdp_queued(struct bench *b)
{
    struct rdp_peer_stats ps;
    if (rdp_peer_stats(b->rdp, b->peer, &ps) < 0) return 0;
    return ps.queued;
}

static rdp_t *open_rdp(struct bench *b, uint32_t node, const struct sockaddr_storage *bind,
                       socklen_t bindlen)
{
    const struct opts *o = b->o;
    struct rdp_config cfg;
    rdp_config_defaults(&cfg);
    cfg.node_id = node;
    memcpy(&cfg.bind, bind, bindlen);
    cfg.bind_len = bindlen;
    memcpy(cfg.key, o->key, RDP_KEY_BYTES);
    cfg.mtu = b->mtu;
    cfg.mac = (enum rdp_mac_alg)b->mac;
    if (o->rto_min_us) cfg.rto_min_us = o->rto_min_us;
    if (o->max_retrans) cfg.max_retrans = o->max_retrans;
    if (o->sndbuf) cfg.sndbuf = o->sndbuf;
    if (o->rcvbuf) cfg.rcvbuf = o->rcvbuf;
    if (o->sock_buf) cfg.sock_buf = o->sock_buf;
    if (o->no_offload) cfg.offload = 0;
    cfg.mac_impl = (enum rdp_mac_impl)o->mac_impl;
    struct rdp_callbacks cb = {.ctx = b,
                               .recv = cb_recv,
                               .recvv = o->joined ? NULL : cb_recvv,
                               .connected = cb_connected,
                               .lost = cb_lost,
                               .undeliverable = cb_undeliverable,
                               .can_send = cb_can_send};
    return rdp_open(&cfg, &cb);
}

static bool want_faults(const struct opts *o)
{
    return o->loss > 0 || o->dup > 0 || o->reorder > 0 || o->corrupt > 0;
}

static void set_faults(struct bench *b, uint64_t salt)
{
    const struct opts *o = b->o;
    if (!want_faults(o)) return;
    struct rdp_faults f = {.drop = o->loss,
                           .dup = o->dup,
                           .reorder = o->reorder,
                           .corrupt = o->corrupt,
                           .dir = RDP_FAULT_BOTH,
                           .seed = mix64(b->seed ^ salt) | 1};
    if (rdp_set_faults(b->rdp, &f) < 0) sys_fatal(b, "rdp_set_faults");
}

static void bench_init(struct bench *b, const struct opts *o, bool server)
{
    memset(b, 0, sizeof *b);
    b->o = o;
    b->server = server;
    b->out = (!server && o->json) ? stderr : stdout;
    b->ctl = b->dlisten = b->pidfd = b->errpipe = -1;
    b->timeout_s = o->timeout_s;
    b->progress_ns = rdp_now_ns();
    b->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (b->epfd < 0) sys_fatal(NULL, "epoll_create1");
    if (lazytimer_open(&b->wake) < 0) sys_fatal(NULL, "timerfd_create");
    ep_add(b, b->wake.fd, TAG_WAKE);
}

static void bench_close_loop(struct bench *b)
{
    lazytimer_close(&b->wake);
    close(b->epfd);
    b->epfd = -1;
}

/* ---------------------------------------------------------------- TCP helpers */

static int tcp_socket_opts(int fd, unsigned timeout_s)
{
    int one = 1;
    struct timeval tv = {.tv_sec = timeout_s};
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
        return -1;
    return 0;
}

/* Connect with a bounded wait; the socket is left non-blocking. */
static int tcp_connect(const struct sockaddr_storage *sa, socklen_t len, unsigned timeout_s)
{
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)sa, len) < 0) {
        if (errno != EINPROGRESS) goto fail;
        if (wait_fd(fd, POLLOUT, (int)timeout_s * 1000) < 0) goto fail;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            errno = err;
            goto fail;
        }
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int tcp_listen(struct sockaddr_storage *sa, socklen_t len)
{
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl = len;
    if (bind(fd, (struct sockaddr *)sa, len) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)sa, &sl) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Read exactly n bytes: 1, 0 on EOF before the first byte, -1 on error/timeout/short EOF. */
static int read_full(int fd, void *buf, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = read(fd, (uint8_t *)buf + off, n - off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) errno = ETIMEDOUT;
            return -1;
        }
        if (r == 0) {
            if (off == 0) return 0;
            errno = EPIPE;
            return -1;
        }
        off += (size_t)r;
    }
    return 1;
}

static int write_frame(int fd, const void *msg, size_t len)
{
    uint8_t hdr[4];
    be_put32(hdr, (uint32_t)len);
    struct iovec iov[2] = {{hdr, 4}, {(void *)msg, len}};
    size_t left = 4 + len;
    while (left) {
        ssize_t r = writev(fd, iov, 2);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) errno = ETIMEDOUT;
            return -1;
        }
        left -= (size_t)r;
        for (int k = 0; k < 2; k++) {
            size_t t = (size_t)r < iov[k].iov_len ? (size_t)r : iov[k].iov_len;
            iov[k].iov_base = (uint8_t *)iov[k].iov_base + t;
            iov[k].iov_len -= t;
            r -= (ssize_t)t;
        }
    }
    return 0;
}

/* Read one frame into buf (RDP_MAX_MSG bytes): its length, 0 on clean EOF; -1 and why. */
static ssize_t read_frame(int fd, uint8_t *buf, char *why, size_t wl)
{
    uint8_t hdr[4];
    int r = read_full(fd, hdr, 4);
    if (r == 0) return 0;
    if (r < 0) {
        snprintf(why, wl, "read: %s", strerror(errno));
        return -1;
    }
    uint32_t len = be_get32(hdr);
    if (len > RDP_MAX_MSG) {
        snprintf(why, wl, "frame of %u bytes (more than %u)", len, RDP_MAX_MSG);
        return -1;
    }
    if (len && read_full(fd, buf, len) != 1) {
        snprintf(why, wl, "read: %s", errno ? strerror(errno) : "short");
        return -1;
    }
    return len ? (ssize_t)len : -2; /* -2: an empty frame (valid only for 0-byte sizes) */
}

/* ---------------------------------------------------------------- server */

static void child_fail(int errfd, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void child_fail(int errfd, const char *fmt, ...)
{
    char msg[CTL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
    fprintf(stderr, "rdpbench: server: tcp: %s\n", msg);
    if (write(errfd, msg, (size_t)n) < 0) { /* the parent then reports the status alone */
    }
    _exit(1);
}

/* The kernel TCP echo (pingpong) or sink (stream), in a child process: one connection,
 * every message verified like the RDP ones. */
static void tcp_child(struct bench *b, int errfd) __attribute__((noreturn));
static void tcp_child(struct bench *b, int errfd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (wait_fd(b->dlisten, POLLIN, (int)b->timeout_s * 1000) < 0)
        child_fail(errfd, "no data connection within %u s", b->timeout_s);
    int fd = accept4(b->dlisten, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0 || tcp_socket_opts(fd, b->timeout_s) < 0)
        child_fail(errfd, "accept: %s", strerror(errno));
    uint8_t *buf = malloc(RDP_MAX_MSG);
    if (!buf) child_fail(errfd, "out of memory");
    char why[256];
    for (uint64_t i = 0; i < b->total; i++) {
        ssize_t n = read_frame(fd, buf, why, sizeof why);
        if (n == 0)
            child_fail(errfd, "connection closed after %" PRIu64 " of %" PRIu64 " messages", i,
                       b->total);
        if (n == -1) child_fail(errfd, "message #%" PRIu64 ": %s", i, why);
        size_t len = n == -2 ? 0 : (size_t)n;
        if (!msg_check(&b->gen, i, buf, len, why, sizeof why))
            child_fail(errfd, "verification failed: %s", why);
        if (b->mode == MODE_PINGPONG && write_frame(fd, buf, len) < 0)
            child_fail(errfd, "echo #%" PRIu64 ": %s", i, strerror(errno));
    }
    if (b->mode == MODE_STREAM) {
        uint8_t ack[TCP_ACK];
        be_put64(ack, b->total);
        if (write(fd, ack, sizeof ack) != (ssize_t)sizeof ack)
            child_fail(errfd, "final acknowledgement: %s", strerror(errno));
    }
    uint8_t extra;
    ssize_t r = read(fd, &extra, 1);
    if (r > 0) child_fail(errfd, "data after the last of %" PRIu64 " messages", b->total);
    _exit(0);
}

static void start_tcp_child(struct bench *b)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) sys_fatal(b, "pipe2");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) sys_fatal(b, "fork");
    if (pid == 0) {
        close(pfd[0]);
        tcp_child(b, pfd[1]);
    }
    close(pfd[1]);
    b->child = pid;
    b->errpipe = pfd[0];
    b->pidfd = pidfd_open(pid, 0);
    if (b->pidfd < 0) sys_fatal(b, "pidfd_open");
    ep_add(b, b->pidfd, TAG_CHILD);
    ctl_send_or_die(b, CT_TCP_READY, NULL, 0);
}

static void child_reaped(struct bench *b)
{
    int st = 0;
    if (waitpid(b->child, &st, 0) < 0) sys_fatal(b, "waitpid");
    b->child = 0;
    epoll_ctl(b->epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
    close(b->pidfd);
    b->pidfd = -1;
    uint32_t status = WIFEXITED(st) ? (uint32_t)WEXITSTATUS(st) : 128u + (uint32_t)WTERMSIG(st);
    char msg[CTL_ERR_MAX];
    ssize_t n = read(b->errpipe, msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(b->errpipe);
    b->errpipe = -1;
    if (status != 0) fatal(b, "tcp: %s", n > 0 ? msg : "echo/sink child failed");
    uint8_t r[TCP_RESULT_LEN];
    be_put32(r, status);
    be_put64(r + 4, b->total);
    ctl_send_or_die(b, CT_TCP_RESULT, r, sizeof r);
    if (!b->o->quiet)
        fprintf(b->out, "server: tcp %s: %" PRIu64 " messages verified\n",
                b->mode == MODE_PINGPONG ? "echo" : "sink", b->total);
}

static void on_hello(struct bench *b, const uint8_t *p, size_t len)
{
    const struct opts *o = b->o;
    if (len != HELLO_LEN) {
        proto_error(b, "HELLO of %zu bytes, expected %d", len, HELLO_LEN);
        return;
    }
    b->mode = p[0];
    b->vs_tcp = p[1] & HELLO_F_VSTCP;
    b->mac = p[2];
    if (o->mac >= 0) b->mac = o->mac; /* the server's own choice; RDP negotiates */
    if (!rdp_mac_available((enum rdp_mac_alg)b->mac)) {
        proto_error(b, "MAC %s is not available on the server's CPU", mac_name(b->mac));
        return;
    }
    b->smin = be_get32(p + 4);
    b->smax = be_get32(p + 8);
    b->count = be_get64(p + 12);
    b->warmup = be_get64(p + 20);
    b->seed = be_get64(p + 28);
    unsigned mtu = be_get32(p + 36);
    unsigned tmo = be_get32(p + 40);
    uint16_t fam = be_get16(p + 44), port = be_get16(p + 46);
    if (b->mode != MODE_PINGPONG && b->mode != MODE_STREAM) {
        proto_error(b, "bad mode %d", b->mode);
        return;
    }
    if (b->smin < 1 || b->smin > b->smax || b->smax > RDP_MAX_MSG) {
        proto_error(b, "bad sizes %u-%u", b->smin, b->smax);
        return;
    }
    if (b->count < 1 || b->count > (1ull << 40) || b->warmup > (1ull << 40)) {
        proto_error(b, "bad count");
        return;
    }
    if (tmo >= 1 && tmo <= 3600 && !o->have_timeout) b->timeout_s = tmo;
    b->mtu = o->mtu ? o->mtu : mtu;
    if (b->mtu < RDP_MTU_MIN || b->mtu > RDP_MTU_MAX) {
        proto_error(b, "bad mtu %u", b->mtu);
        return;
    }
    memset(&b->peer_addr, 0, sizeof b->peer_addr);
    if (fam == 4) {
        struct sockaddr_in *s = (struct sockaddr_in *)&b->peer_addr;
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        memcpy(&s->sin_addr, p + 48, 4);
        b->peer_addrlen = sizeof *s;
    } else if (fam == 6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&b->peer_addr;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        memcpy(&s->sin6_addr, p + 48, 16);
        b->peer_addrlen = sizeof *s;
    } else {
        {
            proto_error(b, "bad address family %u", fam);
            return;
        }
    }
    uint8_t kc[16];
    key_check(o->key, kc);
    if (sodium_memcmp(kc, p + 64, 16) != 0) {
        proto_error(b, "key mismatch: client and server use different keys (--key)");
        return;
    }
    b->total = b->mode == MODE_PINGPONG ? b->warmup + b->count : b->count;
    b->got_hello = true;
}

/* One client, from HELLO to the end of the control connection. 0 if the run completed. */
static int server_session(const struct opts *o, int ctl, const struct sockaddr_storage *from)
{
    static struct bench sb; /* static: fatal() reaches it from callbacks */
    struct bench *b = &sb;
    char a1[64], a2[64];
    int rc = 1;
    if (b->gen_ok) free(b->gen.pat);
    free(b->pend);
    bench_init(b, o, true);
    b->peer = NODE_CLI;
    b->ctl = ctl;
    int fl = fcntl(ctl, F_GETFL);
    fcntl(ctl, F_SETFL, fl | O_NONBLOCK);
    ep_add(b, ctl, TAG_CTL);

    while (!b->got_hello && !b->ctl_eof) {
        step(b, STEP_NS);
        if (rdp_now_ns() - b->progress_ns > 10 * NSEC) {
            fprintf(stderr, "rdpbench: server: no HELLO from %s within 10 s\n",
                    addr_str(from, a1, sizeof a1));
            goto out;
        }
    }
    if (!b->got_hello) goto out;
    if (gen_init(&b->gen, b->seed, b->smin, b->smax) < 0 || !(b->pend = malloc(RDP_MAX_MSG)))
        fatal(b, "out of memory");
    b->gen_ok = true;
    b->rdp = open_rdp(b, NODE_SRV, &o->addr, o->addrlen);
    if (!b->rdp) {
        char msg[256];
        snprintf(msg, sizeof msg, "server: rdp_open %s: %s", addr_str(&o->addr, a1, sizeof a1),
                 strerror(errno));
        fprintf(stderr, "rdpbench: %s\n", msg);
        ctl_send(b, CT_ERR, msg, strlen(msg));
        goto out;
    }
    if (rdp_add_peer(b->rdp, NODE_CLI, (struct sockaddr *)&b->peer_addr, b->peer_addrlen) < 0)
        sys_fatal(b, "rdp_add_peer");
    set_faults(b, 0x5e);
    ep_add(b, rdp_fd(b->rdp), TAG_RDP);
    uint8_t rd[READY_LEN] = {0};
    if (b->vs_tcp) {
        struct sockaddr_storage da = o->addr;
        addr_set_port(&da, 0);
        b->dlisten = tcp_listen(&da, o->addrlen);
        if (b->dlisten < 0) sys_fatal(b, "tcp data listener");
        be_put16(rd, addr_port(&da));
    }
    be_put16(rd + 2, want_faults(o) ? READY_F_FAULTS : 0);
    be_put32(rd + 4, b->mtu);
    ctl_send_or_die(b, CT_READY, rd, sizeof rd);
    if (!o->quiet)
        fprintf(b->out,
                "server: client %s (rdp %s): %s, size %u%s%u, count %" PRIu64 " + warmup %" PRIu64
                ", seed 0x%016" PRIx64 ", mtu %u, mac %s (%s)%s%s\n",
                addr_str(from, a1, sizeof a1), addr_str(&b->peer_addr, a2, sizeof a2),
                b->mode == MODE_PINGPONG ? "pingpong" : "stream", b->smin,
                b->smin == b->smax ? "=" : "-", b->smax, b->count,
                b->mode == MODE_PINGPONG ? b->warmup : 0, b->seed, b->mtu, mac_name(b->mac),
                rdp_mac_impl(b->rdp), b->vs_tcp ? ", vs tcp" : "",
                want_faults(o) ? ", faults injected here" : "");
    fflush(b->out);
    b->progress_ns = rdp_now_ns();

    while (!b->ctl_eof) {
        step(b, STEP_NS);
        if (b->got_fin && !b->stats_sent &&
            (rdp_queued(b) == 0 || rdp_now_ns() - b->fin_ns > 2 * NSEC)) {
            stats_collect(b->rdp, b->peer, &b->my_stats);
            uint8_t s[STATS_LEN];
            stats_encode(&b->my_stats, s);
            ctl_send_or_die(b, CT_STATS, s, sizeof s);
            b->stats_sent = true;
            if (!o->quiet) {
                fprintf(b->out, "server: %" PRIu64 " messages (%" PRIu64 " bytes) verified%s\n",
                        b->recv_next, b->recv_bytes, b->mode == MODE_PINGPONG ? " and echoed" : "");
                stats_print(b->out, "server", &b->my_stats);
                fflush(b->out);
            }
        }
        if (b->got_tcp_start && !b->tcp_started) {
            b->tcp_started = true;
            start_tcp_child(b);
        }
        if (!b->got_fin && b->recv_next < b->total)
            check_progress(b, "waiting for the client's messages");
        else if (b->child == 0 && rdp_now_ns() - b->progress_ns > (uint64_t)b->timeout_s * NSEC) {
            fprintf(stderr, "rdpbench: server: client idle for %u s; dropping it\n", b->timeout_s);
            goto out;
        }
    }
    if (b->aborted) goto out;
    if (b->child > 0) { /* the client went away during the TCP run */
        kill(b->child, SIGKILL);
        waitpid(b->child, NULL, 0);
        b->child = 0;
    }
    if (!b->got_fin) {
        fprintf(stderr,
                "rdpbench: server: client %s went away after %" PRIu64 "/%" PRIu64 " messages\n",
                addr_str(from, a1, sizeof a1), b->recv_next, b->total);
        goto out;
    }
    rc = 0;
out:
    fflush(b->out);
    b->teardown = true;
    if (b->child > 0) {
        kill(b->child, SIGKILL);
        waitpid(b->child, NULL, 0);
        b->child = 0;
    }
    if (b->pidfd >= 0) close(b->pidfd);
    if (b->errpipe >= 0) close(b->errpipe);
    if (b->rdp) rdp_close(b->rdp);
    b->rdp = NULL;
    if (b->dlisten >= 0) close(b->dlisten);
    bench_close_loop(b);
    close(ctl);
    b->ctl = -1;
    return rc;
}

static int server_main(struct opts *o)
{
    prog_role = "server";
    char a[64];
    int lfd = -1;
    bool pick = addr_port(&o->addr) == 0;
    /* TCP and UDP on the same port: with port 0, take the TCP port and retry until UDP can
     * have it too. */
    struct bench probe;
    bench_init(&probe, o, true);
    probe.mtu = o->mtu ? o->mtu : (addr_is_loopback(&o->addr) ? 65536 : 1500);
    for (int attempt = 0; attempt < 50; attempt++) {
        struct sockaddr_storage sa = o->addr;
        lfd = tcp_listen(&sa, o->addrlen);
        if (lfd < 0) {
            fprintf(stderr, "rdpbench: server: tcp listen %s: %s\n",
                    addr_str(&o->addr, a, sizeof a), strerror(errno));
            return 1;
        }
        rdp_t *r = open_rdp(&probe, NODE_SRV, &sa, o->addrlen);
        if (r) {
            rdp_close(r);
            o->addr = sa;
            break;
        }
        int e = errno;
        close(lfd);
        lfd = -1;
        if (!pick || e != EADDRINUSE) {
            fprintf(stderr, "rdpbench: server: rdp bind %s: %s\n", addr_str(&sa, a, sizeof a),
                    strerror(e));
            return 1;
        }
    }
    bench_close_loop(&probe);
    if (lfd < 0) {
        fprintf(stderr, "rdpbench: server: no port free for both TCP and UDP\n");
        return 1;
    }
    printf("server: listening on %s (tcp control, rdp udp node 0)\n",
           addr_str(&o->addr, a, sizeof a));
    fflush(stdout);
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        int fd = accept4(lfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            fprintf(stderr, "rdpbench: server: accept: %s\n", strerror(errno));
            return 1;
        }
        int rc = server_session(o, fd, &from);
        if (o->once) {
            close(lfd);
            return rc;
        }
    }
}

/* ---------------------------------------------------------------- client */

struct lat {
    double median, p99, mean, min;
};
struct tput {
    double secs, gbps, mps;
    uint64_t bytes, msgs;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static struct lat lat_summary(uint64_t *ns, uint64_t n)
{
    struct lat l;
    qsort(ns, n, sizeof *ns, cmp_u64);
    double sum = 0;
    for (uint64_t k = 0; k < n; k++) sum += (double)ns[k];
    l.median = (n % 2 ? (double)ns[n / 2] : ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2) / 1e3;
    uint64_t k99 = (uint64_t)ceil(0.99 * (double)n);
    l.p99 = (double)ns[(k99 ? k99 : 1) - 1] / 1e3;
    l.mean = sum / (double)n / 1e3;
    l.min = (double)ns[0] / 1e3;
    return l;
}

static uint64_t payload_bytes(const struct gen *g, uint64_t from, uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = from; i < from + n; i++) s += msg_len(g, i);
    return s;
}

static struct tput tput_make(const struct bench *b, uint64_t ns)
{
    struct tput t;
    t.msgs = b->total;
    t.bytes = payload_bytes(&b->gen, 0, b->total);
    t.secs = (double)ns / 1e9;
    t.gbps = (double)t.bytes * 8 / (double)ns;
    t.mps = (double)t.msgs / t.secs;
    return t;
}

/* rdp_send, waiting in the event loop while the queue is full. */
static void send_msg(struct bench *b, const uint8_t *msg, size_t len, const char *what)
{
    for (;;) {
        uint64_t gen0 = b->cansend_gen;
        if (rdp_send(b->rdp, b->peer, msg, len) == 0) {
            b->progress_ns = rdp_now_ns();
            return;
        }
        if (errno != EAGAIN) sys_fatal(b, "rdp_send");
        while (b->cansend_gen == gen0) {
            step(b, STEP_NS);
            check_progress(b, what);
        }
    }
}

static struct lat rdp_pingpong(struct bench *b, uint8_t *sbuf, uint64_t *rtt)
{
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(&b->gen, i, sbuf);
        uint64_t t0 = rdp_now_ns();
        send_msg(b, sbuf, len, "sending (pingpong)");
        while (b->recv_next <= i) {
            step(b, STEP_NS);
            check_progress(b, "waiting for an echo");
        }
        if (i >= b->warmup) rtt[i - b->warmup] = b->recv_ns - t0;
    }
    return lat_summary(rtt, b->count);
}

static struct tput rdp_stream(struct bench *b, uint8_t *sbuf)
{
    uint64_t next = 0, blocked_gen = 0;
    bool have = false, blocked = false;
    size_t len = 0;
    uint64_t t0 = rdp_now_ns();
    while (!b->got_done) {
        if (blocked && b->cansend_gen != blocked_gen) blocked = false;
        while (next < b->total && !blocked) {
            if (!have) {
                len = make_msg(&b->gen, next, sbuf);
                have = true;
            }
            uint64_t gen0 = b->cansend_gen;
            if (rdp_send(b->rdp, b->peer, sbuf, len) == 0) {
                next++;
                have = false;
                b->progress_ns = rdp_now_ns();
            } else if (errno != EAGAIN) {
                sys_fatal(b, "rdp_send");
            } else if (b->cansend_gen == gen0) {
                blocked = true;
                blocked_gen = gen0;
            }
        }
        step(b, STEP_NS);
        check_progress(b, next < b->total ? "sending (stream)" : "waiting for the server's DONE");
        if (b->ctl_eof) fatal(b, "server closed the control connection");
    }
    return tput_make(b, b->done_ns - t0);
}

static void wait_ctl(struct bench *b, bool *flag, const char *what)
{
    while (!*flag) {
        step(b, STEP_NS);
        if (b->ctl_eof) fatal(b, "server closed the control connection while %s", what);
        check_progress(b, what);
    }
}

static int tcp_data_connect(struct bench *b)
{
    struct sockaddr_storage da = b->o->addr;
    addr_set_port(&da, b->data_port);
    int fd = tcp_connect(&da, b->o->addrlen, b->timeout_s);
    if (fd < 0) sys_fatal(b, "tcp data connection");
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (tcp_socket_opts(fd, b->timeout_s) < 0) sys_fatal(b, "tcp socket options");
    return fd;
}

static void tcp_check(struct bench *b, uint64_t i, const uint8_t *buf, ssize_t n)
{
    char why[256];
    if (n == 0) fatal(b, "tcp: connection closed at message #%" PRIu64, i);
    if (n == -1) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        fatal(b, "tcp: message #%" PRIu64 ": %s", i, why);
    }
    if (!msg_check(&b->gen, i, buf, n == -2 ? 0 : (size_t)n, why, sizeof why))
        fatal(b, "tcp: verification failed: %s", why);
}

static struct lat tcp_pingpong(struct bench *b, int fd, uint8_t *sbuf, uint8_t *rbuf, uint64_t *rtt)
{
    char why[256];
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(&b->gen, i, sbuf);
        uint64_t t0 = rdp_now_ns();
        if (write_frame(fd, sbuf, len) < 0) sys_fatal(b, "tcp: write");
        ssize_t n = read_frame(fd, rbuf, why, sizeof why);
        uint64_t t1 = rdp_now_ns();
        if (n == -1) fatal(b, "tcp: echo #%" PRIu64 ": %s", i, why);
        tcp_check(b, i, rbuf, n);
        if (i >= b->warmup) rtt[i - b->warmup] = t1 - t0;
    }
    return lat_summary(rtt, b->count);
}

static struct tput tcp_stream(struct bench *b, int fd, uint8_t *sbuf)
{
    uint64_t t0 = rdp_now_ns();
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(&b->gen, i, sbuf);
        if (write_frame(fd, sbuf, len) < 0) sys_fatal(b, "tcp: write");
    }
    uint8_t ack[TCP_ACK];
    if (read_full(fd, ack, sizeof ack) != 1) sys_fatal(b, "tcp: final acknowledgement");
    uint64_t t1 = rdp_now_ns();
    if (be_get64(ack) != b->total)
        fatal(b, "tcp: sink acknowledged %" PRIu64 " messages, expected %" PRIu64, be_get64(ack),
              b->total);
    return tput_make(b, t1 - t0);
}

static void print_lat(FILE *f, const char *what, const struct lat *l, uint64_t n)
{
    fprintf(f,
            "%s pingpong: %" PRIu64 " round trips verified; RTT us: median %.2f, p99 %.2f, "
            "mean %.2f, min %.2f\n",
            what, n, l->median, l->p99, l->mean, l->min);
}

static void print_tput(FILE *f, const char *what, const struct tput *t)
{
    fprintf(f,
            "%s stream: %" PRIu64 " messages (%" PRIu64 " payload bytes) verified in %.3f s: "
            "%.3f Gbit/s, %.0f msgs/s\n",
            what, t->msgs, t->bytes, t->secs, t->gbps, t->mps);
}

static void json_lat(FILE *f, const struct lat *l)
{
    fprintf(f, "{\"rtt_us\":{\"median\":%.3f,\"p99\":%.3f,\"mean\":%.3f,\"min\":%.3f}}", l->median,
            l->p99, l->mean, l->min);
}

static void json_tput(FILE *f, const struct tput *t)
{
    fprintf(f,
            "{\"seconds\":%.6f,\"gbps\":%.4f,\"msgs_per_s\":%.1f,\"bytes\":%" PRIu64
            ",\"msgs\":%" PRIu64 "}",
            t->secs, t->gbps, t->mps, t->bytes, t->msgs);
}

static int client_main(struct opts *o)
{
    prog_role = "client";
    static struct bench cb; /* static: fatal() reaches it from callbacks */
    struct bench *b = &cb;
    char a1[64], a2[64];
    bench_init(b, o, false);
    b->peer = NODE_SRV;
    b->mode = o->mode;
    b->smin = o->smin;
    b->smax = o->smax;
    b->count = o->count;
    b->seed = o->seed;
    b->vs_tcp = o->vs_tcp;
    b->mac = o->mac >= 0 ? o->mac : RDP_MAC_AUTO;
    if (o->mode == MODE_PINGPONG)
        b->warmup =
            o->warmup >= 0 ? (uint64_t)o->warmup : (o->count / 10 < 100 ? o->count / 10 : 100);
    b->total = b->count + b->warmup;
    b->mtu = o->mtu ? o->mtu : (addr_is_loopback(&o->addr) ? 65536 : 1500);
    FILE *out = b->out;

    uint8_t *sbuf = malloc(RDP_MAX_MSG), *rbuf = malloc(RDP_MAX_MSG);
    uint64_t *rtt = o->mode == MODE_PINGPONG ? malloc(b->count * sizeof *rtt) : NULL;
    if (!sbuf || !rbuf || (o->mode == MODE_PINGPONG && !rtt) ||
        gen_init(&b->gen, b->seed, b->smin, b->smax) < 0)
        fatal(b, "out of memory");
    b->gen_ok = true;

    b->ctl = tcp_connect(&o->addr, o->addrlen, b->timeout_s);
    if (b->ctl < 0)
        fatal(NULL, "control connection to %s: %s", addr_str(&o->addr, a1, sizeof a1),
              strerror(errno));
    ep_add(b, b->ctl, TAG_CTL);

    struct sockaddr_storage me;
    socklen_t ml = sizeof me;
    if (o->have_bind) {
        me = o->bind;
        ml = o->bindlen;
    } else {
        if (getsockname(b->ctl, (struct sockaddr *)&me, &ml) < 0) sys_fatal(b, "getsockname");
        addr_set_port(&me, 0);
    }
    b->rdp = open_rdp(b, NODE_CLI, &me, ml);
    if (!b->rdp) fatal(b, "rdp_open %s: %s", addr_str(&me, a1, sizeof a1), strerror(errno));
    b->mac_impl = rdp_mac_impl(b->rdp);
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(rdp_fd(b->rdp), (struct sockaddr *)&bound, &bl) < 0)
        sys_fatal(b, "getsockname");
    if (addr_is_any(&bound)) {
        /* a wildcard bind: the server needs the address our datagrams come from */
        struct sockaddr_storage c;
        socklen_t cl = sizeof c;
        getsockname(b->ctl, (struct sockaddr *)&c, &cl);
        addr_set_port(&c, addr_port(&bound));
        bound = c;
    }
    if (rdp_add_peer(b->rdp, NODE_SRV, (struct sockaddr *)&o->addr, o->addrlen) < 0)
        sys_fatal(b, "rdp_add_peer");
    set_faults(b, 0xc1);
    ep_add(b, rdp_fd(b->rdp), TAG_RDP);

    uint8_t h[HELLO_LEN] = {0};
    h[0] = (uint8_t)b->mode;
    h[1] = (o->vs_tcp ? HELLO_F_VSTCP : 0) | (want_faults(o) ? HELLO_F_FAULTS : 0);
    h[2] = (uint8_t)b->mac;
    be_put32(h + 4, b->smin);
    be_put32(h + 8, b->smax);
    be_put64(h + 12, b->count);
    be_put64(h + 20, b->warmup);
    be_put64(h + 28, b->seed);
    be_put32(h + 36, b->mtu);
    be_put32(h + 40, b->timeout_s);
    if (bound.ss_family == AF_INET6) {
        be_put16(h + 44, 6);
        memcpy(h + 48, &((struct sockaddr_in6 *)&bound)->sin6_addr, 16);
    } else {
        be_put16(h + 44, 4);
        memcpy(h + 48, &((struct sockaddr_in *)&bound)->sin_addr, 4);
    }
    be_put16(h + 46, addr_port(&bound));
    key_check(o->key, h + 64);
    ctl_send_or_die(b, CT_HELLO, h, sizeof h);
    wait_ctl(b, &b->got_ready, "waiting for the server to get ready");

    const char *mname = b->mode == MODE_PINGPONG ? "pingpong" : "stream";
    fprintf(out,
            "client: rdp %s (node 1) -> %s (node 0): %s, size %u%s%u, count %" PRIu64
            " + warmup %" PRIu64 ", seed 0x%016" PRIx64 ", mtu %u%s, mac %s (%s)%s%s\n",
            addr_str(&bound, a1, sizeof a1), addr_str(&o->addr, a2, sizeof a2), mname, b->smin,
            b->smin == b->smax ? "=" : "-", b->smax, b->count, b->warmup, b->seed, b->mtu,
            b->peer_mtu != b->mtu ? " (the server's differs: packets fit the smaller)" : "",
            mac_name(b->mac), rdp_mac_impl(b->rdp), want_faults(o) ? ", faults injected here" : "",
            b->peer_faults ? ", faults injected at the server" : "");
    if (want_faults(o))
        fprintf(out,
                "client: injecting loss %g, dup %g, reorder %g, corrupt %g (both directions)\n",
                o->loss, o->dup, o->reorder, o->corrupt);
    fflush(out);

    struct lat rl = {0}, tl = {0};
    struct tput rt = {0}, tt = {0};
    b->progress_ns = rdp_now_ns();
    if (b->mode == MODE_PINGPONG)
        rl = rdp_pingpong(b, sbuf, rtt);
    else
        rt = rdp_stream(b, sbuf);

    /* everything we sent acknowledged, then swap statistics */
    while (rdp_queued(b) > 0) {
        step(b, STEP_NS);
        check_progress(b, "waiting for the last acknowledgements");
    }
    stats_collect(b->rdp, b->peer, &b->my_stats);
    uint8_t s[STATS_LEN];
    stats_encode(&b->my_stats, s);
    ctl_send_or_die(b, CT_FIN, s, sizeof s);
    wait_ctl(b, &b->got_stats, "waiting for the server's statistics");
    b->teardown = true;
    epoll_ctl(b->epfd, EPOLL_CTL_DEL, rdp_fd(b->rdp), NULL);
    rdp_close(b->rdp);
    b->rdp = NULL;

    if (b->mode == MODE_PINGPONG)
        print_lat(out, "rdp", &rl, b->count);
    else
        print_tput(out, "rdp", &rt);
    fflush(out);

    if (o->vs_tcp) {
        ctl_send_or_die(b, CT_TCP_START, NULL, 0);
        wait_ctl(b, &b->got_tcp_ready, "waiting for the server's TCP echo/sink");
        int fd = tcp_data_connect(b);
        if (b->mode == MODE_PINGPONG)
            tl = tcp_pingpong(b, fd, sbuf, rbuf, rtt);
        else
            tt = tcp_stream(b, fd, sbuf);
        close(fd);
        b->progress_ns = rdp_now_ns();
        wait_ctl(b, &b->got_tcp_result, "waiting for the server's TCP result");
        if (b->tcp_status != 0) fatal(b, "tcp: server side failed (status %u)", b->tcp_status);
        if (b->mode == MODE_PINGPONG) {
            print_lat(out, "tcp", &tl, b->count);
            fprintf(out, "ratio rdp/tcp (RTT median): %.3f\n", rl.median / tl.median);
        } else {
            print_tput(out, "tcp", &tt);
            fprintf(out, "ratio rdp/tcp (throughput): %.3f\n", rt.gbps / tt.gbps);
        }
    }
    stats_print(out, "client", &b->my_stats);
    stats_print(out, "server", &b->peer_stats);
    fflush(out);

    if (o->json) {
        FILE *f = stdout;
        fprintf(f,
                "{\"mode\":\"%s\",\"size_min\":%u,\"size_max\":%u,\"count\":%" PRIu64
                ",\"warmup\":%" PRIu64 ",\"seed\":\"0x%016" PRIx64
                "\",\"mtu\":%u,\"server_mtu\":%u,"
                "\"mac\":\"%s\","
                "\"mac_impl\":\"%s\",\"key\":\"%s\","
                "\"faults\":{\"loss\":%g,\"dup\":%g,\"reorder\":%g,\"corrupt\":%g,"
                "\"server\":%s},\"rdp\":",
                mname, b->smin, b->smax, b->count, b->warmup, b->seed, b->mtu, b->peer_mtu,
                mac_name(b->mac), b->mac_impl, o->keyfile ? "file" : "fixed", o->loss, o->dup,
                o->reorder, o->corrupt, b->peer_faults ? "true" : "false");
        if (b->mode == MODE_PINGPONG)
            json_lat(f, &rl);
        else
            json_tput(f, &rt);
        fprintf(f, ",\"tcp\":");
        if (!o->vs_tcp)
            fprintf(f, "null,\"ratio\":null");
        else if (b->mode == MODE_PINGPONG) {
            json_lat(f, &tl);
            fprintf(f, ",\"ratio\":%.4f", rl.median / tl.median);
        } else {
            json_tput(f, &tt);
            fprintf(f, ",\"ratio\":%.4f", rt.gbps / tt.gbps);
        }
        fprintf(f, ",\"client\":");
        stats_json(f, &b->my_stats);
        fprintf(f, ",\"server\":");
        stats_json(f, &b->peer_stats);
        fprintf(f, "}\n");
        fflush(f);
    }
    close(b->ctl);
    b->ctl = -1;
    free(sbuf);
    free(rbuf);
    free(rtt);
    free(b->gen.pat);
    bench_close_loop(b);
    return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    enum {
        O_MODE = 256,
        O_SIZE,
        O_COUNT,
        O_WARMUP,
        O_SEED,
        O_BIND,
        O_KEY,
        O_LOSS,
        O_DUP,
        O_REORDER,
        O_CORRUPT,
        O_MTU,
        O_RTO_MIN,
        O_MAX_RETRANS,
        O_SNDBUF,
        O_RCVBUF,
        O_SOCKBUF,
        O_VSTCP,
        O_JSON,
        O_ONCE,
        O_TIMEOUT,
        O_QUIET,
        O_MAC,
        O_NOOFFLOAD,
        O_JOINED,
        O_MACIMPL,
    };
    static const struct option lo[] = {
        {"mode", required_argument, NULL, O_MODE},
        {"size", required_argument, NULL, O_SIZE},
        {"count", required_argument, NULL, O_COUNT},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"seed", required_argument, NULL, O_SEED},
        {"bind", required_argument, NULL, O_BIND},
        {"key", required_argument, NULL, O_KEY},
        {"loss", required_argument, NULL, O_LOSS},
        {"dup", required_argument, NULL, O_DUP},
        {"reorder", required_argument, NULL, O_REORDER},
        {"corrupt", required_argument, NULL, O_CORRUPT},
        {"mtu", required_argument, NULL, O_MTU},
        {"rto-min-us", required_argument, NULL, O_RTO_MIN},
        {"max-retrans", required_argument, NULL, O_MAX_RETRANS},
        {"sndbuf", required_argument, NULL, O_SNDBUF},
        {"rcvbuf", required_argument, NULL, O_RCVBUF},
        {"sock-buf", required_argument, NULL, O_SOCKBUF},
        {"vs-tcp", no_argument, NULL, O_VSTCP},
        {"json", no_argument, NULL, O_JSON},
        {"once", no_argument, NULL, O_ONCE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"quiet", no_argument, NULL, O_QUIET},
        {"mac", required_argument, NULL, O_MAC},
        {"no-offload", no_argument, NULL, O_NOOFFLOAD},
        {"joined", no_argument, NULL, O_JOINED},
        {"mac-impl", required_argument, NULL, O_MACIMPL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct opts o;
    o.warmup = -1;
    o.timeout_s = 30;
    o.mac = -1;
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0) {
            usage(stdout);
            return 0;
        }
    if (argc < 2) bad_usage("missing 'server' or 'client'");
    if (strcmp(argv[1], "server") == 0)
        o.server = true;
    else if (strcmp(argv[1], "client") != 0)
        bad_usage("unknown command '%s' (server or client)", argv[1]);
    bool client_only = false, server_only = false, have_size = false, have_count = false;
    uint64_t v;
    enum rdp_mac_alg alg;
    enum rdp_mac_impl impl;
    struct rdp_config lib; /* the library's defaults: --rto-min-us may not exceed its rto_max */
    rdp_config_defaults(&lib);
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        const char *name = c >= 256 ? lo[c - 256].name : "";
        switch (c) {
        case O_MODE:
            client_only = true;
            if (strcmp(optarg, "pingpong") == 0)
                o.mode = MODE_PINGPONG;
            else if (strcmp(optarg, "stream") == 0)
                o.mode = MODE_STREAM;
            else
                bad_usage("--mode: pingpong or stream, not '%s'", optarg);
            break;
        case O_SIZE: {
            client_only = have_size = true;
            char lo_s[32], *dash = strchr(optarg, '-');
            uint64_t a, z;
            if (dash && (size_t)(dash - optarg) < sizeof lo_s) {
                memcpy(lo_s, optarg, (size_t)(dash - optarg));
                lo_s[dash - optarg] = '\0';
                if (!parse_u64(lo_s, 1, RDP_MAX_MSG, &a) ||
                    !parse_u64(dash + 1, a, RDP_MAX_MSG, &z))
                    bad_usage("--size: MIN-MAX with 1 <= MIN <= MAX <= %u, not '%s'", RDP_MAX_MSG,
                              optarg);
            } else if (dash || !parse_u64(optarg, 1, RDP_MAX_MSG, &a)) {
                bad_usage("--size: 1..%u bytes or MIN-MAX, not '%s'", RDP_MAX_MSG, optarg);
            } else {
                z = a;
            }
            o.smin = (uint32_t)a;
            o.smax = (uint32_t)z;
            break;
        }
        case O_COUNT:
            client_only = have_count = true;
            if (!parse_u64(optarg, 1, 1ull << 32, &o.count))
                bad_usage("--count: 1..2^32, not '%s'", optarg);
            break;
        case O_WARMUP:
            client_only = true;
            if (!parse_u64(optarg, 0, 1ull << 32, &v)) bad_usage("--warmup: not '%s'", optarg);
            o.warmup = (int64_t)v;
            break;
        case O_SEED:
            client_only = o.have_seed = true;
            if (!parse_u64(optarg, 0, UINT64_MAX, &o.seed)) bad_usage("--seed: not '%s'", optarg);
            break;
        case O_BIND:
            client_only = o.have_bind = true;
            if (parse_addr(optarg, false, &o.bind, &o.bindlen) < 0)
                bad_usage("--bind: ADDR or ADDR:PORT, not '%s'", optarg);
            break;
        case O_KEY:
            o.keyfile = optarg;
            break;
        case O_LOSS:
            o.loss = parse_prob(name, optarg);
            break;
        case O_DUP:
            o.dup = parse_prob(name, optarg);
            break;
        case O_REORDER:
            o.reorder = parse_prob(name, optarg);
            break;
        case O_CORRUPT:
            o.corrupt = parse_prob(name, optarg);
            break;
        /* the RDP tunables, in the ranges rdp_open accepts (include/rdp.h) */
        case O_MTU:
            o.mtu = (unsigned)parse_opt(name, optarg, RDP_MTU_MIN, RDP_MTU_MAX, NULL);
            break;
        case O_RTO_MIN:
            o.rto_min_us = (unsigned)parse_opt(name, optarg, RDP_RTO_MIN_US_MIN, lib.rto_max_us,
                                               "(at most RDP's rto_max_us)");
            break;
        case O_MAX_RETRANS:
            o.max_retrans =
                (unsigned)parse_opt(name, optarg, RDP_MAX_RETRANS_MIN, RDP_MAX_RETRANS_MAX, NULL);
            break;
        case O_SNDBUF:
        case O_RCVBUF:
            v = parse_opt(name, optarg, RDP_BUF_MIN, OPT_BUF_MAX, "bytes");
            *(c == O_SNDBUF ? &o.sndbuf : &o.rcvbuf) = (size_t)v;
            break;
        case O_SOCKBUF:
            o.sock_buf = (size_t)parse_opt(name, optarg, 1, OPT_BUF_MAX, "bytes");
            break;
        case O_VSTCP:
            client_only = o.vs_tcp = true;
            break;
        case O_JSON:
            client_only = o.json = true;
            break;
        case O_ONCE:
            server_only = o.once = true;
            break;
        case O_NOOFFLOAD:
            o.no_offload = true;
            break;
        case O_JOINED:
            o.joined = true;
            break;
        case O_MACIMPL:
            if (rdp_mac_impl_parse(optarg, &impl) < 0)
                bad_usage("--mac-impl: best, portable or ipsec-mb, not '%s'", optarg);
            o.mac_impl = (int)impl;
            break;
        case O_MAC:
            if (rdp_mac_alg_parse(optarg, &alg) < 0)
                bad_usage("--mac: auto, chacha20poly1305 or aes256gcm, not '%s'", optarg);
            o.mac = (int)alg;
            if (!rdp_mac_available((enum rdp_mac_alg)o.mac))
                bad_usage("--mac %s: not available on this CPU", optarg);
            break;
        case O_QUIET:
            server_only = o.quiet = true;
            break;
        case O_TIMEOUT:
            if (!parse_u64(optarg, 1, 3600, &v))
                bad_usage("--timeout: 1..3600 s, not '%s'", optarg);
            o.timeout_s = (unsigned)v;
            o.have_timeout = true;
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) bad_usage("need exactly one ADDR:PORT");
    if (parse_addr(argv[optind], true, &o.addr, &o.addrlen) < 0)
        bad_usage("bad address '%s' (numeric ADDR:PORT, [V6]:PORT)", argv[optind]);
    if (o.server && client_only) bad_usage("that option is for the client");
    if (!o.server && server_only) bad_usage("that option is for the server");
    if (!o.server) {
        if (!o.mode || !have_size || !have_count) bad_usage("client needs --mode, --size, --count");
        if (addr_port(&o.addr) == 0) bad_usage("client needs the server's port");
        if (o.have_bind && o.bind.ss_family != o.addr.ss_family)
            bad_usage("--bind: not the server's address family");
    }
    if (sodium_init() < 0) {
        fprintf(stderr, "rdpbench: libsodium failed to initialize\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    FILE *info = (!o.server && o.json) ? stderr : stdout;
    if (o.keyfile) {
        load_key(o.keyfile, o.key);
    } else {
        fixed_key(o.key);
        fprintf(info, "%s: no --key given: using the fixed benchmark key (public, not secret)\n",
                o.server ? "server" : "client");
    }
    if (!o.have_seed) randombytes_buf(&o.seed, sizeof o.seed);
    if (!o.server) test_fault_parse();
    return o.server ? server_main(&o) : client_main(&o);
}
