/*
 * fakepsid.c - a scripted psid for one client, to put messages in an order a real psid
 * produces only by chance (test/shell/psid_notify.sh).
 *
 *   fakepsid SOCKET    listen on SOCKET, print "ready", serve one client, exit when it
 *                      closes (or after 20 s). PSM_NODES: two nodes, n0 and n1, up.
 *                      PSM_NOTIFY for task T: the reply (0), then at once PSM_DEAD for T
 *                      with id 0 (as older psids sent it) and exit status T's pid % 100;
 *                      so a task dies between its own registration and the next one.
 *                      Anything else: PSM_ERROR EOPNOTSUPP.
 */
#include "psi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void reply(int fd, struct psmsg_buf *b)
{
    if (psmsg_end(b) == 0) send(fd, b->data, b->len, MSG_NOSIGNAL);
    psmsg_buf_free(b);
}

static void serve(int fd, const struct psmsg *m)
{
    struct psmsg_buf b = {0};
    uint64_t tid = 0;
    switch (m->type) {
    case PSM_NODES:
        psmsg_begin(&b, PSM_NODES_REPLY, m->id);
        psmsg_put_u32(&b, PSF_SELF, 0);
        for (uint32_t i = 0; i < 2; i++) {
            char name[8];
            snprintf(name, sizeof name, "n%u", i);
            psmsg_record_begin(&b, PSF_NODE);
            psmsg_put_u32(&b, PSF_NODE_ID, i);
            psmsg_put_str(&b, PSF_NAME, name);
            psmsg_put_u32(&b, PSF_STATE, PSNODE_UP);
            psmsg_record_end(&b);
        }
        reply(fd, &b);
        return;
    case PSM_NOTIFY:
        psmsg_get_u64(&m->body, PSF_TID, &tid);
        psmsg_begin(&b, PSM_NOTIFY_REPLY, m->id);
        psmsg_put_u32(&b, PSF_ERRNO, 0);
        reply(fd, &b);
        psmsg_begin(&b, PSM_DEAD, 0);
        psmsg_put_u64(&b, PSF_TID, tid);
        psmsg_put_u32(&b, PSF_STATUS, (uint32_t)(PSTID_PID(tid) % 100) << 8);
        reply(fd, &b);
        return;
    default:
        psmsg_begin(&b, PSM_ERROR, m->id);
        psmsg_put_u32(&b, PSF_ERRNO, EOPNOTSUPP);
        reply(fd, &b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fakepsid SOCKET\n");
        return 2;
    }
    alarm(20);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[1]);
    unlink(a.sun_path);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0) {
        perror("fakepsid");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    int fd = accept(l, NULL, NULL);
    struct psi_rx rx = {0};
    struct psmsg m;
    for (;;) {
        int r;
        while ((r = psi_rx_next(&rx, &m)) == 1) serve(fd, &m);
        if (r < 0 || psi_rx_read(&rx, fd) <= 0) break;
    }
    psi_rx_free(&rx);
    unlink(a.sun_path);
    return 0;
}
