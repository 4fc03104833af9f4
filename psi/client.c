/*
 * client.c - libpsi's connection to the local psid (see psi.h): connect, send a request,
 * read the framed reply that carries its id.
 */
#include "psi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

const char *psi_socket_path(void)
{
    const char *p = getenv("PSID_SOCKET");
    return p && *p ? p : PSI_DEFAULT_SOCKET;
}

int psi_open(struct psi *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    if (!path) path = psi_socket_path();
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(a.sun_path, path);
    strcpy(c->path, path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) return -1;
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        close(c->fd);
        c->fd = -1;
        errno = e;
        return -1;
    }
    c->next_id = 1;
    return 0;
}

void psi_close(struct psi *c)
{
    if (c->fd >= 0) close(c->fd);
    free(c->rbuf);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r == 0) {
            errno = ECONNRESET;
            return -1;
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int psi_call(struct psi *c, struct psmsg_buf *req, struct psmsg *reply)
{
    uint32_t id = c->next_id++;
    if (psmsg_end(req) < 0) return -1;
    req->data[8] = (uint8_t)(id >> 24);
    req->data[9] = (uint8_t)(id >> 16);
    req->data[10] = (uint8_t)(id >> 8);
    req->data[11] = (uint8_t)id;
    if (write_all(c->fd, req->data, req->len) < 0) return -1;
    for (;;) {
        if (c->rcap < PSMSG_HDR) {
            free(c->rbuf);
            if (!(c->rbuf = malloc(4096))) return -1;
            c->rcap = 4096;
        }
        if (read_full(c->fd, c->rbuf, PSMSG_HDR) < 0) return -1;
        uint32_t len = psmsg_frame_len(c->rbuf, PSMSG_HDR);
        if (!len) {
            errno = EPROTO;
            return -1;
        }
        if (len > c->rcap) {
            uint8_t *b = realloc(c->rbuf, len);
            if (!b) return -1;
            c->rbuf = b;
            c->rcap = len;
        }
        if (read_full(c->fd, c->rbuf + PSMSG_HDR, len - PSMSG_HDR) < 0) return -1;
        c->rlen = len;
        if (psmsg_parse(c->rbuf, len, reply) < 0) {
            errno = EPROTO;
            return -1;
        }
        if (reply->id != id && reply->id != 0) continue; /* not ours (an old reply) */
        if (reply->type == PSM_ERROR) {
            uint32_t e = EPROTO;
            psmsg_get_u32(&reply->body, PSF_ERRNO, &e);
            errno = (int)e;
            return -1;
        }
        return 0;
    }
}
