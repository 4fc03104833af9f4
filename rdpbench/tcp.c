/*
 * tcp.c - rdpbench's kernel TCP: connections and the baseline's framing (see tcp.h).
 */
#include "tcp.h"

#include "bebytes.h"
#include "rdp.h"
#include "readfull.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

int rb_wait_fd(int fd, short ev, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = ETIMEDOUT;
        return r > 0 ? 0 : -1;
    }
}

int rb_tcp_socket_opts(int fd, unsigned timeout_s)
{
    int one = 1;
    struct timeval tv = {.tv_sec = timeout_s};
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
        return -1;
    return 0;
}

int rb_tcp_connect(const struct sockaddr_storage *sa, socklen_t len, unsigned timeout_s)
{
    int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)sa, len) < 0) {
        if (errno != EINPROGRESS) goto fail;
        if (rb_wait_fd(fd, POLLOUT, (int)timeout_s * 1000) < 0) goto fail;
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

int rb_tcp_listen(struct sockaddr_storage *sa, socklen_t len)
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

int rb_read_full(int fd, void *buf, size_t n)
{
    ssize_t r = read_full(fd, buf, n);
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) errno = ETIMEDOUT; /* SO_RCVTIMEO */
        return -1;
    }
    if (r == 0 && n) return 0;
    if ((size_t)r < n) {
        errno = EPIPE;
        return -1;
    }
    return 1;
}

int rb_write_frame(int fd, const void *msg, size_t len)
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

ssize_t rb_read_frame(int fd, uint8_t *buf, char *why, size_t wl)
{
    uint8_t hdr[4];
    int r = rb_read_full(fd, hdr, 4);
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
    if (len && rb_read_full(fd, buf, len) != 1) {
        snprintf(why, wl, "read: %s", errno ? strerror(errno) : "short");
        return -1;
    }
    return len ? (ssize_t)len : -2; /* -2: an empty frame (valid only for 0-byte sizes) */
}
