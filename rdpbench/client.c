/*
 * client.c - rdpbench's client (see bench.h): HELLO, the run over RDP (RDP node 1), the
 * statistics swap, the same workload over kernel TCP with --vs-tcp, and the report.
 *
 * Self-test hook: RDPBENCH_TEST_FAULT=swap:N|dup:N|flip:N in the client's environment makes
 * it send messages N+1 and N swapped, message N twice (at N+1), or message N with a byte
 * flipped -- over RDP and TCP alike -- so a test can show that the checker catches each.
 */
#include "bench.h"

#include "addr.h"
#include "bebytes.h"
#include "report.h"
#include "tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_fault_parse(struct rb_bench *b)
{
    const char *s = getenv("RDPBENCH_TEST_FAULT");
    if (!s || !*s) return;
    const char *colon = strchr(s, ':');
    if (colon && rb_parse_u64(colon + 1, 0, UINT64_MAX - 2, &b->fault_at)) {
        size_t n = (size_t)(colon - s);
        if (n == 4 && strncmp(s, "swap", 4) == 0) b->fault = TF_SWAP;
        if (n == 3 && strncmp(s, "dup", 3) == 0) b->fault = TF_DUP;
        if (n == 4 && strncmp(s, "flip", 4) == 0) b->fault = TF_FLIP;
    }
    if (b->fault == TF_NONE) {
        fprintf(stderr, "rdpbench: RDPBENCH_TEST_FAULT: swap:N, dup:N or flip:N, not '%s'\n", s);
        exit(2);
    }
    fprintf(stderr, "rdpbench: RDPBENCH_TEST_FAULT=%s: sending wrong data on purpose\n", s);
}

/* The message the client sends at step i (message i, unless a test fault says otherwise). */
static size_t make_msg(const struct rb_bench *b, uint64_t i, uint8_t *buf)
{
    uint64_t idx = i, n = b->fault_at;
    if (b->fault == TF_SWAP && (i == n || i == n + 1)) idx = i == n ? n + 1 : n;
    if (b->fault == TF_DUP && i == n + 1) idx = n;
    size_t len = rb_msg_len(&b->gen, idx);
    rb_msg_fill(&b->gen, idx, buf, len);
    if (b->fault == TF_FLIP && i == n) buf[len / 2] ^= 0x40;
    return len;
}

static void send_msg(struct rb_bench *b, const uint8_t *msg, size_t len, const char *what)
{
    for (;;) {
        uint64_t gen0 = b->cansend_gen;
        if (rdp_send(b->rdp, b->peer, msg, len) == 0) {
            b->progress_ns = rdp_now_ns();
            return;
        }
        if (errno != EAGAIN) rb_sys_fatal(b, "rdp_send");
        while (b->cansend_gen == gen0) {
            rb_step(b, RB_STEP_NS);
            rb_check_progress(b, what);
        }
    }
}

static struct rb_lat rdp_pingpong(struct rb_bench *b, uint8_t *sbuf, uint64_t *rtt)
{
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(b, i, sbuf);
        uint64_t t0 = rdp_now_ns();
        send_msg(b, sbuf, len, "sending (pingpong)");
        while (b->recv_next <= i) {
            rb_step(b, RB_STEP_NS);
            rb_check_progress(b, "waiting for an echo");
        }
        if (i >= b->warmup) rtt[i - b->warmup] = b->recv_ns - t0;
    }
    return rb_lat_summary(rtt, b->count);
}

static struct rb_tput rdp_stream(struct rb_bench *b, uint8_t *sbuf)
{
    uint64_t next = 0, blocked_gen = 0;
    bool have = false, blocked = false;
    size_t len = 0;
    uint64_t t0 = rdp_now_ns();
    while (!b->got_done) {
        if (blocked && b->cansend_gen != blocked_gen) blocked = false;
        while (next < b->total && !blocked) {
            if (!have) {
                len = make_msg(b, next, sbuf);
                have = true;
            }
            uint64_t gen0 = b->cansend_gen;
            if (rdp_send(b->rdp, b->peer, sbuf, len) == 0) {
                next++;
                have = false;
                b->progress_ns = rdp_now_ns();
            } else if (errno != EAGAIN) {
                rb_sys_fatal(b, "rdp_send");
            } else if (b->cansend_gen == gen0) {
                blocked = true;
                blocked_gen = gen0;
            }
        }
        rb_step(b, RB_STEP_NS);
        rb_check_progress(b,
                          next < b->total ? "sending (stream)" : "waiting for the server's DONE");
        if (b->ctl_eof) rb_fatal(b, "server closed the control connection");
    }
    return rb_tput_make(&b->gen, b->total, b->done_ns - t0);
}

static void wait_ctl(struct rb_bench *b, bool *flag, const char *what)
{
    while (!*flag) {
        rb_step(b, RB_STEP_NS);
        if (b->ctl_eof) rb_fatal(b, "server closed the control connection while %s", what);
        rb_check_progress(b, what);
    }
}

static int tcp_data_connect(struct rb_bench *b)
{
    struct sockaddr_storage da = b->o->addr;
    rb_addr_set_port(&da, b->data_port);
    int fd = rb_tcp_connect(&da, b->o->addrlen, b->timeout_s);
    if (fd < 0) rb_sys_fatal(b, "tcp data connection");
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (rb_tcp_socket_opts(fd, b->timeout_s) < 0) rb_sys_fatal(b, "tcp socket options");
    return fd;
}

static void tcp_check(struct rb_bench *b, uint64_t i, const uint8_t *buf, ssize_t n)
{
    char why[256];
    if (n == 0) rb_fatal(b, "tcp: connection closed at message #%" PRIu64, i);
    if (n == -1) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        rb_fatal(b, "tcp: message #%" PRIu64 ": %s", i, why);
    }
    if (!rb_msg_check(&b->gen, i, buf, n == -2 ? 0 : (size_t)n, why, sizeof why))
        rb_fatal(b, "tcp: verification failed: %s", why);
}

static struct rb_lat tcp_pingpong(struct rb_bench *b, int fd, uint8_t *sbuf, uint8_t *rbuf,
                                  uint64_t *rtt)
{
    char why[256];
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(b, i, sbuf);
        uint64_t t0 = rdp_now_ns();
        if (rb_write_frame(fd, sbuf, len) < 0) rb_sys_fatal(b, "tcp: write");
        ssize_t n = rb_read_frame(fd, rbuf, why, sizeof why);
        uint64_t t1 = rdp_now_ns();
        if (n == -1) rb_fatal(b, "tcp: echo #%" PRIu64 ": %s", i, why);
        tcp_check(b, i, rbuf, n);
        if (i >= b->warmup) rtt[i - b->warmup] = t1 - t0;
    }
    return rb_lat_summary(rtt, b->count);
}

static struct rb_tput tcp_stream(struct rb_bench *b, int fd, uint8_t *sbuf)
{
    uint64_t t0 = rdp_now_ns();
    for (uint64_t i = 0; i < b->total; i++) {
        size_t len = make_msg(b, i, sbuf);
        if (rb_write_frame(fd, sbuf, len) < 0) rb_sys_fatal(b, "tcp: write");
    }
    uint8_t ack[RB_TCP_ACK];
    if (rb_read_full(fd, ack, sizeof ack) != 1) rb_sys_fatal(b, "tcp: final acknowledgement");
    uint64_t t1 = rdp_now_ns();
    if (be_get64(ack) != b->total)
        rb_fatal(b, "tcp: sink acknowledged %" PRIu64 " messages, expected %" PRIu64, be_get64(ack),
                 b->total);
    return rb_tput_make(&b->gen, b->total, t1 - t0);
}

int rb_client_main(struct rb_opts *o)
{
    static struct rb_bench cb; /* static: rb_fatal() reaches it from callbacks */
    struct rb_bench *b = &cb;
    char a1[64], a2[64];
    rb_bench_init(b, o, false);
    test_fault_parse(b);
    b->peer = RB_NODE_SRV;
    b->mode = o->mode;
    b->smin = o->smin;
    b->smax = o->smax;
    b->count = o->count;
    b->seed = o->seed;
    b->vs_tcp = o->vs_tcp;
    b->mac = o->mac >= 0 ? o->mac : RDP_MAC_AUTO;
    if (o->mode == RB_MODE_PINGPONG)
        b->warmup =
            o->warmup >= 0 ? (uint64_t)o->warmup : (o->count / 10 < 100 ? o->count / 10 : 100);
    b->total = b->count + b->warmup;
    b->mtu = o->mtu ? o->mtu : (rb_addr_is_loopback(&o->addr) ? 65536 : 1500);
    FILE *out = b->out;

    uint8_t *sbuf = malloc(RDP_MAX_MSG), *rbuf = malloc(RDP_MAX_MSG);
    uint64_t *rtt = o->mode == RB_MODE_PINGPONG ? malloc(b->count * sizeof *rtt) : NULL;
    if (!sbuf || !rbuf || (o->mode == RB_MODE_PINGPONG && !rtt) ||
        rb_gen_init(&b->gen, b->seed, b->smin, b->smax) < 0)
        rb_fatal(b, "out of memory");
    b->gen_ok = true;

    b->ctl = rb_tcp_connect(&o->addr, o->addrlen, b->timeout_s);
    if (b->ctl < 0)
        rb_fatal(b, "control connection to %s: %s", rb_addr_str(&o->addr, a1, sizeof a1),
                 strerror(errno));
    rb_watch(b, b->ctl, RB_WATCH_CTL);

    struct sockaddr_storage me;
    socklen_t ml = sizeof me;
    if (o->have_bind) {
        me = o->bind;
        ml = o->bindlen;
    } else {
        if (getsockname(b->ctl, (struct sockaddr *)&me, &ml) < 0) rb_sys_fatal(b, "getsockname");
        rb_addr_set_port(&me, 0);
    }
    b->rdp = rb_open_rdp(b, RB_NODE_CLI, &me, ml);
    if (!b->rdp) rb_fatal(b, "rdp_open %s: %s", rb_addr_str(&me, a1, sizeof a1), strerror(errno));
    b->mac_impl = rdp_mac_impl(b->rdp);
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(rdp_fd(b->rdp), (struct sockaddr *)&bound, &bl) < 0)
        rb_sys_fatal(b, "getsockname");
    if (rb_addr_is_any(&bound)) {
        /* a wildcard bind: the server needs the address our datagrams come from */
        struct sockaddr_storage c;
        socklen_t cl = sizeof c;
        getsockname(b->ctl, (struct sockaddr *)&c, &cl);
        rb_addr_set_port(&c, rb_addr_port(&bound));
        bound = c;
    }
    if (rdp_add_peer(b->rdp, RB_NODE_SRV, (struct sockaddr *)&o->addr, o->addrlen) < 0)
        rb_sys_fatal(b, "rdp_add_peer");
    rb_set_faults(b, 0xc1);
    rb_watch(b, rdp_fd(b->rdp), RB_WATCH_RDP);

    struct rb_hello hello = {
        .mode = (uint8_t)b->mode,
        .flags = (o->vs_tcp ? RB_HELLO_F_VSTCP : 0) | (rb_want_faults(o) ? RB_HELLO_F_FAULTS : 0),
        .mac = (uint8_t)b->mac,
        .smin = b->smin,
        .smax = b->smax,
        .count = b->count,
        .warmup = b->warmup,
        .seed = b->seed,
        .mtu = b->mtu,
        .timeout_s = b->timeout_s,
        .addr = bound,
        .addrlen = bl,
    };
    rb_key_check(o->key, hello.key_check);
    uint8_t h[RB_HELLO_LEN];
    rb_hello_encode(&hello, h);
    rb_ctl_send_or_die(b, CT_HELLO, h, sizeof h);
    wait_ctl(b, &b->got_ready, "waiting for the server to get ready");

    const char *mname = b->mode == RB_MODE_PINGPONG ? "pingpong" : "stream";
    fprintf(out,
            "client: rdp %s (node 1) -> %s (node 0): %s, size %u%s%u, count %" PRIu64
            " + warmup %" PRIu64 ", seed 0x%016" PRIx64 ", mtu %u%s, mac %s (%s)%s%s\n",
            rb_addr_str(&bound, a1, sizeof a1), rb_addr_str(&o->addr, a2, sizeof a2), mname,
            b->smin, b->smin == b->smax ? "=" : "-", b->smax, b->count, b->warmup, b->seed, b->mtu,
            b->peer_mtu != b->mtu ? " (the server's differs: packets fit the smaller)" : "",
            rb_mac_name(b->mac), rdp_mac_impl(b->rdp),
            rb_want_faults(o) ? ", faults injected here" : "",
            b->peer_faults ? ", faults injected at the server" : "");
    if (rb_want_faults(o))
        fprintf(out,
                "client: injecting loss %g, dup %g, reorder %g, corrupt %g (both directions)\n",
                o->loss, o->dup, o->reorder, o->corrupt);
    fflush(out);

    struct rb_lat rl = {0}, tl = {0};
    struct rb_tput rt = {0}, tt = {0};
    b->progress_ns = rdp_now_ns();
    if (b->mode == RB_MODE_PINGPONG)
        rl = rdp_pingpong(b, sbuf, rtt);
    else
        rt = rdp_stream(b, sbuf);

    /* everything we sent acknowledged, then swap statistics */
    while (rb_rdp_queued(b) > 0) {
        rb_step(b, RB_STEP_NS);
        rb_check_progress(b, "waiting for the last acknowledgements");
    }
    rb_stats_collect(b->rdp, b->peer, &b->my_stats);
    uint8_t s[RB_STATS_LEN];
    rb_stats_encode(&b->my_stats, s);
    rb_ctl_send_or_die(b, CT_FIN, s, sizeof s);
    wait_ctl(b, &b->got_stats, "waiting for the server's statistics");
    b->teardown = true;
    rb_unwatch(b, rdp_fd(b->rdp));
    rdp_close(b->rdp);
    b->rdp = NULL;

    if (b->mode == RB_MODE_PINGPONG)
        rb_print_lat(out, "rdp", &rl, b->count);
    else
        rb_print_tput(out, "rdp", &rt);
    fflush(out);

    if (o->vs_tcp) {
        rb_ctl_send_or_die(b, CT_TCP_START, NULL, 0);
        wait_ctl(b, &b->got_tcp_ready, "waiting for the server's TCP echo/sink");
        int fd = tcp_data_connect(b);
        if (b->mode == RB_MODE_PINGPONG)
            tl = tcp_pingpong(b, fd, sbuf, rbuf, rtt);
        else
            tt = tcp_stream(b, fd, sbuf);
        close(fd);
        b->progress_ns = rdp_now_ns();
        wait_ctl(b, &b->got_tcp_result, "waiting for the server's TCP result");
        if (b->tcp_status != 0) rb_fatal(b, "tcp: server side failed (status %u)", b->tcp_status);
        if (b->mode == RB_MODE_PINGPONG) {
            rb_print_lat(out, "tcp", &tl, b->count);
            fprintf(out, "ratio rdp/tcp (RTT median): %.3f\n", rl.median / tl.median);
        } else {
            rb_print_tput(out, "tcp", &tt);
            fprintf(out, "ratio rdp/tcp (throughput): %.3f\n", rt.gbps / tt.gbps);
        }
    }
    rb_stats_print(out, "client", &b->my_stats);
    rb_stats_print(out, "server", &b->peer_stats);
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
                rb_mac_name(b->mac), b->mac_impl, o->keyfile ? "file" : "fixed", o->loss, o->dup,
                o->reorder, o->corrupt, b->peer_faults ? "true" : "false");
        if (b->mode == RB_MODE_PINGPONG)
            rb_json_lat(f, &rl);
        else
            rb_json_tput(f, &rt);
        fprintf(f, ",\"tcp\":");
        if (!o->vs_tcp)
            fprintf(f, "null,\"ratio\":null");
        else if (b->mode == RB_MODE_PINGPONG) {
            rb_json_lat(f, &tl);
            fprintf(f, ",\"ratio\":%.4f", rl.median / tl.median);
        } else {
            rb_json_tput(f, &tt);
            fprintf(f, ",\"ratio\":%.4f", rt.gbps / tt.gbps);
        }
        fprintf(f, ",\"client\":");
        rb_stats_json(f, &b->my_stats);
        fprintf(f, ",\"server\":");
        rb_stats_json(f, &b->peer_stats);
        fprintf(f, "}\n");
        fflush(f);
    }
    close(b->ctl);
    b->ctl = -1;
    free(sbuf);
    free(rbuf);
    free(rtt);
    free(b->gen.pat);
    rb_bench_close_loop(b);
    return 0;
}
