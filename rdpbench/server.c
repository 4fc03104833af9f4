/*
 * server.c - rdpbench's server (see bench.h): one session per client, each with a fresh RDP
 * endpoint (node 0) on UDP ADDR:PORT, so that every run's statistics are its own; the
 * kernel TCP echo (pingpong) or sink (stream) of --vs-tcp runs in a child process.
 */
#include "bench.h"

#include "addr.h"
#include "bebytes.h"
#include "key.h"
#include "tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void child_fail(int errfd, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void child_fail(int errfd, const char *fmt, ...)
{
    char msg[RB_CTL_ERR_MAX];
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
static void tcp_child(struct rb_bench *b, int errfd) __attribute__((noreturn));
static void tcp_child(struct rb_bench *b, int errfd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (rb_wait_fd(b->dlisten, POLLIN, (int)b->timeout_s * 1000) < 0)
        child_fail(errfd, "no data connection within %u s", b->timeout_s);
    int fd = accept4(b->dlisten, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0 || rb_tcp_socket_opts(fd, b->timeout_s) < 0)
        child_fail(errfd, "accept: %s", strerror(errno));
    uint8_t *buf = malloc(RDP_MAX_MSG);
    if (!buf) child_fail(errfd, "out of memory");
    char why[256];
    for (uint64_t i = 0; i < b->total; i++) {
        ssize_t n = rb_read_frame(fd, buf, why, sizeof why);
        if (n == 0)
            child_fail(errfd, "connection closed after %" PRIu64 " of %" PRIu64 " messages", i,
                       b->total);
        if (n == -1) child_fail(errfd, "message #%" PRIu64 ": %s", i, why);
        size_t len = n == -2 ? 0 : (size_t)n;
        if (!rb_msg_check(&b->gen, i, buf, len, why, sizeof why))
            child_fail(errfd, "verification failed: %s", why);
        if (b->mode == RB_MODE_PINGPONG && rb_write_frame(fd, buf, len) < 0)
            child_fail(errfd, "echo #%" PRIu64 ": %s", i, strerror(errno));
    }
    if (b->mode == RB_MODE_STREAM) {
        uint8_t ack[RB_TCP_ACK];
        be_put64(ack, b->total);
        if (write(fd, ack, sizeof ack) != (ssize_t)sizeof ack)
            child_fail(errfd, "final acknowledgement: %s", strerror(errno));
    }
    uint8_t extra;
    ssize_t r = read(fd, &extra, 1);
    if (r > 0) child_fail(errfd, "data after the last of %" PRIu64 " messages", b->total);
    _exit(0);
}

static void start_tcp_child(struct rb_bench *b)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) rb_sys_fatal(b, "pipe2");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) rb_sys_fatal(b, "fork");
    if (pid == 0) {
        close(pfd[0]);
        tcp_child(b, pfd[1]);
    }
    close(pfd[1]);
    b->child = pid;
    b->errpipe = pfd[0];
    b->pidfd = pidfd_open(pid, 0);
    if (b->pidfd < 0) rb_sys_fatal(b, "pidfd_open");
    rb_watch(b, b->pidfd, RB_WATCH_CHILD);
    rb_ctl_send_or_die(b, CT_TCP_READY, NULL, 0);
}

void rb_server_child_reaped(struct rb_bench *b)
{
    int st = 0;
    if (waitpid(b->child, &st, 0) < 0) rb_sys_fatal(b, "waitpid");
    b->child = 0;
    rb_unwatch(b, b->pidfd);
    close(b->pidfd);
    b->pidfd = -1;
    uint32_t status = WIFEXITED(st) ? (uint32_t)WEXITSTATUS(st) : 128u + (uint32_t)WTERMSIG(st);
    char msg[RB_CTL_ERR_MAX];
    ssize_t n = read(b->errpipe, msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(b->errpipe);
    b->errpipe = -1;
    if (status != 0) rb_fatal(b, "tcp: %s", n > 0 ? msg : "echo/sink child failed");
    uint8_t r[RB_TCP_RESULT_LEN];
    rb_tcp_result_encode(status, b->total, r);
    rb_ctl_send_or_die(b, CT_TCP_RESULT, r, sizeof r);
    if (!b->o->quiet)
        fprintf(b->out, "server: tcp %s: %" PRIu64 " messages verified\n",
                b->mode == RB_MODE_PINGPONG ? "echo" : "sink", b->total);
}

void rb_server_hello(struct rb_bench *b, const uint8_t *p, size_t len)
{
    const struct rb_opts *o = b->o;
    struct rb_hello h;
    char why[128];
    if (rb_hello_decode(p, len, &h, why, sizeof why) < 0) {
        rb_proto_error(b, "%s", why);
        return;
    }
    b->mode = h.mode;
    b->vs_tcp = h.flags & RB_HELLO_F_VSTCP;
    b->mac = o->mac >= 0 ? o->mac : h.mac; /* the server's own choice; RDP negotiates */
    if (!rdp_mac_available((enum rdp_mac_alg)b->mac)) {
        rb_proto_error(b, "MAC %s is not available on the server's CPU", rb_mac_name(b->mac));
        return;
    }
    b->smin = h.smin;
    b->smax = h.smax;
    b->count = h.count;
    b->warmup = h.warmup;
    b->seed = h.seed;
    if (h.timeout_s >= 1 && h.timeout_s <= 3600 && !o->have_timeout) b->timeout_s = h.timeout_s;
    b->mtu = o->mtu ? o->mtu : h.mtu;
    if (b->mtu < RDP_MTU_MIN || b->mtu > RDP_MTU_MAX) {
        rb_proto_error(b, "bad mtu %u", b->mtu);
        return;
    }
    b->peer_addr = h.addr;
    b->peer_addrlen = h.addrlen;
    uint8_t kc[RB_KEY_CHECK];
    rb_key_check(o->key, kc);
    if (sodium_memcmp(kc, h.key_check, RB_KEY_CHECK) != 0) {
        rb_proto_error(b, "key mismatch: client and server use different keys (--key)");
        return;
    }
    b->total = b->mode == RB_MODE_PINGPONG ? b->warmup + b->count : b->count;
    b->got_hello = true;
}

/* One client, from HELLO to the end of the control connection. 0 if the run completed. */
static int server_session(const struct rb_opts *o, int ctl, const struct sockaddr_storage *from)
{
    static struct rb_bench sb; /* static: rb_fatal() reaches it from callbacks */
    struct rb_bench *b = &sb;
    char a1[64], a2[64];
    int rc = 1;
    if (b->gen_ok) free(b->gen.pat);
    free(b->pend);
    rb_bench_init(b, o, true);
    b->peer = RB_NODE_CLI;
    b->ctl = ctl;
    int fl = fcntl(ctl, F_GETFL);
    fcntl(ctl, F_SETFL, fl | O_NONBLOCK);
    rb_watch(b, ctl, RB_WATCH_CTL);

    while (!b->got_hello && !b->ctl_eof) {
        rb_step(b, RB_STEP_NS);
        if (rdp_now_ns() - b->progress_ns > 10 * RB_NSEC) {
            fprintf(stderr, "rdpbench: server: no HELLO from %s within 10 s\n",
                    rb_addr_str(from, a1, sizeof a1));
            goto out;
        }
    }
    if (!b->got_hello) goto out;
    if (rb_gen_init(&b->gen, b->seed, b->smin, b->smax) < 0 || !(b->pend = malloc(RDP_MAX_MSG)))
        rb_fatal(b, "out of memory");
    b->gen_ok = true;
    b->rdp = rb_open_rdp(b, RB_NODE_SRV, &o->addr, o->addrlen);
    if (!b->rdp) {
        char msg[256];
        snprintf(msg, sizeof msg, "server: rdp_open %s: %s", rb_addr_str(&o->addr, a1, sizeof a1),
                 strerror(errno));
        fprintf(stderr, "rdpbench: %s\n", msg);
        rb_ctl_send(b, CT_ERR, msg, strlen(msg));
        goto out;
    }
    if (rdp_add_peer(b->rdp, RB_NODE_CLI, (struct sockaddr *)&b->peer_addr, b->peer_addrlen) < 0)
        rb_sys_fatal(b, "rdp_add_peer");
    rb_set_faults(b, 0x5e);
    rb_watch(b, rdp_fd(b->rdp), RB_WATCH_RDP);
    struct rb_ready ready = {.faults = rb_want_faults(o), .mtu = b->mtu};
    if (b->vs_tcp) {
        struct sockaddr_storage da = o->addr;
        rb_addr_set_port(&da, 0);
        b->dlisten = rb_tcp_listen(&da, o->addrlen);
        if (b->dlisten < 0) rb_sys_fatal(b, "tcp data listener");
        ready.data_port = rb_addr_port(&da);
    }
    uint8_t rd[RB_READY_LEN];
    rb_ready_encode(&ready, rd);
    rb_ctl_send_or_die(b, CT_READY, rd, sizeof rd);
    if (!o->quiet)
        fprintf(b->out,
                "server: client %s (rdp %s): %s, size %u%s%u, count %" PRIu64 " + warmup %" PRIu64
                ", seed 0x%016" PRIx64 ", mtu %u, mac %s (%s)%s%s\n",
                rb_addr_str(from, a1, sizeof a1), rb_addr_str(&b->peer_addr, a2, sizeof a2),
                b->mode == RB_MODE_PINGPONG ? "pingpong" : "stream", b->smin,
                b->smin == b->smax ? "=" : "-", b->smax, b->count,
                b->mode == RB_MODE_PINGPONG ? b->warmup : 0, b->seed, b->mtu, rb_mac_name(b->mac),
                rdp_mac_impl(b->rdp), b->vs_tcp ? ", vs tcp" : "",
                rb_want_faults(o) ? ", faults injected here" : "");
    fflush(b->out);
    b->progress_ns = rdp_now_ns();

    while (!b->ctl_eof) {
        rb_step(b, RB_STEP_NS);
        if (b->got_fin && !b->stats_sent &&
            (rb_rdp_queued(b) == 0 || rdp_now_ns() - b->fin_ns > 2 * RB_NSEC)) {
            rb_stats_collect(b->rdp, b->peer, &b->my_stats);
            uint8_t s[RB_STATS_LEN];
            rb_stats_encode(&b->my_stats, s);
            rb_ctl_send_or_die(b, CT_STATS, s, sizeof s);
            b->stats_sent = true;
            if (!o->quiet) {
                fprintf(b->out, "server: %" PRIu64 " messages (%" PRIu64 " bytes) verified%s\n",
                        b->recv_next, b->recv_bytes,
                        b->mode == RB_MODE_PINGPONG ? " and echoed" : "");
                rb_stats_print(b->out, "server", &b->my_stats);
                fflush(b->out);
            }
        }
        if (b->got_tcp_start && !b->tcp_started) {
            b->tcp_started = true;
            start_tcp_child(b);
        }
        if (!b->got_fin && b->recv_next < b->total)
            rb_check_progress(b, "waiting for the client's messages");
        else if (b->child == 0 &&
                 rdp_now_ns() - b->progress_ns > (uint64_t)b->timeout_s * RB_NSEC) {
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
                rb_addr_str(from, a1, sizeof a1), b->recv_next, b->total);
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
    rb_bench_close_loop(b);
    close(ctl);
    b->ctl = -1;
    return rc;
}

int rb_server_main(struct rb_opts *o)
{
    char a[64];
    int lfd = -1;
    bool pick = rb_addr_port(&o->addr) == 0;
    /* TCP and UDP on the same port: with port 0, take the TCP port and retry until UDP can
     * have it too. */
    struct rb_bench probe;
    rb_bench_init(&probe, o, true);
    probe.mtu = o->mtu ? o->mtu : (rb_addr_is_loopback(&o->addr) ? 65536 : 1500);
    for (int attempt = 0; attempt < 50; attempt++) {
        struct sockaddr_storage sa = o->addr;
        lfd = rb_tcp_listen(&sa, o->addrlen);
        if (lfd < 0) {
            fprintf(stderr, "rdpbench: server: tcp listen %s: %s\n",
                    rb_addr_str(&o->addr, a, sizeof a), strerror(errno));
            return 1;
        }
        rdp_t *r = rb_open_rdp(&probe, RB_NODE_SRV, &sa, o->addrlen);
        if (r) {
            rdp_close(r);
            o->addr = sa;
            break;
        }
        int e = errno;
        close(lfd);
        lfd = -1;
        if (!pick || e != EADDRINUSE) {
            fprintf(stderr, "rdpbench: server: rdp bind %s: %s\n", rb_addr_str(&sa, a, sizeof a),
                    strerror(e));
            return 1;
        }
    }
    rb_bench_close_loop(&probe);
    if (lfd < 0) {
        fprintf(stderr, "rdpbench: server: no port free for both TCP and UDP\n");
        return 1;
    }
    printf("server: listening on %s (tcp control, rdp udp node 0)\n",
           rb_addr_str(&o->addr, a, sizeof a));
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
