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

void lg_conn_from_psi(struct lg_conn *c, struct psi *psi)
{
    lg_conn_init(c, psi->fd, psi->next_id);
    c->rx = psi->rx;
    psi->rx = (struct psi_rx){0};
    psi->fd = -1;
    psi_close(psi);
}

ssize_t lg_conn_read(struct lg_conn *c)
{
    return psi_rx_read(&c->rx, c->fd);
}

int lg_conn_next(struct lg_conn *c, struct psmsg *m)
{
    return psi_rx_next(&c->rx, m);
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
    psmsg_set_id(b, id);
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
    psi_rx_free(&c->rx);
    lg_outq_free(&c->tx);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}
