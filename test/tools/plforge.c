/*
 * plforge.c - a hostile process against other users' accelerated connections, for
 * test/shell/preload_forge.sh. It attacks the RDP endpoints of two processes under
 * libpspreload (the "victims", one endpoint each on node 0 and node 1, peers of each other):
 *
 *   plforge own -0 SOCK0 -1 SOCK1 [-a ADDR0] [-b ADDR1] [-l ADDR:PORT] [-p ADDR:PORT/LPORT]
 *               [-x ADDR] [-t SECONDS] VICTIMS
 *     As any user: (1) opens two endpoints of its own through the psids (SOCK0 of node 0,
 *     SOCK1 of node 1) and negotiates a connection between them as the library would
 *     (PSM_PL_OPEN, LISTEN, CONNECT, ACCEPT, OUTCOME), so that it holds a legitimate pair
 *     key: "own-key ok ep0 E0 ep1 E1 key HEX" (or "own-key fail WHY", exit 1);
 *     (2) asks the psids for the victims' key: PSM_PL_ACCEPT naming each endpoint id of
 *     1..EPMAX without a socket, and with a plain TCP socket connected to the victims'
 *     listener ADDR:PORT (-l): one line "steal WHAT ERRNO TEXT" each, and "steal-key GOT"
 *     if any reply carried a key (the test fails on it); with -p, a connection of the
 *     victims' uid still waiting to be accepted (its connector's ADDR:PORT, the listener's
 *     port LPORT) is claimed with a socket of the same ports and connector address, from our
 *     own listener on ADDR (-x, default 127.0.0.3): "steal claim-pending ERRNO TEXT";
 *     (3) for SECONDS (default 2), sends from its own UDP socket to both victims' ports
 *     packets built with the victims' header fields (node ids, every endpoint id 1..EPMAX
 *     as source and destination, random connection ids) and its own key: SYN signed with
 *     its handshake key, DATA and ACK with its MAC, plus garbage (random bytes, truncated
 *     and malformed headers). "sent forged N garbage M".
 *   plforge spoof -k HEX [-t SECONDS] [-r N] VICTIMS
 *     As root (raw sockets): the same forged packets, but each with the source address and
 *     port of the victim's peer endpoint, so that they pass RDP's address check and meet the
 *     MAC; then captures up to N (default 64) of the victims' own packets on lo (AF_PACKET)
 *     and sends each again unchanged, twice. "spoofed N captured C replayed R".
 *
 * VICTIMS: ADDR0:UDPPORT0 ADDR1:UDPPORT1, the victims' endpoints on node 0 and node 1.
 * The endpoint ids tried are 1..EPMAX (16) and the victims' UDP ports: psid names an
 * endpoint by its socket's port (older psids numbered them from 1).
 */
#include "../../rdp/auth.h"
#include "../../rdp/wire.h"
#include "psi.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EPMAX  16
#define NEPIDS (EPMAX + 2)

/* The endpoint ids tried: 1..EPMAX, then the victims' own (their UDP ports). */
static uint16_t ep_id(int i);
#define MAXPKT 2048

struct victim {
    struct sockaddr_in sa; /* the victim endpoint's UDP address */
    uint32_t node;
};

static struct victim vic[2];

static uint16_t ep_id(int i)
{
    return i < EPMAX ? (uint16_t)(i + 1) : ntohs(vic[i - EPMAX].sa.sin_port);
}
static uint8_t pair_key[32], hkey[32];
static int spoof_fd = -1, own_fd = -1;
static unsigned long n_sent, n_garbage;

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    char a[64];
    unsigned port;
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof a || sscanf(colon + 1, "%u", &port) != 1 ||
        port > 65535)
        return -1;
    memcpy(a, s, (size_t)(colon - s));
    a[colon - s] = 0;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, a, &sa->sin_addr) == 1 ? 0 : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- the forger's own endpoints and pair key --- */

static int call(struct psi *c, struct psmsg_buf *req, int fd, struct psmsg *rep, uint32_t *err)
{
    int r = psi_call_fd(c, req, fd, rep);
    psmsg_buf_free(req);
    if (r < 0) return -1;
    *err = EPROTO;
    psmsg_get_u32(&rep->body, PSF_ERRNO, err);
    return 0;
}

/* PSM_PL_ACCEPT is answered by an event (PSM_PL_ACCEPTED, with the request's tag): sent, and
 * that event waited for (5 s) as the reply; other events are skipped. */
static int accept_call(struct psi *c, struct psmsg_buf *req, int fd, struct psmsg *rep,
                       uint32_t *err)
{
    psmsg_put_u32(req, PSF_TAG, 9);
    uint32_t sent = psi_send_fd(c, req, fd);
    psmsg_buf_free(req);
    if (!sent) return -1;
    uint32_t tag = 0;
    int r;
    while (
        (r = psi_next_event(c, rep, 5000)) > 0 &&
        (rep->type != PSM_PL_ACCEPTED || psmsg_get_u32(&rep->body, PSF_TAG, &tag) < 0 || tag != 9))
        ;
    if (r <= 0) {
        if (r == 0) errno = ETIMEDOUT;
        return -1;
    }
    *err = EPROTO;
    psmsg_get_u32(&rep->body, PSF_ERRNO, err);
    return 0;
}

static int udp_bound(const char *addr, uint16_t *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

static int own_key(struct psi *c0, struct psi *c1, const char *a0, const char *a1)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    uint32_t e, ep0 = 0, ep1 = 0;
    uint16_t p0, p1;
    int u0 = udp_bound(a0, &p0), u1 = udp_bound(a1, &p1);
    if (u0 < 0 || u1 < 0) return printf("own-key fail udp %s\n", strerror(errno)), -1;
    own_fd = u0;
    psmsg_begin(&req, PSM_PL_OPEN, 0); /* the endpoint's socket passed: psid reads its port */
    if (call(c0, &req, u0, &rep, &e) < 0 || e || psmsg_get_u32(&rep.body, PSF_ENDPOINT, &ep0) < 0)
        return printf("own-key fail open on node 0\n"), -1;
    psmsg_begin(&req, PSM_PL_OPEN, 0);
    if (call(c1, &req, u1, &rep, &e) < 0 || e || psmsg_get_u32(&rep.body, PSF_ENDPOINT, &ep1) < 0)
        return printf("own-key fail open on node 1\n"), -1;

    struct sockaddr_in ls = {.sin_family = AF_INET}, cs = {.sin_family = AF_INET};
    socklen_t sl = sizeof ls;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    inet_pton(AF_INET, a1, &ls.sin_addr);
    inet_pton(AF_INET, a0, &cs.sin_addr);
    if (lfd < 0 || cfd < 0 || bind(lfd, (struct sockaddr *)&ls, sizeof ls) < 0 ||
        listen(lfd, 4) < 0 || getsockname(lfd, (struct sockaddr *)&ls, &sl) < 0 ||
        bind(cfd, (struct sockaddr *)&cs, sizeof cs) < 0)
        return printf("own-key fail tcp %s\n", strerror(errno)), -1;
    psmsg_begin(&req, PSM_PL_LISTEN, 0);
    if (call(c1, &req, lfd, &rep, &e) < 0 || e)
        return printf("own-key fail listen errno %u\n", e), -1;
    psmsg_begin(&req, PSM_PL_CONNECT, 0);
    psmsg_put_str(&req, PSF_ADDR, a1);
    psmsg_put_u32(&req, PSF_PORT, ntohs(ls.sin_port));
    psmsg_put_u32(&req, PSF_CONN, 1);
    if (call(c0, &req, cfd, &rep, &e) < 0 || e)
        return printf("own-key fail connect errno %u\n", e), -1;
    if (connect(cfd, (struct sockaddr *)&ls, sizeof ls) < 0)
        return printf("own-key fail real connect %s\n", strerror(errno)), -1;
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    int afd = poll(&pf, 1, 3000) == 1 ? accept(lfd, NULL, NULL) : -1;
    if (afd < 0) return printf("own-key fail accept\n"), -1;
    struct psmsg_field k1 = {0}, k0 = {0};
    psmsg_begin(&req, PSM_PL_ACCEPT, 0);
    if (accept_call(c1, &req, afd, &rep, &e) < 0 || e || !psmsg_find(&rep.body, PSF_KEY, &k1) ||
        k1.len != 32)
        return printf("own-key fail accept errno %u\n", e), -1;
    memcpy(pair_key, k1.val, 32);
    struct psmsg ev;
    if (psi_next_event(c0, &ev, 5000) <= 0 || ev.type != PSM_PL_OUTCOME ||
        !psmsg_find(&ev.body, PSF_KEY, &k0) || k0.len != 32 || memcmp(k0.val, pair_key, 32))
        return printf("own-key fail outcome\n"), -1;
    printf("own-key ok ep0 %u ep1 %u key ", ep0, ep1);
    for (int i = 0; i < 32; i++) printf("%02x", pair_key[i]);
    printf("\n");
    fflush(stdout);
    return 0;
}

/* --- asking psid for the victims' key --- */

static int stolen;

static void steal_answer(const char *what, struct psi *c, struct psmsg_buf *req, int fd)
{
    struct psmsg rep;
    uint32_t e = EPROTO;
    char text[200] = "";
    struct psmsg_field k;
    if (accept_call(c, req, fd, &rep, &e) < 0) {
        printf("steal %s closed %s\n", what, strerror(errno));
        return;
    }
    psmsg_get_str(&rep.body, PSF_TEXT, text, sizeof text);
    printf("steal %s %u %s\n", what, e, text);
    if (psmsg_find(&rep.body, PSF_KEY, &k)) {
        stolen = 1;
        printf("steal-key GOT (%s)\n", what);
    }
}

/* A socket with the 4-tuple psid keys a pending connection by, but for the local address:
 * bound to the victim connector's ADDR:PORT (SO_REUSEADDR, which the victim set too),
 * connected to our own listener on another loopback address at the victim listener's port,
 * and PSM_PL_ACCEPT with the accepted end on node 1's psid: the victim's pending connection
 * claimed by another uid. */
static void claim_pending(struct psi *c1, const char *pending, const char *other)
{
    struct sockaddr_in conn, lis = {.sin_family = AF_INET};
    char buf[64];
    unsigned lport;
    const char *slash = strchr(pending, '/');
    if (!slash || (size_t)(slash - pending) >= sizeof buf || sscanf(slash + 1, "%u", &lport) != 1) {
        printf("steal claim-pending none bad argument\n");
        return;
    }
    memcpy(buf, pending, (size_t)(slash - pending));
    buf[slash - pending] = 0;
    if (parse_addr(buf, &conn) < 0 || inet_pton(AF_INET, other, &lis.sin_addr) != 1) {
        printf("steal claim-pending none bad address\n");
        return;
    }
    lis.sin_port = htons((uint16_t)lport);
    int one = 1, afd = -1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(cfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    if (lfd < 0 || cfd < 0 || bind(lfd, (struct sockaddr *)&lis, sizeof lis) < 0 ||
        listen(lfd, 4) < 0 || bind(cfd, (struct sockaddr *)&conn, sizeof conn) < 0 ||
        connect(cfd, (struct sockaddr *)&lis, sizeof lis) < 0 || poll(&pf, 1, 3000) != 1 ||
        (afd = accept(lfd, NULL, NULL)) < 0) {
        printf("steal claim-pending none %s\n", strerror(errno));
    } else {
        struct psmsg_buf req = {0};
        psmsg_begin(&req, PSM_PL_ACCEPT, 0);
        steal_answer("claim-pending", c1, &req, afd);
    }
    if (afd >= 0) close(afd);
    if (lfd >= 0) close(lfd);
    if (cfd >= 0) close(cfd);
}

static void steal(struct psi c[2], const char *listener, const char *a0)
{
    char what[64];
    for (int n = 0; n < 2; n++)
        for (int e = 0; e < NEPIDS; e++) {
            uint32_t ep = ep_id(e);
            struct psmsg_buf req = {0};
            psmsg_begin(&req, PSM_PL_ACCEPT, 0);
            psmsg_put_u32(&req, PSF_NODE_ID, vic[1 - n].node);
            psmsg_put_u32(&req, PSF_ENDPOINT, ep);
            psmsg_put_u32(&req, PSF_UDP_PORT, ntohs(vic[1 - n].sa.sin_port));
            psmsg_put_u32(&req, PSF_CONN, 1);
            snprintf(what, sizeof what, "accept-nofd-node%d-ep%u", n, ep);
            steal_answer(what, &c[n], &req, -1);
        }
    struct sockaddr_in la, me = {.sin_family = AF_INET};
    if (listener && parse_addr(listener, &la) == 0) {
        for (int n = 0; n < 2; n++) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            inet_pton(AF_INET, a0, &me.sin_addr);
            if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof me) < 0 ||
                connect(fd, (struct sockaddr *)&la, sizeof la) < 0) {
                printf("steal tcp-to-listener none %s\n", strerror(errno));
                if (fd >= 0) close(fd);
                continue;
            }
            struct psmsg_buf req = {0};
            psmsg_begin(&req, PSM_PL_ACCEPT, 0);
            snprintf(what, sizeof what, "accept-tcp-to-listener-node%d", n);
            steal_answer(what, &c[n], &req, fd);
            close(fd);
        }
    }
    fflush(stdout);
}

/* --- forged packets --- */

/* Send pkt (n bytes) to victim v: from our own socket, or spoofed from v's peer. */
static void emit(const struct victim *v, const uint8_t *pkt, size_t n)
{
    if (spoof_fd < 0) {
        if (sendto(own_fd, pkt, n, 0, (const struct sockaddr *)&v->sa, sizeof v->sa) >= 0) n_sent++;
        return;
    }
    const struct victim *peer = v == &vic[0] ? &vic[1] : &vic[0];
    uint8_t buf[sizeof(struct iphdr) + sizeof(struct udphdr) + MAXPKT];
    struct iphdr *ip = (void *)buf;
    struct udphdr *udp = (void *)(buf + sizeof *ip);
    memset(buf, 0, sizeof *ip + sizeof *udp);
    ip->version = 4;
    ip->ihl = 5;
    ip->ttl = 64;
    ip->protocol = IPPROTO_UDP;
    ip->saddr = peer->sa.sin_addr.s_addr;
    ip->daddr = v->sa.sin_addr.s_addr;
    ip->tot_len = htons((uint16_t)(sizeof *ip + sizeof *udp + n));
    udp->source = peer->sa.sin_port;
    udp->dest = v->sa.sin_port;
    udp->len = htons((uint16_t)(sizeof *udp + n));
    udp->check = 0; /* none: allowed over IPv4 */
    memcpy(buf + sizeof *ip + sizeof *udp, pkt, n);
    if (sendto(spoof_fd, buf, sizeof *ip + sizeof *udp + n, 0, (const struct sockaddr *)&v->sa,
               sizeof v->sa) >= 0)
        n_sent++;
}

static void forge_round(void)
{
    uint8_t pkt[MAXPKT];
    for (int t = 0; t < 2; t++) {
        const struct victim *v = &vic[t], *peer = &vic[1 - t];
        for (int se = 0; se < NEPIDS; se++)
            for (int de = 0; de < NEPIDS; de++) {
                uint16_t sep = ep_id(se), dep = ep_id(de);
                struct rdp_hdr h = {.version = RDP_VERSION,
                                    .src_node = peer->node,
                                    .src_ep = sep,
                                    .dst_node = v->node,
                                    .dst_ep = dep,
                                    .src_conn = randombytes_random() | 1,
                                    .seq = randombytes_random()};
                /* SYN under our handshake key */
                struct rdp_hs hs = {.incarnation = 1, .max_payload = 1400, .macs = RDP_MACS_CHACHA};
                randombytes_buf(hs.rand, sizeof hs.rand);
                h.type = RDP_T_SYN;
                h.len = RDP_HS_LEN;
                rdp_hdr_encode(pkt, &h);
                rdp_hs_encode(pkt + RDP_HDR_LEN, &hs);
                rdp_hs_sign(hkey, pkt, RDP_HDR_LEN + RDP_HS_LEN);
                emit(v, pkt, RDP_HDR_LEN + RDP_HS_LEN + RDP_MAC_LEN);
                /* DATA with a guessed connection and our MAC */
                h.type = RDP_T_DATA;
                h.flags = RDP_F_FIRST | RDP_F_LAST;
                h.dst_conn = randombytes_random() | 1;
                h.pn = 1 + randombytes_uniform(1000);
                h.len = 64;
                h.msg_len = 64;
                rdp_hdr_encode(pkt, &h);
                randombytes_buf(pkt + RDP_HDR_LEN, 64);
                rdp_mac_sign(pair_key, h.src_node, h.dst_node, h.pn, pkt, RDP_HDR_LEN + 64);
                emit(v, pkt, RDP_HDR_LEN + 64 + RDP_MAC_LEN);
                /* ACK acknowledging far ahead */
                h.type = RDP_T_ACK;
                h.flags = 0;
                h.msg_len = 0;
                h.len = 0;
                h.ack = randombytes_random();
                h.wnd = 1u << 20;
                rdp_hdr_encode(pkt, &h);
                rdp_mac_sign(pair_key, h.src_node, h.dst_node, h.pn, pkt, RDP_HDR_LEN);
                emit(v, pkt, RDP_HDR_LEN + RDP_MAC_LEN);
            }
        /* garbage: random bytes of random lengths, short packets, a valid-looking header
         * with lengths that disagree */
        for (int i = 0; i < 32; i++) {
            size_t n = randombytes_uniform(MAXPKT);
            randombytes_buf(pkt, n);
            if (i % 4 == 1 && n > 4) pkt[0] = RDP_VERSION;
            emit(v, pkt, n);
            n_garbage++;
        }
        for (size_t n = 0; n < RDP_OVERHEAD; n += 7) {
            randombytes_buf(pkt, n);
            if (n) pkt[0] = RDP_VERSION;
            emit(v, pkt, n);
            n_garbage++;
        }
    }
}

static void forge_for(double seconds)
{
    rdp_hs_key(pair_key, hkey);
    double end = now() + seconds;
    while (now() < end) {
        forge_round();
        usleep(20000); /* pace: the victims' endpoints, not the CPU, are the target */
    }
}

/* --- replays (root) --- */

static int is_victim(const struct iphdr *ip, const struct udphdr *udp)
{
    for (int i = 0; i < 2; i++)
        if (ip->daddr == vic[i].sa.sin_addr.s_addr && udp->dest == vic[i].sa.sin_port) return 1;
    return 0;
}

static void replay(int want, double seconds)
{
    static uint8_t cap[64][sizeof(struct iphdr) + sizeof(struct udphdr) + 65536];
    static size_t caplen[64];
    int captured = 0, replayed = 0;
    if (want > 64) want = 64;
    int pf = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
    struct sockaddr_ll ll = {.sll_family = AF_PACKET,
                             .sll_protocol = htons(ETH_P_IP),
                             .sll_ifindex = (int)if_nametoindex("lo")};
    if (pf < 0 || bind(pf, (struct sockaddr *)&ll, sizeof ll) < 0) {
        printf("replay capture %s\n", strerror(errno));
        return;
    }
    double end = now() + seconds;
    while (captured < want && now() < end) {
        struct pollfd p = {.fd = pf, .events = POLLIN};
        if (poll(&p, 1, 100) != 1) continue;
        struct sockaddr_ll from;
        socklen_t fl = sizeof from;
        ssize_t n =
            recvfrom(pf, cap[captured], sizeof cap[captured], 0, (struct sockaddr *)&from, &fl);
        if (n < (ssize_t)(sizeof(struct iphdr) + sizeof(struct udphdr)) ||
            from.sll_pkttype != PACKET_HOST)
            continue;
        const struct iphdr *ip = (const void *)cap[captured];
        if (ip->protocol != IPPROTO_UDP || ip->ihl != 5) continue;
        const struct udphdr *udp = (const void *)(cap[captured] + sizeof *ip);
        if (!is_victim(ip, udp)) continue;
        caplen[captured++] = (size_t)n;
    }
    close(pf);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < captured; i++) {
            const struct iphdr *ip = (const void *)cap[i];
            struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = ip->daddr};
            /* lo leaves the recorded UDP checksum partial (offload): 0 is "no checksum" */
            ((struct udphdr *)(cap[i] + sizeof *ip))->check = 0;
            if (sendto(spoof_fd, cap[i], caplen[i], 0, (struct sockaddr *)&to, sizeof to) >= 0)
                replayed++;
        }
    printf("spoofed %lu captured %d replayed %d\n", n_sent, captured, replayed);
}

static int usage(void)
{
    fprintf(stderr, "usage: plforge own -0 SOCK0 -1 SOCK1 [-a ADDR0] [-b ADDR1] [-l ADDR:PORT] "
                    "[-p ADDR:PORT/LPORT] [-x ADDR] [-t SECONDS] ADDR0:PORT0 ADDR1:PORT1\n"
                    "       plforge spoof -k HEX [-t SECONDS] [-r N] ADDR0:PORT0 ADDR1:PORT1\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || sodium_init() < 0) return usage();
    const char *mode = argv[1], *s0 = NULL, *s1 = NULL, *a0 = "127.0.0.1", *a1 = "127.0.0.2";
    const char *listener = NULL, *keyhex = NULL, *pending = NULL, *other = "127.0.0.3";
    double seconds = 2;
    int nreplay = 64, opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "0:1:a:b:l:t:k:r:p:x:")) != -1) {
        switch (opt) {
        case '0':
            s0 = optarg;
            break;
        case '1':
            s1 = optarg;
            break;
        case 'a':
            a0 = optarg;
            break;
        case 'b':
            a1 = optarg;
            break;
        case 'l':
            listener = optarg;
            break;
        case 't':
            seconds = atof(optarg);
            break;
        case 'k':
            keyhex = optarg;
            break;
        case 'r':
            nreplay = atoi(optarg);
            break;
        case 'p':
            pending = optarg;
            break;
        case 'x':
            other = optarg;
            break;
        default:
            return usage();
        }
    }
    if (argc - optind != 2 || parse_addr(argv[optind], &vic[0].sa) < 0 ||
        parse_addr(argv[optind + 1], &vic[1].sa) < 0)
        return usage();
    vic[0].node = 0;
    vic[1].node = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "own")) {
        if (!s0 || !s1) return usage();
        struct psi c[2];
        if (psi_open(&c[0], s0) < 0 || psi_open(&c[1], s1) < 0) {
            printf("own-key fail psid %s\n", strerror(errno));
            return 1;
        }
        if (own_key(&c[0], &c[1], a0, a1) < 0) return 1;
        if (pending) claim_pending(&c[1], pending, other);
        steal(c, listener, a0);
        forge_for(seconds);
        printf("sent forged %lu garbage %lu\n", n_sent - n_garbage, n_garbage);
        return stolen ? 3 : 0;
    }
    if (!strcmp(mode, "spoof")) {
        size_t kl = 0;
        if (!keyhex ||
            sodium_hex2bin(pair_key, sizeof pair_key, keyhex, strlen(keyhex), NULL, &kl, NULL) <
                0 ||
            kl != 32)
            return usage();
        spoof_fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
        if (spoof_fd < 0) {
            printf("spoof raw socket %s\n", strerror(errno));
            return 1;
        }
        forge_for(seconds);
        replay(nreplay, seconds + 2);
        return 0;
    }
    return usage();
}
