/*
 * test_preload_claim.c - psid's claim rule (psid/preload.c; docs/security.md, "The claim
 * rule") as a state test: a real psid core (one node, this machine's 127.0.0.1) runs its
 * loop in a thread of this process, and this test's psi connections are its clients, as
 * processes under the library would be. They register listeners and claim connections with
 * every kind of socket a hostile local user can pass: sockets of a private user and network
 * namespace with the victim's very 4-tuple, sockets of other addresses, a listening socket
 * where a connected one is wanted, a UDP socket, a pipe, none. Each is refused with its
 * reason; the connection's own endpoint still gets its channel afterwards; and a
 * same-node-only endpoint on another address takes no port from the victim's listener.
 *
 * The private namespace is made by a forked child (unshare(CLONE_NEWUSER | CLONE_NEWNET),
 * which Debian 12 allows unprivileged users; plain CLONE_NEWNET as root), which sends its
 * sockets back with SCM_RIGHTS. Where no namespace can be made, the namespace cases say so
 * on stderr and the rest still runs.
 */
#include "../../psid/daemon.h"
#include "../../psid/log.h"
#include "fdpass.h"
#include "psi.h"
#include "psmsg.h"
#include "psproto.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

struct core {
    struct psid d;
    char dir[64];
    char sock[128];
    pthread_t th;
    atomic_bool stop;
};

static void *core_run(void *arg)
{
    struct core *k = arg;
    while (!atomic_load(&k->stop)) loop_once(k->d.loop);
    return NULL;
}

/* A psid core for node 0 of one node (127.0.0.1), its loop in a thread. */
static void core_up(struct core *k)
{
    memset(k, 0, sizeof *k);
    snprintf(k->dir, sizeof k->dir, "/tmp/psclaimXXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(k->dir));
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/key", k->dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("claim key claim key claim key claim key", f);
    fclose(f);
    chmod(path, 0600);
    unsigned port = 30000 + (unsigned)getpid() % 20000;
    snprintf(path, sizeof path, "%s/psid.conf", k->dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    fprintf(f,
            "cluster = \"claim\";\nkey_file = \"%s/key\";\nlog_level = \"error\";\n"
            "rdp = { port = %u; };\nheartbeat = { mode = \"unicast\"; port = %u; };\n"
            "psid = { socket = \"%s/psid-%%n.sock\"; client_idle_s = 0; };\n"
            "nodes = ( { id = 0; name = \"n0\"; address = \"127.0.0.1\"; } );\n",
            k->dir, port, port + 1, k->dir);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(psconf_load(path, &k->d.conf, err, sizeof err), 0);
    log_open(PSCONF_LOG_ERROR, 0, "claim");
    k->d.self = psconf_node_lookup(&k->d.conf, "0");
    k->d.incarnation = 1;
    k->d.hb_fd = k->d.sig_fd = -1;
    k->d.loop = loop_new();
    k->d.nodes = calloc(k->d.conf.nnodes, sizeof *k->d.nodes);
    CU_ASSERT_FATAL(k->d.self && k->d.loop && k->d.nodes);
    k->d.nodes[0].conf = k->d.self;
    k->d.nodes[0].state = PSNODE_UP;
    CU_ASSERT_EQUAL_FATAL(rdplink_start(&k->d), 0);
    CU_ASSERT_EQUAL_FATAL(clients_start(&k->d), 0);
    snprintf(k->sock, sizeof k->sock, "%s/psid-0.sock", k->dir);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&k->th, NULL, core_run, k), 0);
}

static void client(struct core *k, struct psi *c)
{
    CU_ASSERT_EQUAL_FATAL(psi_open(c, k->sock), 0);
    struct timeval tv = {5, 0}; /* no answer within 5 s is a failure, not a hang */
    setsockopt(psi_fd(c), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static void core_down(struct core *k)
{
    atomic_store(&k->stop, true);
    struct psi wake; /* a connection wakes the loop */
    if (psi_open(&wake, k->sock) == 0) psi_close(&wake);
    pthread_join(k->th, NULL);
    preload_free(&k->d);
    clients_stop(&k->d);
    rdplink_stop(&k->d);
    loop_free(k->d.loop);
    free(k->d.nodes);
    psconf_free(&k->d.conf);
    char path[160];
    static const char *const files[] = {"key", "psid.conf", "psid-0.sock"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", k->dir, files[i]);
        unlink(path);
    }
    rmdir(k->dir);
}

/* --- sockets --- */

static struct sockaddr_in sin4(const char *addr, unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    return a;
}

static int udp_on(const char *addr)
{
    struct sockaddr_in a = sin4(addr, 0);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static int listener_on(const char *addr, unsigned *port)
{
    struct sockaddr_in a = sin4(addr, *port);
    socklen_t l = sizeof a;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    CU_ASSERT_EQUAL_FATAL(listen(fd, 16), 0);
    CU_ASSERT_EQUAL_FATAL(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A connection to addr:port (a listener of ours): the connector's socket, bound to
 * from:fport (0: the kernel's), and the accepted one from lfd. */
static void connection(int lfd, const char *from, unsigned fport, const char *addr, unsigned port,
                       int *cfd, int *afd)
{
    struct sockaddr_in f = sin4(from, fport), t = sin4(addr, port);
    int one = 1;
    *cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_TRUE_FATAL(*cfd >= 0);
    setsockopt(*cfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    CU_ASSERT_EQUAL_FATAL(bind(*cfd, (struct sockaddr *)&f, sizeof f), 0);
    CU_ASSERT_EQUAL_FATAL(connect(*cfd, (struct sockaddr *)&t, sizeof t), 0);
    *afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    CU_ASSERT_TRUE_FATAL(*afd >= 0);
}

static unsigned local_port(int fd)
{
    struct sockaddr_in a;
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    return ntohs(a.sin_port);
}

/* What a private namespace's child made: a UDP socket on 127.0.0.1, a listener on
 * 127.0.0.1:port, and the look-alike of the victim's connection 127.0.0.1:cport ->
 * 127.0.0.1:port (its accepted end). */
struct lookalike {
    int udp, lis, acc;
};

/* 0 with the look-alike's sockets, or -1 when no private namespace can be made here. */
static int private_lookalike(unsigned port, unsigned cport, struct lookalike *out)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pid_t pid = fork();
    CU_ASSERT_TRUE_FATAL(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        if (unshare(geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) < 0) _exit(4);
        struct ifreq ifr = {0};
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
            (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr)) < 0)
            _exit(5);
        struct sockaddr_in u = sin4("127.0.0.1", 0), l = sin4("127.0.0.1", port),
                           c = sin4("127.0.0.1", cport);
        int one = 1, fds[3];
        fds[0] = socket(AF_INET, SOCK_DGRAM, 0);
        fds[1] = socket(AF_INET, SOCK_STREAM, 0);
        int cfd = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(cfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fds[0], (struct sockaddr *)&u, sizeof u) < 0 ||
            bind(fds[1], (struct sockaddr *)&l, sizeof l) < 0 || listen(fds[1], 4) < 0 ||
            bind(cfd, (struct sockaddr *)&c, sizeof c) < 0 ||
            connect(cfd, (struct sockaddr *)&l, sizeof l) < 0 ||
            (fds[2] = accept(fds[1], NULL, NULL)) < 0)
            _exit(6);
        char x = 'x';
        fdpass_send(sv[1], &x, 1, fds, 3, 0);
        char b;
        (void)!read(sv[1], &b, 1); /* hold the look-alike until the parent is done */
        _exit(0);
    }
    close(sv[1]);
    int fds[3];
    int got = fdpass_recv(sv[0], fds, 3);
    close(sv[0]); /* the child ends; the sockets are ours now */
    int st;
    waitpid(pid, &st, 0);
    if (got < 0) {
        fprintf(stderr, "\n    (no private network namespace here, exit %d: its cases not run)\n",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    *out = (struct lookalike){fds[0], fds[1], fds[2]};
    return 0;
}

/* --- requests, as the library makes them --- */

/* A request with fd (-1: none): its PSM_PL_REPLY's errno, its text into why. */
static uint32_t req(struct psi *c, uint16_t type, int fd, const char *addr, unsigned port,
                    uint32_t same, uint32_t shm_only, char *why, size_t whylen)
{
    struct psmsg_buf b = {0};
    struct psmsg rep;
    psmsg_begin(&b, type, 0);
    if (addr) psmsg_put_str(&b, PSF_ADDR, addr);
    if (port) psmsg_put_u32(&b, PSF_PORT, port);
    if (type == PSM_PL_CONNECT) {
        psmsg_put_u32(&b, PSF_CONN, 7);
        psmsg_put_u32(&b, PSF_SHM_RING, 64u << 10);
    }
    if (same) psmsg_put_u32(&b, PSF_SAME_NODE, same);
    if (shm_only) psmsg_put_u32(&b, PSF_SAME_NODE, shm_only);
    int r = psi_call_fd(c, &b, fd, &rep);
    psmsg_buf_free(&b);
    if (fd >= 0) close(fd);
    CU_ASSERT_EQUAL(r, 0);
    if (r < 0) return (uint32_t)errno;
    uint32_t e = EPROTO;
    psmsg_get_u32(&rep.body, PSF_ERRNO, &e);
    if (why) {
        why[0] = 0;
        psmsg_get_str(&rep.body, PSF_TEXT, why, whylen);
    }
    return e;
}

/* PSM_PL_ACCEPT with fd: the PSM_PL_ACCEPTED event's errno, and how many descriptors came
 * with it (*nfds; they are closed). */
static uint32_t claim(struct psi *c, int fd, int *nfds, char *why, size_t whylen)
{
    static uint32_t tag;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_PL_ACCEPT, 0);
    psmsg_put_u32(&b, PSF_TAG, ++tag);
    psmsg_put_u32(&b, PSF_SHM_RING, 1);
    uint32_t sent = psi_send_fd(c, &b, fd);
    psmsg_buf_free(&b);
    if (fd >= 0) close(fd);
    CU_ASSERT_NOT_EQUAL(sent, 0);
    struct psmsg ev;
    uint32_t t = 0, e = EPROTO;
    int r;
    while ((r = psi_next_event(c, &ev, 3000)) > 0 &&
           (ev.type != PSM_PL_ACCEPTED || psmsg_get_u32(&ev.body, PSF_TAG, &t) < 0 || t != tag))
        ;
    CU_ASSERT_EQUAL(r, 1);
    *nfds = 0;
    if (r != 1) return ETIMEDOUT;
    psmsg_get_u32(&ev.body, PSF_ERRNO, &e);
    why[0] = 0;
    psmsg_get_str(&ev.body, PSF_TEXT, why, whylen);
    for (int x; (x = psi_take_fd(c)) >= 0; (*nfds)++) close(x);
    return e;
}

/* The connector's PSM_PL_OUTCOME: its errno and descriptor count. */
static uint32_t outcome(struct psi *c, int *nfds)
{
    struct psmsg ev;
    int r;
    while ((r = psi_next_event(c, &ev, 3000)) > 0 && ev.type != PSM_PL_OUTCOME)
        ;
    CU_ASSERT_EQUAL(r, 1);
    *nfds = 0;
    if (r != 1) return ETIMEDOUT;
    uint32_t e = EPROTO;
    psmsg_get_u32(&ev.body, PSF_ERRNO, &e);
    for (int x; (x = psi_take_fd(c)) >= 0; (*nfds)++) close(x);
    return e;
}

static int dup_fd(int fd)
{
    return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

/* The victim's connection negotiating on one node, then every forged claim refused, then
 * the victim's own claim taking it. */
static void test_claims(void)
{
    struct core k;
    core_up(&k);
    struct psi victim, conn, att, att2;
    client(&k, &victim);
    client(&k, &conn);
    client(&k, &att);
    client(&k, &att2);
    char why[200];
    int n;
    unsigned port = 0;
    CU_ASSERT_EQUAL(req(&victim, PSM_PL_OPEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why),
                    0);
    CU_ASSERT_EQUAL(req(&conn, PSM_PL_OPEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why),
                    0);
    int lfd = listener_on("127.0.0.1", &port);
    CU_ASSERT_EQUAL(req(&victim, PSM_PL_LISTEN, dup_fd(lfd), NULL, 0, 0, 0, why, sizeof why), 0);
    int cfd, afd;
    connection(lfd, "127.0.0.1", 0, "127.0.0.1", port, &cfd, &afd);
    CU_ASSERT_EQUAL(
        req(&conn, PSM_PL_CONNECT, dup_fd(cfd), "127.0.0.1", port, 1, 0, why, sizeof why), 0);

    /* the attacker's own endpoint, in psid's namespace */
    CU_ASSERT_EQUAL(req(&att, PSM_PL_OPEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why), 0);
    struct lookalike la; /* every one of its sockets is passed (and closed) below */
    if (private_lookalike(port, local_port(cfd), &la) == 0) {
        /* an endpoint in the private namespace: not served (this core has no privileged
         * child to vouch for any namespace but its own) */
        CU_ASSERT_EQUAL(req(&att2, PSM_PL_OPEN, la.udp, NULL, 0, 0, 0, why, sizeof why), EPERM);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "does not serve"));
        /* a listener and the look-alike from there: not the endpoint's namespace */
        CU_ASSERT_EQUAL(req(&att, PSM_PL_LISTEN, la.lis, NULL, 0, 0, 0, why, sizeof why), EXDEV);
        CU_ASSERT_EQUAL(claim(&att, dup_fd(la.acc), &n, why, sizeof why), EXDEV);
        CU_ASSERT_EQUAL(n, 0);
        /* declined by someone holding the look-alike: not served either */
        CU_ASSERT_EQUAL(req(&att2, PSM_PL_DECLINE, la.acc, NULL, 0, 0, 0, why, sizeof why), EPERM);
    }
    /* a socket of psid's namespace with another 4-tuple: nothing negotiated for it */
    unsigned p2 = 0;
    int l2 = listener_on("127.0.0.3", &p2), c2, a2;
    connection(l2, "127.0.0.1", 0, "127.0.0.3", p2, &c2, &a2);
    CU_ASSERT_EQUAL(claim(&att, a2, &n, why, sizeof why), ENOENT);
    CU_ASSERT_EQUAL(n, 0);
    /* the wrong kinds of descriptor */
    CU_ASSERT_EQUAL(claim(&att, udp_on("127.0.0.1"), &n, why, sizeof why), ENOTSOCK);
    CU_ASSERT_EQUAL(claim(&att, dup_fd(l2), &n, why, sizeof why), ENOTCONN);
    CU_ASSERT_EQUAL(claim(&att, -1, &n, why, sizeof why), EBADF);
    int pp[2];
    CU_ASSERT_EQUAL_FATAL(pipe2(pp, O_CLOEXEC), 0);
    close(pp[1]);
    CU_ASSERT_EQUAL(claim(&att, pp[0], &n, why, sizeof why), ENOTSOCK);
    CU_ASSERT_EQUAL(req(&att, PSM_PL_LISTEN, dup_fd(c2), NULL, 0, 0, 0, why, sizeof why), EINVAL);
    CU_ASSERT_EQUAL(req(&att, PSM_PL_LISTEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why),
                    ENOTSOCK);
    /* a connect with the look-alike's connector would be another namespace's too */

    /* the victim, its own accepted socket: the channel, and the connector its end */
    CU_ASSERT_EQUAL(claim(&victim, dup_fd(afd), &n, why, sizeof why), 0);
    CU_ASSERT_EQUAL(n, 2);
    int cn;
    CU_ASSERT_EQUAL(outcome(&conn, &cn), 0);
    CU_ASSERT_EQUAL(cn, 2);

    close(c2);
    close(l2);
    close(cfd);
    close(afd);
    close(lfd);
    psi_close(&victim);
    psi_close(&conn);
    psi_close(&att);
    psi_close(&att2);
    core_down(&k);
}

/* A same-node-only endpoint listening on another local address (127.0.0.9) at the victim's
 * port takes nothing from the victim's listener on 127.0.0.1. */
static void test_squat(void)
{
    struct core k;
    core_up(&k);
    struct psi victim, conn, att;
    client(&k, &victim);
    client(&k, &conn);
    client(&k, &att);
    char why[200];
    unsigned port = 0;
    int lfd = listener_on("127.0.0.1", &port);
    unsigned sport = port;
    int sq = listener_on("127.0.0.9", &sport);
    CU_ASSERT_EQUAL(req(&att, PSM_PL_OPEN, udp_on("127.0.0.9"), NULL, 0, 0, 1, why, sizeof why), 0);
    CU_ASSERT_EQUAL(req(&att, PSM_PL_LISTEN, dup_fd(sq), NULL, 0, 0, 0, why, sizeof why), 0);
    CU_ASSERT_EQUAL(req(&victim, PSM_PL_OPEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why),
                    0);
    CU_ASSERT_EQUAL(req(&victim, PSM_PL_LISTEN, dup_fd(lfd), NULL, 0, 0, 0, why, sizeof why), 0);
    CU_ASSERT_EQUAL(req(&conn, PSM_PL_OPEN, udp_on("127.0.0.1"), NULL, 0, 0, 0, why, sizeof why),
                    0);
    int cfd, afd, n;
    connection(lfd, "127.0.0.1", 0, "127.0.0.1", port, &cfd, &afd);
    CU_ASSERT_EQUAL(
        req(&conn, PSM_PL_CONNECT, dup_fd(cfd), "127.0.0.1", port, 1, 0, why, sizeof why), 0);
    CU_ASSERT_EQUAL(claim(&victim, dup_fd(afd), &n, why, sizeof why), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(outcome(&conn, &n), 0);
    /* a connection to the squatter's own address is the squatter's */
    int c2, a2;
    connection(sq, "127.0.0.1", 0, "127.0.0.9", port, &c2, &a2);
    CU_ASSERT_EQUAL(
        req(&conn, PSM_PL_CONNECT, dup_fd(c2), "127.0.0.9", port, 1, 0, why, sizeof why), 0);
    CU_ASSERT_EQUAL(claim(&att, dup_fd(a2), &n, why, sizeof why), 0);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(outcome(&conn, &n), 0);
    close(c2);
    close(a2);
    close(cfd);
    close(afd);
    close(sq);
    close(lfd);
    psi_close(&victim);
    psi_close(&conn);
    psi_close(&att);
    core_down(&k);
}

UNIT_SUITE(preload_claim, UNIT_TEST(test_claims), UNIT_TEST(test_squat));
