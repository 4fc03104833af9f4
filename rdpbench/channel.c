/*
 * channel.c - a session's control connection (see bench.h; the frames: ctl.h): sending a
 * frame, reading what arrived, and what each frame means to the role that gets it.
 *
 * A malformed frame or one out of turn ends the session: the server tells the client and
 * drops it, a client does not survive a bad server.
 */
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tcp.h"

int rb_ctl_send(struct rb_bench *b, uint8_t type, const void *body, size_t len)
{
    uint8_t frame[RB_CTL_HDR + RB_CTL_MAX_BODY];
    size_t n = rb_ctl_frame(frame, type, body, len), off = 0;
    while (off < n) {
        ssize_t r = send(b->ctl, frame + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            off += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (rb_wait_fd(b->ctl, POLLOUT, (int)b->timeout_s * 1000) < 0) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

void rb_ctl_send_or_die(struct rb_bench *b, uint8_t type, const void *body, size_t len)
{
    if (rb_ctl_send(b, type, body, len) < 0) {
        int e = errno;
        b->ctl = -1;
        errno = e;
        rb_sys_fatal(b, "control connection: send");
    }
}

void rb_proto_error(struct rb_bench *b, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!b->server) rb_fatal(b, "control protocol: %s", msg);
    fprintf(stderr, "rdpbench: server: control protocol: %s; dropping the client\n", msg);
    rb_ctl_send(b, CT_ERR, msg, strlen(msg));
    b->ctl_eof = b->aborted = true;
}

/* A frame for the server. */
static void server_frame(struct rb_bench *b, uint8_t type, const uint8_t *p, size_t len)
{
    switch (type) {
    case CT_HELLO:
        if (b->got_hello) {
            rb_proto_error(b, "second HELLO");
            return;
        }
        rb_server_hello(b, p, len);
        return;
    case CT_FIN:
        if (!b->got_hello || b->got_fin) {
            rb_proto_error(b, "unexpected FIN");
            return;
        }
        if (rb_stats_decode(p, len, &b->peer_stats) < 0) {
            rb_proto_error(b, "bad FIN length");
            return;
        }
        b->got_fin = true;
        b->fin_ns = rdp_now_ns();
        b->teardown = true;
        return;
    case CT_TCP_START:
        if (!b->stats_sent || !b->vs_tcp || b->got_tcp_start || len) {
            rb_proto_error(b, "unexpected TCP_START");
            return;
        }
        b->got_tcp_start = true;
        return;
    default:
        rb_proto_error(b, "unexpected message type %u (%zu bytes)", type, len);
        return;
    }
}

/* A frame for the client. */
static void client_frame(struct rb_bench *b, uint8_t type, const uint8_t *p, size_t len)
{
    struct rb_ready rd;
    uint64_t count, bytes;
    switch (type) {
    case CT_READY:
        if (b->got_ready || rb_ready_decode(p, len, &rd) < 0) break;
        b->data_port = rd.data_port;
        b->peer_faults = rd.faults;
        b->peer_mtu = rd.mtu;
        b->got_ready = true;
        return;
    case CT_DONE:
        if (b->got_done || b->mode != RB_MODE_STREAM || rb_done_decode(p, len, &count, &bytes) < 0)
            break;
        b->done_ns = rdp_now_ns();
        if (count != b->total)
            rb_fatal(b, "server's DONE says %" PRIu64 " messages, expected %" PRIu64, count,
                     b->total);
        b->got_done = true;
        return;
    case CT_STATS:
        if (b->got_stats || rb_stats_decode(p, len, &b->peer_stats) < 0) break;
        b->got_stats = true;
        return;
    case CT_TCP_READY:
        if (b->got_tcp_ready || len) break;
        b->got_tcp_ready = true;
        return;
    case CT_TCP_RESULT:
        if (b->got_tcp_result || rb_tcp_result_decode(p, len, &b->tcp_status, &count) < 0) break;
        b->got_tcp_result = true;
        return;
    default:
        break;
    }
    rb_proto_error(b, "unexpected message type %u (%zu bytes)", type, len);
}

static void dispatch(struct rb_bench *b, uint8_t type, const uint8_t *p, size_t len)
{
    b->progress_ns = rdp_now_ns();
    if (type == CT_ERR) {
        char msg[RB_CTL_ERR_MAX + 1];
        b->ctl = -1; /* nothing to tell a side that failed */
        rb_fatal(b, "%s reported: %s", b->server ? "client" : "server", rb_err_text(p, len, msg));
    }
    if (b->server)
        server_frame(b, type, p, len);
    else
        client_frame(b, type, p, len);
}

void rb_ctl_read(struct rb_bench *b)
{
    while (!b->ctl_eof) {
        ssize_t r = recv(b->ctl, b->cbuf + b->clen, sizeof b->cbuf - b->clen, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {
            if (r < 0 && !b->server) rb_sys_fatal(b, "control connection");
            b->ctl_eof = true;
            rb_unwatch(b, b->ctl); /* EOF stays readable */
            return;
        }
        b->clen += (size_t)r;
        while (!b->ctl_eof) {
            uint8_t type;
            uint32_t len;
            char why[128];
            int k = rb_ctl_frame_parse(b->cbuf, b->clen, &type, &len, why, sizeof why);
            if (k < 0) {
                rb_proto_error(b, "%s", why);
                return;
            }
            if (k == 0) break;
            dispatch(b, type, b->cbuf + RB_CTL_HDR, len);
            memmove(b->cbuf, b->cbuf + RB_CTL_HDR + len, b->clen - RB_CTL_HDR - len);
            b->clen -= RB_CTL_HDR + len;
        }
    }
}
