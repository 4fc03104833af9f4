/*
 * session.c - one rdpbench session's life (see bench.h): setup, the RDP endpoint and its
 * callbacks, waiting for the next event, progress checks and fatal errors.
 *
 * The wait: one round of psid's event loop (psloop.h) at a time, over the RDP socket, the
 * control socket (and the server's TCP child), with RDP's deadlines as its timer source: its
 * timerfd fires no later than rdp_next_deadline() (lazytimer.h: set only before sleeping,
 * and only when the deadline moved earlier or the timer is past half its span, not at every
 * wait); the program sleeps in the kernel between packets like a daemon would, it never
 * spins. The roles wait for one thing after another (rb_step until a flag is set, with
 * progress checks between rounds), as redis-benchmark drives Redis's ae.
 */
#include "bench.h"

#include "bebytes.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

void rb_fatal(struct rb_bench *b, const char *fmt, ...)
{
    const char *role = b && b->role ? b->role : "rdpbench";
    char msg[RB_CTL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b && b->out) fflush(b->out);
    fprintf(stderr, "rdpbench: %s: error: %s\n", role, msg);
    if (b && !b->in_fatal) {
        b->in_fatal = true;
        if (b->rdp && (b->recv_next || rb_rdp_queued(b) || b->got_ready)) {
            /* what the endpoint looked like when it failed */
            struct rb_stats st;
            struct rdp_peer_stats ps;
            memset(&ps, 0, sizeof ps);
            rb_stats_collect(b->rdp, b->peer, &st);
            rdp_peer_stats(b->rdp, b->peer, &ps);
            fprintf(stderr,
                    "rdpbench: %s: at failure: messages received %" PRIu64 "/%" PRIu64
                    ", sent %" PRIu64 "; peer state %d, queued %zu, inflight %u, cwnd %u, "
                    "peer window %u\n",
                    role, b->recv_next, b->total, ps.msgs_sent, (int)ps.state, ps.queued,
                    ps.inflight, ps.cwnd, ps.peer_wnd);
            rb_stats_print(stderr, role, &st);
        }
        if (b->ctl >= 0) rb_ctl_send(b, CT_ERR, msg, strlen(msg));
        if (b->child > 0) {
            kill(b->child, SIGKILL);
            waitpid(b->child, NULL, 0);
        }
    }
    exit(1);
}

void rb_sys_fatal(struct rb_bench *b, const char *what)
{
    rb_fatal(b, "%s: %s", what, strerror(errno));
}

/* Echo the message (pieces iov[0..n)); when the queue is full, keep a joined copy for
 * can_send. */
static void try_echo(struct rb_bench *b, const struct iovec *iov, int n, size_t len)
{
    uint64_t gen0 = b->cansend_gen;
    if (rdp_sendv(b->rdp, b->peer, iov, n) == 0) return;
    if (errno != EAGAIN) rb_sys_fatal(b, "rdp_send (echo)");
    if (b->cansend_gen != gen0) { /* room came back during the call: once more */
        if (rdp_sendv(b->rdp, b->peer, iov, n) == 0) return;
        if (errno != EAGAIN) rb_sys_fatal(b, "rdp_send (echo)");
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
    struct rb_bench *b = ctx;
    uint64_t now = rdp_now_ns();
    char why[256];
    if (node != b->peer) rb_fatal(b, "rdp: message from unexpected node %u", node);
    if ((!b->server && b->mode == RB_MODE_STREAM) || b->recv_next >= b->total)
        rb_fatal(b, "rdp: unexpected message (%zu bytes) after all %" PRIu64 " expected", len,
                 b->recv_next);
    if (!rb_msg_check_iov(&b->gen, b->recv_next, iov, n, len, why, sizeof why))
        rb_fatal(b, "rdp: verification failed: %s", why);
    b->recv_next++;
    b->recv_bytes += len;
    b->recv_ns = b->progress_ns = now;
    if (!b->server) return;
    if (b->mode == RB_MODE_PINGPONG) {
        if (b->pend_on)
            rb_fatal(b,
                     "rdp: client sent message #%" PRIu64 " before the echo of the "
                     "last one could be queued",
                     b->recv_next - 1);
        try_echo(b, iov, n, len);
    } else if (b->recv_next == b->total) {
        uint8_t d[RB_DONE_LEN];
        rb_done_encode(b->recv_next, b->recv_bytes, d);
        rb_ctl_send_or_die(b, CT_DONE, d, sizeof d);
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
    struct rb_bench *b = ctx;
    if (b->teardown) return;
    rb_fatal(b, "rdp: connection to node %u lost (%s)", node, rdp_lost_reason_name(why));
}

static void cb_undeliverable(void *ctx, uint32_t node, const void *msg, size_t len)
{
    struct rb_bench *b = ctx;
    if (b->teardown) return;
    char idx[32] = "";
    if (len >= 8) snprintf(idx, sizeof idx, " #%" PRIu64, be_get64(msg));
    rb_fatal(b, "rdp: message%s (%zu bytes) to node %u reported undeliverable", idx, len, node);
}

static void cb_can_send(void *ctx, uint32_t node)
{
    struct rb_bench *b = ctx;
    (void)node;
    b->cansend_gen++;
    if (b->pend_on) {
        b->pend_on = false;
        struct iovec one = {b->pend, b->pend_len};
        try_echo(b, &one, 1, b->pend_len);
    }
}

static void on_rdp(void *ctx, uint32_t events)
{
    struct rb_bench *b = ctx;
    (void)events;
    if (b->rdp && rdp_process(b->rdp) < 0) rb_sys_fatal(b, "rdp_process");
}

static void on_ctl(void *ctx, uint32_t events)
{
    (void)events;
    rb_ctl_read(ctx);
}

static void on_child(void *ctx, uint32_t events)
{
    (void)events;
    rb_server_child_reaped(ctx);
}

/* RDP's timers: the loop asks for the next deadline before it waits and calls this once it
 * passed */
static void on_rdp_due(void *ctx)
{
    on_rdp(ctx, 0);
}

static uint64_t rdp_deadline(void *ctx)
{
    struct rb_bench *b = ctx;
    return b->rdp ? rdp_next_deadline(b->rdp) : UINT64_MAX;
}

void rb_watch(struct rb_bench *b, int fd, enum rb_watch what)
{
    static const loop_fd_fn fn[] = {
        [RB_WATCH_RDP] = on_rdp, [RB_WATCH_CTL] = on_ctl, [RB_WATCH_CHILD] = on_child};
    if (loop_fd(b->loop, fd, EPOLLIN, fn[what], b) < 0) rb_sys_fatal(b, "epoll_ctl");
}

void rb_unwatch(struct rb_bench *b, int fd)
{
    loop_fd_del(b->loop, fd);
}

void rb_step(struct rb_bench *b, uint64_t max_ns)
{
    if (loop_step(b->loop, rdp_now_ns() + max_ns) < 0) rb_sys_fatal(b, "epoll_wait");
}

void rb_check_progress(struct rb_bench *b, const char *what)
{
    if (b->ctl_eof && !b->server)
        rb_fatal(b, "server closed the control connection while %s", what);
    if (rdp_now_ns() - b->progress_ns > (uint64_t)b->timeout_s * RB_NSEC) {
        struct rdp_peer_stats ps;
        memset(&ps, 0, sizeof ps);
        if (b->rdp) rdp_peer_stats(b->rdp, b->peer, &ps);
        rb_fatal(b,
                 "no progress for %u s while %s (received %" PRIu64 "/%" PRIu64
                 "; rdp: state %d, queued %zu bytes, inflight %u, cwnd %u, peer window %u, "
                 "retransmits %" PRIu64 ", timeouts %" PRIu64 ")",
                 b->timeout_s, what, b->recv_next, b->total, (int)ps.state, ps.queued, ps.inflight,
                 ps.cwnd, ps.peer_wnd, ps.retransmits, ps.timeouts);
    }
}

size_t rb_rdp_queued(struct rb_bench *b)
{
    struct rdp_peer_stats ps;
    if (rdp_peer_stats(b->rdp, b->peer, &ps) < 0) return 0;
    return ps.queued;
}

rdp_t *rb_open_rdp(struct rb_bench *b, uint32_t node, const struct sockaddr_storage *bind,
                   socklen_t bindlen)
{
    const struct rb_opts *o = b->o;
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

bool rb_want_faults(const struct rb_opts *o)
{
    return o->loss > 0 || o->dup > 0 || o->reorder > 0 || o->corrupt > 0;
}

void rb_set_faults(struct rb_bench *b, uint64_t salt)
{
    const struct rb_opts *o = b->o;
    if (!rb_want_faults(o)) return;
    struct rdp_faults f = {.drop = o->loss,
                           .dup = o->dup,
                           .reorder = o->reorder,
                           .corrupt = o->corrupt,
                           .dir = RDP_FAULT_BOTH,
                           .seed = rb_mix64(b->seed ^ salt) | 1};
    if (rdp_set_faults(b->rdp, &f) < 0) rb_sys_fatal(b, "rdp_set_faults");
}

void rb_bench_init(struct rb_bench *b, const struct rb_opts *o, bool server)
{
    memset(b, 0, sizeof *b);
    b->o = o;
    b->server = server;
    b->role = server ? "server" : "client";
    b->out = (!server && o->json) ? stderr : stdout;
    b->ctl = b->dlisten = b->pidfd = b->errpipe = -1;
    b->timeout_s = o->timeout_s;
    b->progress_ns = rdp_now_ns();
    if (!(b->loop = loop_new())) rb_sys_fatal(b, "event loop");
    loop_set_timer_source(b->loop, rdp_deadline, on_rdp_due, b);
}

void rb_bench_close_loop(struct rb_bench *b)
{
    loop_free(b->loop);
    b->loop = NULL;
}
