/*
 * pldrive.c - speaks the preload negotiation to psid (psproto.h, PSM_PL_*) as one process
 * under the preload library would, with real sockets, for test/shell/psid_preload.sh. One
 * connection to psid ($PSID_SOCKET) for the whole run; commands on stdin, one answer line
 * each on stdout:
 *
 *   open UDPPORT ADDR              a UDP socket bound to ADDR:UDPPORT, PSM_PL_OPEN with it:
 *                                  "open ERRNO [node N ep E] / [WHY]"
 *   listen ADDR PORT               a listening socket, registered (the socket passed):
 *                                  "listen ERRNO [WHY]"
 *   unlisten PORT                  "unlisten ERRNO [WHY]"
 *   connect ADDR PORT CONN SRC     a socket bound to SRC:0, PSM_PL_CONNECT with it, then the
 *                                  real connect when psid said pending: "connect ERRNO [WHY]";
 *                                  a refusal must come as CONN's outcome event too (the
 *                                  library waits for no reply): else ", no outcome" follows
 *   early ADDR PORT CONN SRC       a socket bound to SRC:0 and connected, psid not told yet (the
 *                                  library's SYN goes before its request): "early 0"
 *   announce CONN                  PSM_PL_CONNECT for that socket now: "announce ERRNO [WHY]"
 *   accept                         the real accept (3 s at most), then PSM_PL_ACCEPT with the
 *                                  accepted socket, and its answer, the PSM_PL_ACCEPTED event
 *                                  (12 s at most): "accept 0 node N ep E udp U addr A key
 *                                  HEX conn C" or "accept ERRNO WHY"
 *   accept-shm                     the same, able to take a same-node channel: "accept-shm 0
 *                                  ... conn C"
 *   announce-same CONN             announce, to a listener of this node (PSF_SAME_NODE)
 *   decline                        the real accept, then PSM_PL_DECLINE with the accepted
 *                                  socket: "decline ERRNO [WHY]"
 *   event                          the next PSM_PL_OUTCOME (12 s at most): "outcome CONN 0
 *                                  node N ep E udp U addr A key HEX" or "outcome CONN ERRNO
 *                                  WHY", or "event none"
 *   close CONN                     close the connector's socket of CONN: "close 0"
 *   nofd connect|accept|listen|open  the request without a socket: "nofd ERRNO [WHY]"
 *   flood                          a request with more descriptors than psid takes: "flood
 *                                  ERRNO" (the errno of the next request: psid closed us)
 *
 * Exits at the end of its input (the endpoint and its registrations die with it).
 */
#include "psi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXCONN 64

static void peer_fields(const struct psmsg *m)
{
    uint32_t node = 0, ep = 0, udp = 0, conn = 0;
    char addr[64] = "";
    struct psmsg_field key = {0};
    psmsg_get_u32(&m->body, PSF_NODE_ID, &node);
    psmsg_get_u32(&m->body, PSF_ENDPOINT, &ep);
    psmsg_get_u32(&m->body, PSF_UDP_PORT, &udp);
    psmsg_get_str(&m->body, PSF_ADDR, addr, sizeof addr);
    psmsg_find(&m->body, PSF_KEY, &key);
    printf(" node %u ep %u udp %u addr %s key ", node, ep, udp, addr);
    for (uint32_t i = 0; i < key.len; i++) printf("%02x", key.val[i]);
    if (psmsg_get_u32(&m->body, PSF_CONN, &conn) == 0 && m->type == PSM_PL_ACCEPTED)
        printf(" conn %u", conn);
}

static void answer(const char *what, const struct psmsg *m, bool peer)
{
    uint32_t e = EPROTO, node = 0, ep = 0;
    char text[256] = "";
    psmsg_get_u32(&m->body, PSF_ERRNO, &e);
    printf("%s %u", what, e);
    if (e == 0 && peer) {
        peer_fields(m);
    } else if (e == 0 && psmsg_get_u32(&m->body, PSF_NODE_ID, &node) == 0 &&
               psmsg_get_u32(&m->body, PSF_ENDPOINT, &ep) == 0) {
        printf(" node %u ep %u", node, ep);
    } else if (e && psmsg_get_str(&m->body, PSF_TEXT, text, sizeof text) == 0) {
        printf(" %s", text);
    }
    printf("\n");
}

static int tcp_socket(const char *addr, unsigned port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) return -1;
    return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

int main(void)
{
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        printf("connect %s: %s\n", psi_socket_path(), strerror(errno));
        return 1;
    }
    int lfd = -1, conns[MAXCONN];
    unsigned conn_ids[MAXCONN], nconns = 0;
    struct sockaddr_in early_addr[MAXCONN];
    char line[512], cmd[32], addr[128], src[128];
    unsigned a, b;
    while (fgets(line, sizeof line, stdin)) {
        struct psmsg_buf req = {0};
        struct psmsg m;
        int pass = -1, r;
        bool peer = false;
        struct sockaddr_in sa;
        if (sscanf(line, "%31s", cmd) != 1) continue;
        if (!strcmp(cmd, "open") && sscanf(line, "%*s %u %127s", &a, addr) == 2) {
            struct sockaddr_in ua = {.sin_family = AF_INET, .sin_port = htons((uint16_t)a)};
            int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            if (u < 0 || inet_pton(AF_INET, addr, &ua.sin_addr) != 1 ||
                bind(u, (struct sockaddr *)&ua, sizeof ua) < 0) {
                printf("open bind %s\n", strerror(errno));
                fflush(stdout);
                continue;
            }
            psmsg_begin(&req, PSM_PL_OPEN, 0); /* the endpoint's socket, kept open */
            pass = u;
        } else if (!strcmp(cmd, "listen") && sscanf(line, "%*s %127s %u", addr, &a) == 2) {
            int one = 1;
            lfd = tcp_socket(addr, a, &sa);
            setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one); /* shared ports */
            if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 64) < 0) {
                printf("listen bind %s\n", strerror(errno));
                fflush(stdout);
                continue;
            }
            psmsg_begin(&req, PSM_PL_LISTEN, 0);
            pass = lfd;
        } else if (!strcmp(cmd, "unlisten") && sscanf(line, "%*s %u", &a) == 1) {
            psmsg_begin(&req, PSM_PL_UNLISTEN, 0);
            psmsg_put_u32(&req, PSF_PORT, a);
        } else if (!strcmp(cmd, "connect") &&
                   sscanf(line, "%*s %127s %u %u %127s", addr, &a, &b, src) == 4 &&
                   nconns < MAXCONN) {
            struct sockaddr_in me;
            int fd = tcp_socket(src, 0, &me);
            if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof me) < 0 ||
                tcp_socket(addr, a, &sa) < 0) {
                printf("connect bind %s\n", strerror(errno));
                fflush(stdout);
                continue;
            }
            psmsg_begin(&req, PSM_PL_CONNECT, 0);
            psmsg_put_str(&req, PSF_ADDR, addr);
            psmsg_put_u32(&req, PSF_PORT, a);
            psmsg_put_u32(&req, PSF_CONN, b);
            r = psi_call_fd(&c, &req, fd, &m);
            psmsg_buf_free(&req);
            if (r < 0) goto broken;
            uint32_t e = EPROTO;
            psmsg_get_u32(&m.body, PSF_ERRNO, &e);
            /* only where psid said pending: never a connect to an address it refused */
            if (e == 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                printf("connect real %s\n", strerror(errno));
                fflush(stdout);
                continue;
            }
            conns[nconns] = fd;
            conn_ids[nconns++] = b;
            if (!e) {
                answer(cmd, &m, false);
                fflush(stdout);
                continue;
            }
            /* a refusal: its outcome must come too, with the same errno (the reply is
             * read before: the next message overwrites it) */
            char why[256] = "";
            psmsg_get_str(&m.body, PSF_TEXT, why, sizeof why);
            struct psmsg ev;
            uint32_t id = 0, ee = 0;
            while (psi_next_event(&c, &ev, 3000) > 0 &&
                   (psmsg_get_u32(&ev.body, PSF_CONN, &id) < 0 || id != b))
                ;
            bool told = id == b && psmsg_get_u32(&ev.body, PSF_ERRNO, &ee) == 0 && ee == e;
            printf("connect %u%s%s%s\n", e, *why ? " " : "", why, told ? "" : ", no outcome");
            fflush(stdout);
            continue;
        } else if (!strcmp(cmd, "early") &&
                   sscanf(line, "%*s %127s %u %u %127s", addr, &a, &b, src) == 4 &&
                   nconns < MAXCONN) {
            struct sockaddr_in me;
            int fd = tcp_socket(src, 0, &me);
            if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof me) < 0 ||
                tcp_socket(addr, a, &sa) < 0 ||
                connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
                printf("early %s\n", strerror(errno));
                fflush(stdout);
                continue;
            }
            conns[nconns] = fd;
            conn_ids[nconns++] = b;
            early_addr[nconns - 1] = sa;
            printf("early 0\n");
            fflush(stdout);
            continue;
        } else if ((!strcmp(cmd, "announce") || !strcmp(cmd, "announce-same")) &&
                   sscanf(line, "%*s %u", &b) == 1) {
            unsigned i = 0;
            while (i < nconns && conn_ids[i] != b) i++;
            if (i == nconns) {
                printf("announce none\n");
                fflush(stdout);
                continue;
            }
            char dst[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &early_addr[i].sin_addr, dst, sizeof dst);
            psmsg_begin(&req, PSM_PL_CONNECT, 0);
            psmsg_put_str(&req, PSF_ADDR, dst);
            psmsg_put_u32(&req, PSF_PORT, ntohs(early_addr[i].sin_port));
            psmsg_put_u32(&req, PSF_CONN, b);
            if (cmd[8] == '-') { /* announce-same: to a listener of this node */
                psmsg_put_u32(&req, PSF_SAME_NODE, 1);
                psmsg_put_u32(&req, PSF_SHM_RING, 1u << 20);
            }
            pass = conns[i];
        } else if (!strcmp(cmd, "accept") || !strcmp(cmd, "accept-shm") ||
                   !strcmp(cmd, "decline")) {
            /* the real accept, then PSM_PL_ACCEPT or PSM_PL_DECLINE with the socket */
            struct pollfd pf = {.fd = lfd, .events = POLLIN};
            int fd = lfd >= 0 && poll(&pf, 1, 3000) == 1 ? accept(lfd, NULL, NULL) : -1;
            if (fd < 0) {
                printf("%s none\n", cmd);
                fflush(stdout);
                continue;
            }
            psmsg_begin(&req, cmd[0] == 'a' ? PSM_PL_ACCEPT : PSM_PL_DECLINE, 0);
            if (cmd[6] == '-') psmsg_put_u32(&req, PSF_SHM_RING, 1); /* it can take a channel */
            pass = fd;
            peer = cmd[0] == 'a';
        } else if (!strcmp(cmd, "event")) {
            r = psi_next_event(&c, &m, 12000);
            if (r <= 0) {
                printf("event none\n");
            } else {
                uint32_t id = 0, e = EPROTO;
                char text[256] = "";
                psmsg_get_u32(&m.body, PSF_CONN, &id);
                psmsg_get_u32(&m.body, PSF_ERRNO, &e);
                printf("outcome %u %u", id, e);
                if (e == 0)
                    peer_fields(&m);
                else if (psmsg_get_str(&m.body, PSF_TEXT, text, sizeof text) == 0)
                    printf(" %s", text);
                printf("\n");
            }
            fflush(stdout);
            continue;
        } else if (!strcmp(cmd, "close") && sscanf(line, "%*s %u", &a) == 1) {
            for (unsigned i = 0; i < nconns; i++)
                if (conn_ids[i] == a && conns[i] >= 0) {
                    close(conns[i]);
                    conns[i] = -1;
                }
            printf("close 0\n");
            fflush(stdout);
            continue;
        } else if (!strcmp(cmd, "nofd") && sscanf(line, "%*s %31s", addr) == 1) {
            psmsg_begin(&req,
                        addr[0] == 'c'   ? PSM_PL_CONNECT
                        : addr[0] == 'a' ? PSM_PL_ACCEPT
                        : addr[0] == 'o' ? PSM_PL_OPEN
                                         : PSM_PL_LISTEN,
                        0);
            psmsg_put_str(&req, PSF_ADDR, "127.0.0.2");
            psmsg_put_u32(&req, PSF_PORT, 5000);
            psmsg_put_u32(&req, PSF_CONN, 1);
        } else if (!strcmp(cmd, "flood")) {
            /* PSM_PL_OPEN with 8 descriptors on its first byte */
            psmsg_begin(&req, PSM_PL_OPEN, 0);
            psmsg_put_u32(&req, PSF_PORT, 1);
            psmsg_end(&req);
            union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(8 * sizeof(int))];
            } u;
            memset(&u, 0, sizeof u);
            struct iovec iov = {req.data, req.len};
            struct msghdr mh = {.msg_iov = &iov,
                                .msg_iovlen = 1,
                                .msg_control = u.buf,
                                .msg_controllen = sizeof u.buf};
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(8 * sizeof(int));
            for (int i = 0; i < 8; i++) memcpy(CMSG_DATA(cm) + i * sizeof(int), &(int){0}, 4);
            sendmsg(psi_fd(&c), &mh, MSG_NOSIGNAL);
            psmsg_buf_free(&req);
            psmsg_begin(&req, PSM_PL_OPEN, 0);
            psmsg_put_u32(&req, PSF_PORT, 1);
            r = psi_call(&c, &req, &m);
            psmsg_buf_free(&req);
            printf("flood %d\n", r < 0 ? errno : 0);
            fflush(stdout);
            continue;
        } else {
            printf("%s usage\n", cmd);
            fflush(stdout);
            continue;
        }
        if (!strncmp(cmd, "accept", 6) || (!strcmp(cmd, "nofd") && addr[0] == 'a')) {
            /* not a reply: the PSM_PL_ACCEPTED event with our tag (outcomes are skipped) */
            psmsg_put_u32(&req, PSF_TAG, 7);
            uint32_t sent = psi_send_fd(&c, &req, pass);
            psmsg_buf_free(&req);
            if (!sent) goto broken;
            uint32_t tag = 0;
            while ((r = psi_next_event(&c, &m, 12000)) > 0 &&
                   (m.type != PSM_PL_ACCEPTED || psmsg_get_u32(&m.body, PSF_TAG, &tag) < 0))
                ;
            if (r <= 0 || tag != 7) {
                printf("%s none\n", cmd);
                fflush(stdout);
                continue;
            }
            answer(cmd, &m, peer);
            fflush(stdout);
            continue;
        }
        r = psi_call_fd(&c, &req, pass, &m);
        psmsg_buf_free(&req);
        if (r < 0) goto broken;
        answer(cmd, &m, peer);
        fflush(stdout);
        if (!strcmp(cmd, "nofd") && addr[0] == 'c') { /* its refusal's outcome, not kept */
            struct psmsg ev;
            uint32_t id = 0;
            while (psi_next_event(&c, &ev, 3000) > 0 &&
                   (psmsg_get_u32(&ev.body, PSF_CONN, &id) < 0 || id != 1))
                ;
        }
    }
    psi_close(&c);
    return 0;
broken:
    printf("%s error %s\n", cmd, strerror(errno));
    fflush(stdout);
    return 1;
}
