/*
 * rx.c - the one reader of psid's framed messages on a stream (see psi.h): every client of
 * psid (libpsi's calls and events, psrun's non-blocking connection) reads through it.
 *
 * Bytes are read into one buffer; psi_rx_next hands out a whole message at a time, checked
 * by psmsg_frame_len and psmsg_parse, pointing into the buffer. Handed-out messages stay
 * valid until the next psi_rx_read, which drops them and keeps a partial one. The buffer
 * grows to the frame being read, never beyond PSMSG_MAX plus one read.
 *
 * Descriptors psid passes (SCM_RIGHTS) come with the first byte of their message, alone in
 * its sendmsg; the kernel ends a read after a byte that carries descriptors, so they are
 * kept with the stream offset of the last byte of their read, which is that first byte.
 * A message handed out owns the descriptors at its offset (psi_rx_take_fd); descriptors at
 * offsets before it (its predecessor's, not taken) are closed when it is handed out, and
 * those of handed-out messages when psi_rx_read drops them.
 */
#include "psi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RX_CHUNK 65536

/* Close the descriptors that came with bytes before stream offset upto. */
static void close_before(struct psi_rx *rx, uint64_t upto)
{
    unsigned k = 0;
    for (unsigned i = 0; i < rx->nfds; i++) {
        if (rx->fd_at[i] < upto) {
            close(rx->fds[i]);
        } else {
            rx->fds[k] = rx->fds[i];
            rx->fd_at[k++] = rx->fd_at[i];
        }
    }
    rx->nfds = k;
}

/* Keep the descriptors of control message cm, which came with stream offset at; those
 * beyond PSI_RX_FDS are closed. */
static void keep_fds(struct psi_rx *rx, const struct cmsghdr *cm, uint64_t at)
{
    size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
        if (rx->nfds == PSI_RX_FDS) {
            close(fd);
            continue;
        }
        rx->fds[rx->nfds] = fd;
        rx->fd_at[rx->nfds++] = at;
    }
}

ssize_t psi_rx_read(struct psi_rx *rx, int fd)
{
    if (rx->pos) { /* drop what was handed out; keep the partial message */
        memmove(rx->buf, rx->buf + rx->pos, rx->len - rx->pos);
        rx->len -= rx->pos;
        rx->base += rx->pos;
        rx->pos = 0;
    }
    close_before(rx, rx->base); /* those of the messages dropped */
    rx->cur = false;
    size_t want = RX_CHUNK;
    if (rx->len >= PSMSG_HDR) {
        uint32_t fl = psmsg_frame_len(rx->buf, rx->len);
        if (fl > rx->len && fl - rx->len > want) want = fl - rx->len;
    }
    if (rx->cap - rx->len < want) {
        uint8_t *b = realloc(rx->buf, rx->len + want);
        if (!b) return -1;
        rx->buf = b;
        rx->cap = rx->len + want;
    }
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(PSI_RX_FDS * sizeof(int))];
    } u;
    struct iovec iov = {rx->buf + rx->len, rx->cap - rx->len};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t r;
    do r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return r;
    uint64_t at = rx->base + rx->len + (size_t)r - 1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) keep_fds(rx, cm, at);
    rx->len += (size_t)r;
    return r;
}

int psi_rx_next(struct psi_rx *rx, struct psmsg *m)
{
    size_t have = rx->len - rx->pos;
    if (have < PSMSG_HDR) return 0;
    uint32_t len = psmsg_frame_len(rx->buf + rx->pos, have);
    if (!len) {
        errno = EPROTO;
        return -1;
    }
    if (have < len) return 0;
    if (psmsg_parse(rx->buf + rx->pos, len, m) < 0) {
        errno = EPROTO;
        return -1;
    }
    rx->cur_at = rx->base + rx->pos;
    rx->cur = true;
    close_before(rx, rx->cur_at); /* the previous message's, not taken */
    rx->pos += len;
    return 1;
}

int psi_rx_take_fd(struct psi_rx *rx)
{
    if (!rx->cur) return -1;
    for (unsigned i = 0; i < rx->nfds; i++)
        if (rx->fd_at[i] == rx->cur_at) {
            int fd = rx->fds[i];
            rx->nfds--;
            memmove(rx->fds + i, rx->fds + i + 1, (rx->nfds - i) * sizeof rx->fds[0]);
            memmove(rx->fd_at + i, rx->fd_at + i + 1, (rx->nfds - i) * sizeof rx->fd_at[0]);
            return fd;
        }
    return -1;
}

bool psi_rx_whole(const struct psi_rx *rx)
{
    size_t have = rx->len - rx->pos;
    if (have < PSMSG_HDR) return false;
    uint32_t len = psmsg_frame_len(rx->buf + rx->pos, have);
    return !len || have >= len; /* a malformed frame is there to be reported, too */
}

void psi_rx_free(struct psi_rx *rx)
{
    for (unsigned i = 0; i < rx->nfds; i++) close(rx->fds[i]);
    free(rx->buf);
    memset(rx, 0, sizeof *rx);
}
