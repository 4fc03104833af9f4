/*
 * harness.c - shared harness of the RDP protocol tests: endpoints with event logs, the
 * seeded message generator, a stream sender that honours EAGAIN/can_send, the ppoll driver
 * loop and a replaying UDP proxy. See harness.h for the design.
 */
#include "harness.h"

#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- environment ---- */

int h_quick(void)
{
    const char *q = getenv("RDP_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

int h_soak(void)
{
    const char *q = getenv("RDP_TEST_SOAK");
    return q && *q && strcmp(q, "0") != 0;
}

uint64_t h_scale(uint64_t n)
{
    if (!h_quick()) return n;
    return n / 10 ? n / 10 : 1;
}

/* ---- PRNG and messages ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t h_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x2545f4914f6cdd1dull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

uint64_t h_stream_seed(uint32_t src, uint32_t dst)
{
    return splitmix64(((uint64_t)src << 32) ^ dst ^ 0x5eed);
}

/* The generator of message k's bytes. A message shorter than H_MSG_HDR cannot carry its
 * length, so its bytes depend on it: a short message delivered truncated (or padded) fails
 * the check instead of passing as a prefix of the right bytes. */
static uint64_t msg_state(uint64_t seed, uint64_t k, size_t len)
{
    uint64_t s = splitmix64(seed ^ splitmix64(k + 1));
    if (len < H_MSG_HDR) s = splitmix64(s ^ len);
    return s ? s : 1;
}

void h_msg_fill(void *buf, size_t len, uint64_t seed, uint64_t k)
{
    unsigned char *p = buf;
    size_t off = 0;
    if (len >= H_MSG_HDR) {
        for (int i = 0; i < 8; i++) p[i] = (unsigned char)(k >> (56 - 8 * i));
        for (int i = 0; i < 4; i++) p[8 + i] = (unsigned char)((uint64_t)len >> (24 - 8 * i));
        off = H_MSG_HDR;
    }
    uint64_t st = msg_state(seed, k, len);
    while (off < len) {
        uint64_t r = h_rand(&st);
        size_t n = len - off < 8 ? len - off : 8;
        memcpy(p + off, &r, n);
        off += n;
    }
}

uint64_t h_msg_index(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    if (len < H_MSG_HDR) return H_IDX_NONE;
    uint64_t k = 0;
    for (int i = 0; i < 8; i++) k = (k << 8) | p[i];
    return k;
}

int h_msg_check(const void *buf, size_t len, uint64_t seed, uint64_t k)
{
    const unsigned char *p = buf;
    size_t off = 0;
    if (len == 0) return 0; /* RDP never delivers an empty message */
    if (len >= H_MSG_HDR) {
        if (h_msg_index(buf, len) != k) return 0;
        uint32_t l = 0;
        for (int i = 0; i < 4; i++) l = (l << 8) | p[8 + i];
        if (l != len) return 0;
        off = H_MSG_HDR;
    }
    uint64_t st = msg_state(seed, k, len);
    while (off < len) {
        uint64_t r = h_rand(&st);
        size_t n = len - off < 8 ? len - off : 8;
        if (memcmp(p + off, &r, n) != 0) return 0;
        off += n;
    }
    return 1;
}

size_t h_msg_size(uint64_t seed, uint64_t k, size_t min, size_t max)
{
    if (min < 1) min = 1;
    if (max <= min) return min;
    /* uniform exponent: size = exp(U(ln min, ln(max+1))), so each octave is equally likely */
    uint64_t r = splitmix64(seed ^ 0x512e ^ splitmix64(k * 3 + 7));
    double u = (double)(r >> 11) / 9007199254740992.0; /* [0,1) */
    double lo = log((double)min), hi = log((double)max + 1.0);
    size_t n = (size_t)exp(lo + u * (hi - lo));
    if (n < min) n = min;
    if (n > max) n = max;
    return n;
}

void h_key(unsigned char key[RDP_KEY_BYTES], uint64_t seed)
{
    uint64_t st = splitmix64(seed) | 1;
    for (int i = 0; i < RDP_KEY_BYTES; i++) key[i] = (unsigned char)h_rand(&st);
}

/* ---- endpoints ---- */

void h_addr(struct sockaddr_in *sa, int host, uint16_t port)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    sa->sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)host);
}

static uint16_t next_port;

static uint16_t alloc_port(void)
{
    if (!next_port) next_port = (uint16_t)(20000 + getpid() % 20000);
    uint16_t p = next_port++;
    if (next_port >= 60000 || next_port < 20000) next_port = 20000;
    return p;
}

uint16_t h_free_port(int host)
{
    for (int tries = 0; tries < 200; tries++) {
        uint16_t port = alloc_port();
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd < 0) return 0;
        struct sockaddr_in sa;
        h_addr(&sa, host, port);
        int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        close(fd);
        if (r == 0) return port;
    }
    return 0;
}

int h_silent_socket(int host, struct sockaddr_in *sa)
{
    for (int tries = 0; tries < 200; tries++) {
        h_addr(sa, host, alloc_port());
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) == 0) return fd;
        close(fd);
        if (errno != EADDRINUSE) return -1;
    }
    return -1;
}

void h_config(struct rdp_config *cfg)
{
    rdp_config_defaults(cfg);
}

static void log_event(struct h_ep *ep, const struct h_event *e)
{
    if (ep->nev == ep->cap) {
        size_t cap = ep->cap ? ep->cap * 2 : 256;
        struct h_event *n = realloc(ep->ev, cap * sizeof(*n));
        if (!n) abort();
        ep->ev = n;
        ep->cap = cap;
    }
    ep->ev[ep->nev++] = *e;
    if (e->node < H_MAX_NODES) ep->count[e->type][e->node]++;
}

static void base_event(struct h_ep *ep, struct h_event *e, enum h_ev_type t, uint32_t node)
{
    memset(e, 0, sizeof(*e));
    e->type = t;
    e->node = node;
    e->t_ns = rdp_now_ns();
    e->idx = H_IDX_NONE;
    e->accepted = node < H_MAX_NODES ? ep->accepted[node] : 0;
    e->in_send = ep->in_send;
}

/* Index and content check of a received (kind 0) or undeliverable (kind 1) message. */
static void msg_event(struct h_ep *ep, struct h_event *e, int kind, const void *msg, size_t len,
                      uint64_t seed)
{
    e->len = len;
    uint64_t k = h_msg_index(msg, len);
    if (k == H_IDX_NONE && e->node < H_MAX_NODES) {
        uint64_t last = ep->last_idx[kind][e->node];
        k = last == H_IDX_NONE ? 0 : last + 1;
    }
    e->idx = k;
    e->ok = h_msg_check(msg, len, seed, k);
    if (e->node < H_MAX_NODES) ep->last_idx[kind][e->node] = k;
    if (!e->ok) ep->bad_content++;
}

static void cb_recv(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, H_RECV, node);
    msg_event(ep, &e, 0, msg, len, node < H_MAX_NODES ? ep->rx_seed[node] : 0);
    log_event(ep, &e);
    if (ep->echo) {
        /* from a copy that is gone when rdp_sendv returns, as a stack buffer is, and in
         * three pieces (a 1-byte one in the middle), so that fragments straddle pieces */
        unsigned char *copy = malloc(len);
        if (!copy) abort();
        memcpy(copy, msg, len);
        size_t a = len / 3, b = a + (len > a);
        struct iovec iov[3] = {{copy, a}, {copy + a, b - a}, {copy + b, len - b}};
        if (rdp_sendv(ep->rdp, node, iov, 3) < 0) ep->echo_errors++;
        memset(copy, 0xa5, len);
        free(copy);
    }
    if (ep->on_recv) ep->on_recv(ep, node);
}

static int pieces_next; /* set only inside h_open_pair_pieces: h_ep_open registers recvv */

/* recvv: the pieces are checked, joined, and handled as cb_recv handles a message. */
static void cb_recvv(void *ctx, uint32_t node, const struct iovec *iov, int n, size_t len)
{
    struct h_ep *ep = ctx;
    if (ep->joined_cap < len) {
        free(ep->joined);
        ep->joined = malloc(len);
        if (!ep->joined) abort();
        ep->joined_cap = len;
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len == 0 || off + iov[i].iov_len > len) ep->bad_pieces++;
        if (off + iov[i].iov_len > len) break;
        memcpy(ep->joined + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    if (n < 1 || off != len) ep->bad_pieces++;
    ep->multi_piece += n > 1;
    if (n > ep->max_pieces) ep->max_pieces = n;
    cb_recv(ctx, node, ep->joined, len);
}

static void cb_connected(void *ctx, uint32_t node)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, H_CONNECTED, node);
    log_event(ep, &e);
}

static void cb_lost(void *ctx, uint32_t node, enum rdp_lost_reason why)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, H_LOST, node);
    e.reason = (int)why;
    log_event(ep, &e);
}

static void cb_undeliverable(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, H_UNDELIV, node);
    msg_event(ep, &e, 1, msg, len, node < H_MAX_NODES ? ep->tx_seed[node] : 0);
    log_event(ep, &e);
}

static void cb_can_send(void *ctx, uint32_t node)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, H_CANSEND, node);
    log_event(ep, &e);
}

static void cb_stalled(void *ctx, uint32_t node, bool stalled)
{
    struct h_ep *ep = ctx;
    struct h_event e;
    base_event(ep, &e, stalled ? H_STALLED : H_RESUMED, node);
    log_event(ep, &e);
    if (ep->on_stalled) ep->on_stalled(ep, node, stalled);
}

int h_ep_open(struct h_ep *ep, uint32_t node, int host, uint16_t port,
              const unsigned char key[RDP_KEY_BYTES], const struct rdp_config *cfg)
{
    memset(ep, 0, sizeof(*ep));
    ep->node = node;
    snprintf(ep->name, sizeof(ep->name), "node%u", (unsigned)node);
    for (uint32_t i = 0; i < H_MAX_NODES; i++) {
        ep->rx_seed[i] = h_stream_seed(i, node);
        ep->tx_seed[i] = h_stream_seed(node, i);
        ep->last_idx[0][i] = ep->last_idx[1][i] = H_IDX_NONE;
    }
    if (cfg)
        ep->cfg = *cfg;
    else
        h_config(&ep->cfg);
    ep->cfg.node_id = node;
    memcpy(ep->cfg.key, key, RDP_KEY_BYTES);
    ep->pieces = pieces_next;
    struct rdp_callbacks cb = {
        .ctx = ep,
        .recv = cb_recv,
        .recvv = ep->pieces ? cb_recvv : NULL,
        .connected = cb_connected,
        .lost = cb_lost,
        .undeliverable = cb_undeliverable,
        .can_send = cb_can_send,
        .stalled = cb_stalled,
    };
    for (int tries = 0; tries < 200; tries++) {
        uint16_t p = port ? port : alloc_port();
        h_addr(&ep->addr, host, p);
        memset(&ep->cfg.bind, 0, sizeof(ep->cfg.bind));
        memcpy(&ep->cfg.bind, &ep->addr, sizeof(ep->addr));
        ep->cfg.bind_len = sizeof(ep->addr);
        ep->rdp = rdp_open(&ep->cfg, &cb);
        if (ep->rdp) return 0;
        if (errno != EADDRINUSE || port) break;
    }
    fprintf(stderr, "h_ep_open(node %u, 127.0.0.%d:%u): %s\n", (unsigned)node, host,
            (unsigned)ntohs(ep->addr.sin_port), strerror(errno));
    return -1;
}

void h_ep_close(struct h_ep *ep)
{
    if (ep->rdp) rdp_close(ep->rdp);
    ep->rdp = NULL;
}

void h_ep_free(struct h_ep *ep)
{
    h_ep_close(ep);
    free(ep->joined);
    ep->joined = NULL;
    free(ep->ev);
    ep->ev = NULL;
    ep->nev = ep->cap = 0;
}

int h_add_peer_at(struct h_ep *a, uint32_t node, int host, uint16_t port)
{
    struct sockaddr_in sa;
    h_addr(&sa, host, port);
    return rdp_add_peer(a->rdp, node, (struct sockaddr *)&sa, sizeof(sa));
}

int h_add_peer(struct h_ep *a, const struct h_ep *b)
{
    return rdp_add_peer(a->rdp, b->node, (const struct sockaddr *)&b->addr, sizeof(b->addr));
}

int h_pair(struct h_ep *a, struct h_ep *b)
{
    if (h_add_peer(a, b) < 0) return -1;
    return h_add_peer(b, a);
}

int h_send(struct h_ep *ep, uint32_t node, uint64_t k, size_t len)
{
    static unsigned char *buf;
    static size_t bufsz;
    if (len > bufsz) {
        size_t sz = len < RDP_MAX_MSG + 16 ? RDP_MAX_MSG + 16 : len;
        unsigned char *n = realloc(buf, sz);
        if (!n) abort();
        buf = n;
        bufsz = sz;
    }
    h_msg_fill(buf, len, node < H_MAX_NODES ? ep->tx_seed[node] : 0, k);
    ep->in_send = 1;
    int r = rdp_send(ep->rdp, node, buf, len);
    int err = errno;
    ep->in_send = 0;
    memset(buf, 0xa5, len); /* the caller may reuse its buffer as soon as rdp_send returns */
    if (r == 0 && node < H_MAX_NODES) ep->accepted[node]++;
    errno = err;
    return r;
}

uint64_t h_count(const struct h_ep *ep, enum h_ev_type t, uint32_t node)
{
    return node < H_MAX_NODES ? ep->count[t][node] : 0;
}

const struct h_event *h_find(const struct h_ep *ep, enum h_ev_type t, uint32_t node, uint64_t i)
{
    for (size_t j = 0; j < ep->nev; j++) {
        if (ep->ev[j].type != t || ep->ev[j].node != node) continue;
        if (i-- == 0) return &ep->ev[j];
    }
    return NULL;
}

static const char *ev_name(enum h_ev_type t)
{
    static const char *n[] = {"recv",     "connected", "lost",   "undeliverable",
                              "can_send", "stalled",   "resumed"};
    return (unsigned)t < H_EV__COUNT ? n[t] : "?";
}

uint64_t h_drops_total(const struct rdp_stats *st)
{
    uint64_t s = 0;
    for (int i = 0; i < RDP_DROP__COUNT; i++) s += st->drops[i];
    return s;
}

void h_dump(const struct h_ep *ep, const char *why)
{
    fprintf(stderr, "\n--- %s (node %u, 127.0.0.%u:%u): %s\n", ep->name, (unsigned)ep->node,
            (unsigned)(ntohl(ep->addr.sin_addr.s_addr) & 0xff), (unsigned)ntohs(ep->addr.sin_port),
            why);
    for (uint32_t n = 0; n < H_MAX_NODES; n++) {
        int any = 0;
        for (int t = 0; t < H_EV__COUNT; t++) any |= ep->count[t][n] != 0;
        if (!any && !ep->accepted[n]) continue;
        fprintf(stderr, "  node %u: accepted %llu", (unsigned)n,
                (unsigned long long)ep->accepted[n]);
        for (int t = 0; t < H_EV__COUNT; t++)
            fprintf(stderr, ", %s %llu", ev_name((enum h_ev_type)t),
                    (unsigned long long)ep->count[t][n]);
        fprintf(stderr, "\n");
        if (ep->rdp) {
            struct rdp_peer_stats ps;
            if (rdp_peer_stats(ep->rdp, n, &ps) == 0)
                fprintf(stderr,
                        "    peer: state %d msgs %llu/%llu pkts %llu/%llu retrans %llu timeouts "
                        "%llu connects %llu losses %llu srtt %u rto %u cwnd %u peer_wnd %u "
                        "inflight %u queued %zu\n",
                        (int)ps.state, (unsigned long long)ps.msgs_sent,
                        (unsigned long long)ps.msgs_recv, (unsigned long long)ps.pkts_sent,
                        (unsigned long long)ps.pkts_recv, (unsigned long long)ps.retransmits,
                        (unsigned long long)ps.timeouts, (unsigned long long)ps.connects,
                        (unsigned long long)ps.losses, ps.srtt_us, ps.rto_us, ps.cwnd, ps.peer_wnd,
                        ps.inflight, ps.queued);
        }
    }
    fprintf(stderr, "  bad content: %llu\n", (unsigned long long)ep->bad_content);
    if (ep->rdp) {
        struct rdp_stats st;
        rdp_stats(ep->rdp, &st);
        fprintf(stderr,
                "  endpoint: pkts %llu/%llu retrans %llu icmp %llu inj drop %llu dup %llu "
                "reorder %llu corrupt %llu\n  drops:",
                (unsigned long long)st.pkts_sent, (unsigned long long)st.pkts_recv,
                (unsigned long long)st.retransmits, (unsigned long long)st.icmp_errors,
                (unsigned long long)st.inj_drop, (unsigned long long)st.inj_dup,
                (unsigned long long)st.inj_reorder, (unsigned long long)st.inj_corrupt);
        for (int i = 0; i < RDP_DROP__COUNT; i++)
            if (st.drops[i])
                fprintf(stderr, " %s=%llu", rdp_drop_reason_name((enum rdp_drop_reason)i),
                        (unsigned long long)st.drops[i]);
        fprintf(stderr, "\n");
    }
    /* the last few events */
    size_t from = ep->nev > 8 ? ep->nev - 8 : 0;
    for (size_t j = from; j < ep->nev; j++) {
        const struct h_event *e = &ep->ev[j];
        fprintf(stderr, "  ev[%zu] %s node %u", j, ev_name(e->type), (unsigned)e->node);
        if (e->type == H_LOST)
            fprintf(stderr, " %s", rdp_lost_reason_name((enum rdp_lost_reason)e->reason));
        if (e->type == H_RECV || e->type == H_UNDELIV)
            fprintf(stderr, " idx %llu len %zu ok %d", (unsigned long long)e->idx, e->len, e->ok);
        fprintf(stderr, " accepted %llu\n", (unsigned long long)e->accepted);
    }
}

int h_check_recv_seq(const struct h_ep *rx, uint32_t from_node, uint64_t first, uint64_t end)
{
    uint64_t want = first;
    for (size_t j = 0; j < rx->nev; j++) {
        const struct h_event *e = &rx->ev[j];
        if (e->type != H_RECV || e->node != from_node) continue;
        if (e->idx != want || !e->ok) {
            fprintf(stderr,
                    "%s: from node %u: got message %llu (len %zu, content %s), expected %llu\n",
                    rx->name, (unsigned)from_node, (unsigned long long)e->idx, e->len,
                    e->ok ? "ok" : "BAD", (unsigned long long)want);
            return 0;
        }
        want++;
    }
    if (want != end) {
        fprintf(stderr, "%s: from node %u: received [%llu, %llu), expected [%llu, %llu)\n",
                rx->name, (unsigned)from_node, (unsigned long long)first, (unsigned long long)want,
                (unsigned long long)first, (unsigned long long)end);
        return 0;
    }
    return 1;
}

/* ---- stream ---- */

void h_stream_init(struct h_stream *s, struct h_ep *ep, uint32_t to, uint64_t total, size_t min_len,
                   size_t max_len)
{
    memset(s, 0, sizeof(*s));
    s->ep = ep;
    s->to = to;
    s->total = total;
    s->min_len = min_len;
    s->max_len = max_len;
}

size_t h_stream_len(const struct h_stream *s, uint64_t k)
{
    return h_msg_size(s->ep->tx_seed[s->to], k, s->min_len, s->max_len);
}

int h_stream_pump(struct h_stream *s)
{
    int n = 0;
    if (!s->ep->rdp) return 0;
    if (s->blocked) {
        /* continue only after can_send, as the API asks */
        if (h_count(s->ep, H_CANSEND, s->to) == s->cansend_mark) return 0;
        s->blocked = 0;
    }
    while (s->next < s->total && (!s->max_per_pump || (uint64_t)n < s->max_per_pump)) {
        size_t len = h_stream_len(s, s->next);
        if (h_send(s->ep, s->to, s->next, len) < 0) {
            if (errno == EAGAIN) {
                s->eagains++;
                s->blocked = 1;
                s->cansend_mark = h_count(s->ep, H_CANSEND, s->to);
                break;
            }
            s->error = errno;
            return -1;
        }
        if (!s->first_send_ns) s->first_send_ns = rdp_now_ns();
        struct rdp_peer_stats ps;
        if (rdp_peer_stats(s->ep->rdp, s->to, &ps) == 0) {
            if (ps.queued > s->max_queued) s->max_queued = ps.queued;
            size_t slack = ps.queued > len ? ps.queued - len : 0;
            if (slack > s->max_queued_slack) s->max_queued_slack = slack;
        }
        s->next++;
        n++;
    }
    return n;
}

/* ---- event loop ---- */

void h_net_init(struct h_net *n)
{
    memset(n, 0, sizeof(*n));
}

void h_net_add(struct h_net *n, struct h_ep *ep)
{
    if (n->neps < (int)(sizeof(n->eps) / sizeof(n->eps[0]))) n->eps[n->neps++] = ep;
}

void h_net_add_proxy(struct h_net *n, struct h_proxy *p)
{
    if (n->nproxies < (int)(sizeof(n->proxies) / sizeof(n->proxies[0])))
        n->proxies[n->nproxies++] = p;
}

static int poll_once(struct h_net *n, uint64_t until_ns)
{
    struct pollfd pfd[16];
    int np = 0;
    uint64_t dl = until_ns;
    for (int i = 0; i < n->neps; i++) {
        if (!n->eps[i]->rdp) continue;
        pfd[np].fd = rdp_fd(n->eps[i]->rdp);
        pfd[np].events = POLLIN;
        pfd[np].revents = 0;
        np++;
        uint64_t d = rdp_next_deadline(n->eps[i]->rdp);
        if (d < dl) dl = d;
    }
    for (int i = 0; i < n->nproxies; i++) {
        pfd[np].fd = n->proxies[i]->fd_pa;
        pfd[np].events = POLLIN;
        pfd[np].revents = 0;
        np++;
        pfd[np].fd = n->proxies[i]->fd_pb;
        pfd[np].events = POLLIN;
        pfd[np].revents = 0;
        np++;
    }
    uint64_t now = rdp_now_ns();
    uint64_t wait = dl > now ? dl - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull),
                          .tv_nsec = (long)(wait % 1000000000ull)};
    if (ppoll(pfd, (nfds_t)np, &ts, NULL) < 0 && errno != EINTR) {
        n->error = errno;
        return -1;
    }
    for (int i = 0; i < n->nproxies; i++) h_proxy_drain(n->proxies[i]);
    for (int i = 0; i < n->neps; i++) {
        if (!n->eps[i]->rdp) continue;
        if (rdp_process(n->eps[i]->rdp) < 0) {
            n->error = errno;
            fprintf(stderr, "rdp_process(%s): %s\n", n->eps[i]->name, strerror(errno));
            return -1;
        }
    }
    n->iterations++;
    return 0;
}

int h_cond_recv(void *wait_recv)
{
    const struct h_wait_recv *w = wait_recv;
    return h_count(w->ep, H_RECV, w->from) >= w->n;
}

int h_cond_lost(void *wait_lost)
{
    const struct h_wait_lost *w = wait_lost;
    return h_count(w->ep, H_LOST, w->node) > 0 && h_count(w->ep, H_UNDELIV, w->node) >= w->n;
}

int h_step(struct h_net *n)
{
    return poll_once(n, 0);
}

int h_run(struct h_net *n, h_cond_fn cond, void *ctx, uint64_t timeout_ns)
{
    uint64_t end = rdp_now_ns() + timeout_ns;
    for (;;) {
        if (cond && cond(ctx)) return 1;
        if (rdp_now_ns() >= end) return 0;
        if (poll_once(n, end) < 0) return -1;
    }
}

/* ---- proxy ---- */

static int udp_socket(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int sz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int bind_any_port(struct sockaddr_in *sa, int host)
{
    for (int tries = 0; tries < 200; tries++) {
        h_addr(sa, host, alloc_port());
        int fd = udp_socket(sa);
        if (fd >= 0) return fd;
        if (errno != EADDRINUSE) break;
    }
    return -1;
}

int h_proxy_open(struct h_proxy *p, const struct h_ep *a, const struct h_ep *b, int host_pa,
                 int host_pb)
{
    memset(p, 0, sizeof(*p));
    p->fd_pa = bind_any_port(&p->pa, host_pa);
    p->fd_pb = bind_any_port(&p->pb, host_pb);
    if (p->fd_pa < 0 || p->fd_pb < 0) {
        fprintf(stderr, "h_proxy_open: %s\n", strerror(errno));
        if (p->fd_pa >= 0) close(p->fd_pa);
        if (p->fd_pb >= 0) close(p->fd_pb);
        p->fd_pa = p->fd_pb = -1;
        return -1;
    }
    p->real_a = a->addr;
    p->real_b = b->addr;
    p->forward = 1;
    p->cap_limit = 1u << 16;
    return 0;
}

void h_proxy_close(struct h_proxy *p)
{
    if (p->fd_pa >= 0) close(p->fd_pa);
    if (p->fd_pb >= 0) close(p->fd_pb);
    p->fd_pa = p->fd_pb = -1;
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < p->ncap[d]; i++) free(p->cap[d][i].data);
        free(p->cap[d]);
        p->cap[d] = NULL;
        p->ncap[d] = p->capcap[d] = 0;
    }
}

static void capture(struct h_proxy *p, int dir, const unsigned char *buf, size_t len)
{
    if (p->ncap[dir] >= p->cap_limit) return;
    if (p->ncap[dir] == p->capcap[dir]) {
        size_t cap = p->capcap[dir] ? p->capcap[dir] * 2 : 256;
        struct h_pkt *n = realloc(p->cap[dir], cap * sizeof(*n));
        if (!n) abort();
        p->cap[dir] = n;
        p->capcap[dir] = cap;
    }
    unsigned char *d = malloc(len ? len : 1);
    if (!d) abort();
    memcpy(d, buf, len);
    p->cap[dir][p->ncap[dir]].data = d;
    p->cap[dir][p->ncap[dir]].len = len;
    p->ncap[dir]++;
}

/* dir 0: arrived on pa from A, goes out of pb to B; dir 1: arrived on pb from B, out of pa. */
static void drain_one(struct h_proxy *p, int dir)
{
    static unsigned char buf[65536];
    int in = dir == 0 ? p->fd_pa : p->fd_pb;
    int out = dir == 0 ? p->fd_pb : p->fd_pa;
    const struct sockaddr_in *from_ok = dir == 0 ? &p->real_a : &p->real_b;
    const struct sockaddr_in *to = dir == 0 ? &p->real_b : &p->real_a;
    for (int i = 0; i < 4096; i++) {
        struct sockaddr_in src;
        socklen_t sl = sizeof(src);
        ssize_t n = recvfrom(in, buf, sizeof(buf), 0, (struct sockaddr *)&src, &sl);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            continue; /* ICMP errors queued on the socket: ignore */
        }
        if (src.sin_addr.s_addr != from_ok->sin_addr.s_addr || src.sin_port != from_ok->sin_port) {
            p->foreign++;
            continue;
        }
        capture(p, dir, buf, (size_t)n);
        if (!p->forward) continue;
        if (sendto(out, buf, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to)) == n)
            p->fwd[dir]++;
    }
}

void h_proxy_drain(struct h_proxy *p)
{
    drain_one(p, 0);
    drain_one(p, 1);
}

int h_proxy_send_raw(struct h_proxy *p, int dir, const void *buf, size_t len)
{
    int out = dir == 0 ? p->fd_pb : p->fd_pa;
    const struct sockaddr_in *to = dir == 0 ? &p->real_b : &p->real_a;
    ssize_t n = sendto(out, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
    if (n != (ssize_t)len) return -1;
    p->injected[dir]++;
    return 0;
}

int h_proxy_inject(struct h_proxy *p, int dir, size_t i)
{
    if (i >= p->ncap[dir]) return -1;
    return h_proxy_send_raw(p, dir, p->cap[dir][i].data, p->cap[dir][i].len);
}

int h_open_one(struct h_net *n, struct h_ep *a, const unsigned char key[RDP_KEY_BYTES],
               const struct rdp_config *cfg)
{
    h_net_init(n);
    if (h_ep_open(a, 1, 1, 0, key, cfg) < 0) {
        CU_FAIL("open A");
        return -1;
    }
    h_net_add(n, a);
    return 0;
}

int h_open_pair_cfg(struct h_net *n, struct h_ep *a, struct h_ep *b,
                    const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                    const struct rdp_config *ca, const struct rdp_config *cb)
{
    if (h_open_one(n, a, ka, ca) < 0) return -1;
    if (h_ep_open(b, 2, 2, 0, kb, cb) < 0) {
        CU_FAIL("open B");
        h_ep_free(a);
        return -1;
    }
    CU_ASSERT_EQUAL(h_pair(a, b), 0);
    h_net_add(n, b);
    return 0;
}

int h_open_pair_pieces(struct h_net *n, struct h_ep *a, struct h_ep *b,
                       const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                       const struct rdp_config *ca, const struct rdp_config *cb)
{
    pieces_next = 1;
    int r = h_open_pair_cfg(n, a, b, ka, kb, ca, cb);
    pieces_next = 0;
    return r;
}

int h_open_pair(struct h_net *n, struct h_ep *a, struct h_ep *b,
                const unsigned char ka[RDP_KEY_BYTES], const unsigned char kb[RDP_KEY_BYTES],
                const struct rdp_config *cfg)
{
    return h_open_pair_cfg(n, a, b, ka, kb, cfg, cfg);
}

int h_silent_peer(struct h_ep *a, struct sockaddr_in *sa)
{
    int fd = h_silent_socket(2, sa);
    if (fd < 0) {
        CU_FAIL("bind the silent socket");
        return -1;
    }
    CU_ASSERT_EQUAL(h_add_peer_at(a, 2, 2, ntohs(sa->sin_port)), 0);
    return fd;
}

int h_duplex_done(void *p)
{
    struct h_duplex *c = p;
    if (h_stream_pump(&c->ab) < 0 || h_stream_pump(&c->ba) < 0) c->failed = 1;
    /* stop early on anything that can only get worse */
    if (h_count(c->a, H_LOST, 2) || h_count(c->b, H_LOST, 1) || c->a->bad_content ||
        c->b->bad_content)
        c->failed = 1;
    if (c->failed) return 1;
    return h_count(c->b, H_RECV, 1) >= c->ab.total && h_count(c->a, H_RECV, 2) >= c->ba.total;
}

int h_duplex_run(const struct rdp_config *ca, const struct rdp_config *cb, uint64_t n,
                 size_t max_len, struct rdp_stats st[2], struct rdp_peer_stats ps[2])
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 40);
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair_cfg(&net, &a, &b, key, key, ca, cb) < 0) return -1;

    struct h_duplex c = {.a = &a, .b = &b};
    h_stream_init(&c.ab, &a, 2, n, 1, max_len);
    h_stream_init(&c.ba, &b, 1, n / 4, 1, max_len);
    int r = h_run(&net, h_duplex_done, &c, H_S(30));
    CU_ASSERT_EQUAL(r, 1);
    CU_ASSERT_EQUAL(c.failed, 0);
    if (r != 1 || c.failed) {
        h_dump(&a, "duplex");
        h_dump(&b, "duplex");
    }
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, c.ab.total));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, c.ba.total));
    CU_ASSERT_EQUAL(h_count(&a, H_UNDELIV, 2) + h_count(&b, H_UNDELIV, 1), 0);
    CU_ASSERT_EQUAL(h_count(&a, H_CONNECTED, 2), 1);
    CU_ASSERT_EQUAL(h_count(&b, H_CONNECTED, 1), 1);
    rdp_stats(a.rdp, &st[0]);
    rdp_stats(b.rdp, &st[1]);
    CU_ASSERT_EQUAL(rdp_peer_stats(a.rdp, 2, &ps[0]), 0);
    CU_ASSERT_EQUAL(rdp_peer_stats(b.rdp, 1, &ps[1]), 0);
    h_ep_free(&a);
    h_ep_free(&b);
    return 0;
}

/* A one-way stream of n messages of len bytes from A to B, for at most 10 s; checks that all
 * arrived. */
void h_oneway(struct h_net *net, struct h_ep *a, struct h_ep *b, uint64_t n, size_t len)
{
    struct h_stream s;
    h_stream_init(&s, a, 2, n, len, len);
    struct h_wait_recv w = {b, 1, n};
    uint64_t t0 = rdp_now_ns();
    while (h_count(b, H_RECV, 1) < n && rdp_now_ns() - t0 < H_S(10)) {
        CU_ASSERT_FATAL(h_stream_pump(&s) >= 0);
        if (h_run(net, h_cond_recv, &w, H_MS(1)) < 0) break;
    }
    CU_ASSERT(h_check_recv_seq(b, 1, 0, n));
    if (h_count(b, H_RECV, 1) < n)
        fprintf(stderr, "oneway: stream stalled after %llu of %llu messages in %.1f s\n",
                (unsigned long long)h_count(b, H_RECV, 1), (unsigned long long)n,
                (double)(rdp_now_ns() - t0) / 1e9);
}
