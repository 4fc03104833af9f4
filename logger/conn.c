/*
 * conn.c - framed, non-blocking message stream to psid (see conn.h).
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void lg_conn_init(struct lg_conn *c, int fd, uint32_t first_id)
{
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->next_id = first_id ? first_id : 1;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

ssize_t lg_conn_read(struct lg_conn *c)
{
    /* drop what was handed out; keep the partial message */
    if (c->rpos) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    size_t want = 65536;
    if (c->rlen >= PSMSG_HDR) {
        uint32_t fl = psmsg_frame_len(c->rbuf, c->rlen);
        if (fl > c->rlen && fl - c->rlen > want) want = fl - c->rlen;
    }
    if (c->rcap - c->rlen < want) {
        uint8_t *b = realloc(c->rbuf, c->rlen + want);
        if (!b) return -1;
        c->rbuf = b;
        c->rcap = c->rlen + want;
    }
    ssize_t r;
    do r = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0) c->rlen += (size_t)r;
    return r;
}

int lg_conn_next(struct lg_conn *c, struct psmsg *m)
{
    size_t have = c->rlen - c->rpos;
    if (have < PSMSG_HDR) return 0;
    uint32_t len = psmsg_frame_len(c->rbuf + c->rpos, have);
    if (!len) {
        errno = EPROTO;
        return -1;
    }
    if (have < len) return 0;
    if (psmsg_parse(c->rbuf + c->rpos, len, m) < 0) {
        errno = EPROTO;
        return -1;
    }
    c->rpos += len;
    return 1;
}

int lg_conn_send(struct lg_conn *c, struct psmsg_buf *b, uint32_t id, uint32_t *idp)
{
    if (!id) id = c->next_id++;
    if (idp) *idp = id;
    if (psmsg_end(b) < 0) {
        int e = errno;
        psmsg_buf_free(b);
        errno = e;
        return -1;
    }
    b->data[8] = (uint8_t)(id >> 24);
    b->data[9] = (uint8_t)(id >> 16);
    b->data[10] = (uint8_t)(id >> 8);
    b->data[11] = (uint8_t)id;
    int r = lg_outq_push_take(&c->tx, 0xffffffffu, 0, b->data, b->len);
    memset(b, 0, sizeof *b);
    return r;
}

int lg_conn_flush(struct lg_conn *c)
{
    while (!lg_outq_empty(&c->tx)) {
        /* send(MSG_NOSIGNAL) semantics: psrun ignores SIGPIPE anyway */
        ssize_t w = lg_outq_write(&c->tx, c->fd, 0, NULL, NULL);
        if (w < 0) return errno == EAGAIN ? 0 : -1;
        if (w == 0) break;
    }
    return 0;
}

void lg_conn_close(struct lg_conn *c)
{
    if (c->fd >= 0) close(c->fd);
    free(c->rbuf);
    lg_outq_free(&c->tx);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}
