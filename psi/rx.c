/*
 * rx.c - the one reader of psid's framed messages on a stream (see psi.h): every client of
 * psid (libpsi's calls and events, psrun's non-blocking connection) reads through it.
 *
 * Bytes are read into one buffer; psi_rx_next hands out a whole message at a time, checked
 * by psmsg_frame_len and psmsg_parse, pointing into the buffer. Handed-out messages stay
 * valid until the next psi_rx_read, which drops them and keeps a partial one. The buffer
 * grows to the frame being read, never beyond PSMSG_MAX plus one read.
 */
#include "psi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define RX_CHUNK 65536

ssize_t psi_rx_read(struct psi_rx *rx, int fd)
{
    if (rx->pos) { /* drop what was handed out; keep the partial message */
        memmove(rx->buf, rx->buf + rx->pos, rx->len - rx->pos);
        rx->len -= rx->pos;
        rx->pos = 0;
    }
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
    ssize_t r;
    do r = recv(fd, rx->buf + rx->len, rx->cap - rx->len, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0) rx->len += (size_t)r;
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
    rx->pos += len;
    return 1;
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
    free(rx->buf);
    memset(rx, 0, sizeof *rx);
}
