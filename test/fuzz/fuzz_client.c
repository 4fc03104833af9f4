/*
 * fuzz_client.c - libFuzzer target for psid's client side as a state machine: up to eight
 * local connections to a real psid core (client.c and every module a request reaches),
 * opened, fed raw bytes or well-formed requests built from the input, half-closed, closed
 * and left unread in any order, with the event loop run one round at a time in between
 * (loop_once). The client that fails while a module sends to it, the one that closes in
 * the middle of a frame, the one that never reads: none may crash psid, leak, or trip the
 * sanitizers (the double free of the hardening issue's point 1 was one such order).
 *
 * Requests held back (issue 29, point 2): a connection may send a burst of PSM_NODES whose
 * replies it does not read, past what psid lets wait before it stops handling requests,
 * with any request behind them; node 1 may come up and be lost, and may answer and fire
 * notifications (PSM_D_NOTIFY_REPLY, PSM_D_DEAD handed to psid_dispatch as RDP would),
 * about a few task ids the requests name too. Before, a notification's send could handle
 * the held requests inside the walk that fired it.
 *
 * The preload's requests carry, as the input chooses, one of a fixed set of descriptors made
 * at start: UDP sockets of the node's address and of another, listening, connecting and
 * accepted TCP sockets, the same kinds made in a private user and network namespace (where
 * any 4-tuple can be had: the look-alike of a connection of psid's namespace), a pipe and a
 * UNIX socket, so that every check of what the kernel says of a passed socket is reached.
 *
 * The cluster is this process's psid for node 0 of two nodes, both seen down at start
 * (node 1 comes up only by the input's choice, node 0 never), so that no request forks or
 * signals anything; its RDP endpoint and client socket are real, on loopback and in a
 * temporary directory.
 */
#include "../../psid/daemon.h"
#include "../../psid/log.h"
#include "../lib/fdpass.h"
#include "psmsg.h"
#include "pscpus.h"
#include "psproto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCONN 8

static struct psid d;
static struct sockaddr_un sock;
static char dir[] = "/tmp/psfuzzXXXXXX";

/* The descriptors a preload request may carry (-1 where one could not be made). */
#define NPASS 12
static int pass[NPASS];

static struct sockaddr_in sin4(const char *addr, unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    return a;
}

/* Into f[0..5): UDP on 127.0.0.1 and on 127.0.0.9, a listener on 127.0.0.1:P, a listener on
 * 127.0.0.9:P, a connector to the first and its accepted end. Returns P. */
static unsigned make_sockets(int *f, unsigned port)
{
    struct sockaddr_in u1 = sin4("127.0.0.1", 0), u9 = sin4("127.0.0.9", 0),
                       l1 = sin4("127.0.0.1", port), l9 = sin4("127.0.0.9", port);
    socklen_t sl = sizeof l1;
    int one = 1;
    for (int i = 0; i < 6; i++) f[i] = -1;
    f[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    f[1] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    f[2] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    f[3] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    f[4] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(f[2], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(f[3], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bind(f[0], (struct sockaddr *)&u1, sizeof u1);
    bind(f[1], (struct sockaddr *)&u9, sizeof u9);
    if (bind(f[2], (struct sockaddr *)&l1, sizeof l1) == 0 && listen(f[2], 8) == 0 &&
        getsockname(f[2], (struct sockaddr *)&l1, &sl) == 0) {
        port = ntohs(l1.sin_port);
        l9.sin_port = l1.sin_port;
        if (bind(f[3], (struct sockaddr *)&l9, sizeof l9) == 0) listen(f[3], 8);
        if (connect(f[4], (struct sockaddr *)&l1, sizeof l1) == 0)
            f[5] = accept4(f[2], NULL, NULL, SOCK_CLOEXEC);
    }
    return port;
}

/* The same kinds in a private user and network namespace, made by a child and sent back:
 * into f[0..3) a UDP socket on 127.0.0.1, a listener on 127.0.0.1:port and the accepted end
 * of a look-alike of connection (cport -> port). */
static void private_sockets(int *f, unsigned port, unsigned cport)
{
    int sv[2];
    f[0] = f[1] = f[2] = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        if (unshare(geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET) < 0) _exit(1);
        struct ifreq ifr = {0};
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        int s = socket(AF_INET, SOCK_DGRAM, 0), one = 1, t[6];
        if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
            (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr)) < 0)
            _exit(1);
        make_sockets(t, port);
        struct sockaddr_in c = sin4("127.0.0.1", cport), l = sin4("127.0.0.1", port);
        int cfd = socket(AF_INET, SOCK_STREAM, 0), afd;
        setsockopt(cfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(cfd, (struct sockaddr *)&c, sizeof c) < 0 ||
            connect(cfd, (struct sockaddr *)&l, sizeof l) < 0 ||
            (afd = accept(t[2], NULL, NULL)) < 0)
            _exit(1);
        int out[3] = {t[0], t[2], afd};
        char b = 'x';
        fdpass_send(sv[1], &b, 1, out, 3, 0);
        (void)!read(sv[1], &b, 1);
        _exit(0);
    }
    close(sv[1]);
    int got[3];
    if (pid > 0 && fdpass_recv(sv[0], got, 3) == 0) memcpy(f, got, sizeof got);
    close(sv[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
}

static void make_passable(void)
{
    unsigned port = make_sockets(pass, 0);
    struct sockaddr_in c;
    socklen_t cl = sizeof c;
    unsigned cport = getsockname(pass[4], (struct sockaddr *)&c, &cl) == 0 ? ntohs(c.sin_port) : 0;
    private_sockets(pass + 6, port, cport);
    int pp[2];
    pass[9] = pass[10] = -1;
    if (pipe2(pp, O_CLOEXEC) == 0) {
        pass[9] = pp[0];
        close(pp[1]);
    }
    pass[10] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pass[11] = -1; /* none */
}

/* At exit: the daemon's socket and the temporary configuration go. */
static void cleanup(void)
{
    char path[256];
    clients_stop(&d);
    for (int i = 0; i < NPASS; i++)
        if (pass[i] >= 0) close(pass[i]);
    static const char *const files[] = {"key", "psid.conf", "psid-0.sock"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char path[256], err[512];
    if (!mkdtemp(dir)) abort();
    atexit(cleanup);
    snprintf(path, sizeof path, "%s/key", dir);
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs("fuzz key fuzz key fuzz key fuzz key", f);
    fclose(f);
    chmod(path, 0600);
    unsigned port = 30000 + (unsigned)getpid() % 20000;
    snprintf(path, sizeof path, "%s/psid.conf", dir);
    if (!(f = fopen(path, "w"))) abort();
    fprintf(f,
            "cluster = \"fuzz\";\nkey_file = \"%s/key\";\nlog_level = \"error\";\n"
            "rdp = { port = %u; };\nheartbeat = { mode = \"unicast\"; port = %u; };\n"
            "psid = { socket = \"%s/psid-%%n.sock\"; max_clients_per_uid = 16; "
            "client_idle_s = 0; };\n"
            "nodes = ( { id = 0; name = \"n0\"; address = \"127.0.0.1\"; },\n"
            "          { id = 1; name = \"n1\"; address = \"127.0.0.2\"; } );\n",
            dir, port, port + 1, dir);
    fclose(f);
    if (psconf_load(path, &d.conf, err, sizeof err) < 0) {
        fprintf(stderr, "fuzz_client: %s\n", err);
        abort();
    }
    log_open(PSCONF_LOG_ERROR, 0, "fuzz");
    d.self = psconf_node_lookup(&d.conf, "0");
    d.incarnation = 1;
    d.hb_fd = d.sig_fd = -1;
    d.loop = loop_new();
    d.nodes = calloc(d.conf.nnodes, sizeof *d.nodes);
    if (!d.self || !d.loop || !d.nodes) abort();
    for (size_t i = 0; i < d.conf.nnodes; i++) d.nodes[i].conf = &d.conf.nodes[i]; /* down */
    if (rdplink_start(&d) < 0 || clients_start(&d) < 0) abort();
    sock.sun_family = AF_UNIX;
    snprintf(sock.sun_path, sizeof sock.sun_path, "%s/psid-0.sock", dir);
    make_passable();
    return 0;
}

/* Input bytes, taken from the front; 0 when they run out. */
struct in {
    const uint8_t *p;
    size_t n;
};

static uint8_t take(struct in *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static uint32_t take32(struct in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | take(in);
    return v;
}

/* A well-formed request of a type psid knows, its fields from the input; *fd: a descriptor
 * to pass with it, or -1. */
static void request(struct in *in, struct psmsg_buf *b, int *fd)
{
    static const uint16_t types[] = {
        PSM_NODES,      PSM_SPAWN,     PSM_IO_ACK,     PSM_INPUT,    PSM_SIGNAL,    PSM_TASKS,
        PSM_NOTIFY,     PSM_RELEASE,   PSM_RDP,        PSM_PL_OPEN,  PSM_PL_LISTEN, PSM_PL_UNLISTEN,
        PSM_PL_CONNECT, PSM_PL_ACCEPT, PSM_PL_DECLINE, PSM_SPAWN_GO, PSM_JOBS_DONE};
    uint16_t type = types[take(in) % (sizeof types / sizeof types[0])];
    *fd = type >= PSM_PL_OPEN ? pass[take(in) % NPASS] : -1;
    psmsg_begin(b, type, take32(in));
    uint64_t tid = PSTID(take(in) % 3, take32(in));
    switch (type) {
    case PSM_SPAWN:
        psmsg_put_str(b, PSF_ARG, "/bin/true");
        psmsg_put_u32(b, PSF_NP, take(in) % 4 + 1);
        if (take(in) & 1) psmsg_put_u32(b, PSF_NODE_ID, take(in) % 3);
        if (take(in) & 1) psmsg_put_u32(b, PSF_HOLD, 1); /* then a PSM_SPAWN_GO, or none */
        if (take(in) & 1) { /* -c, --cpu-bind, --mem, --output-on-node: checked at the home */
            static const char *const maps[] = {"0,1", "0x3,c", "1*2", "", "x", "4096"};
            static const char *const pats[] = {"o-%t", "o-%q", "", "%N-%n-%j"};
            psmsg_put_u32(b, PSF_CPUS_PER_TASK, take(in) % 5);
            psmsg_put_u32(b, PSF_CPU_BIND, take(in) % 7 | (take(in) & 1 ? PSBIND_VERBOSE : 0));
            if (take(in) & 1) psmsg_put_str(b, PSF_CPU_MAP, maps[take(in) % 6]);
            if (take(in) & 1) psmsg_put_u64(b, PSF_MEM, take(in));
            if (take(in) & 1) psmsg_put_u64(b, PSF_MEM_PER_CPU, take(in));
            if (take(in) & 1) psmsg_put_str(b, PSF_OUT_PATTERN, pats[take(in) % 4]);
            if (take(in) & 1) psmsg_put_str(b, PSF_ERR_PATTERN, pats[take(in) % 4]);
        }
        break;
    case PSM_SPAWN_GO: /* the job ids psid hands out start from its incarnation: mostly none */
        psmsg_put_u64(b, PSF_JOB, take(in) & 1 ? tid : PSTID(0, d.next_job - 1));
        break;
    case PSM_IO_ACK:
    case PSM_INPUT:
        psmsg_put_u32(b, PSF_RANK, take(in) % 4);
        psmsg_put_u64(b, PSF_BYTES, take32(in));
        psmsg_put_bytes(b, PSF_DATA, "x", take(in) & 1);
        break;
    case PSM_SIGNAL:
        psmsg_put_u64(b, take(in) & 1 ? PSF_TID : PSF_JOB, tid);
        psmsg_put_u32(b, PSF_SIGNAL, 0); /* never a real signal */
        break;
    case PSM_NOTIFY:
    case PSM_RELEASE: /* a few task ids, which node 1's messages name too */
        psmsg_put_u64(b, PSF_TID, PSTID(take(in) % 3, take(in) % 4 + 1u));
        psmsg_put_u32(b, PSF_SIGNAL, take(in) % 70);
        break;
    case PSM_PL_OPEN:
    case PSM_PL_LISTEN:
    case PSM_PL_UNLISTEN:
        psmsg_put_u32(b, PSF_PORT, take32(in) % 70000);
        break;
    case PSM_PL_CONNECT:
    case PSM_PL_ACCEPT:
    case PSM_PL_DECLINE: {
        static const char *const addrs[] = {"127.0.0.2", "127.0.0.1", "127.0.0.9", "::1", "x"};
        psmsg_put_str(b, PSF_ADDR, addrs[take(in) % 5]);
        psmsg_put_u32(b, PSF_PORT, take32(in) % 70000);
        psmsg_put_u32(b, PSF_SRC_PORT, take32(in) % 70000);
        psmsg_put_u32(b, PSF_CONN, take(in));
        psmsg_put_u32(b, PSF_TAG, take(in));
        if (take(in) & 1) psmsg_put_u32(b, PSF_SAME_NODE, take(in) % 3);
        if (take(in) & 1) psmsg_put_u32(b, PSF_SHM_RING, 1u << (take(in) % 26));
        break;
    }
    }
    if (type == PSM_PL_OPEN && (take(in) & 1)) psmsg_put_u32(b, PSF_SAME_NODE, 1);
}

/* A daemon message from node 1 about one of the task ids requests name: a notification
 * confirmed (or refused), or fired. */
static void from_node1(struct in *in)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    uint8_t what = take(in);
    psmsg_begin(&b, what & 1 ? PSM_D_DEAD : PSM_D_NOTIFY_REPLY, 0);
    psmsg_put_u64(&b, PSF_TID, PSTID(1, take(in) % 4 + 1u));
    psmsg_put_u32(&b, PSF_REQ, d.next_req - take(in) % 4);
    psmsg_put_u32(&b, PSF_ERRNO, what & 2 ? ESRCH : 0);
    psmsg_put_u64(&b, PSF_WATCHER, PSTID(0, (uint32_t)getpid())); /* every connection's */
    psmsg_put_u32(&b, PSF_STATUS, take(in));
    if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &m) == 0) psid_dispatch(&d, 1, &m);
    psmsg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd[NCONN];
    for (int i = 0; i < NCONN; i++) fd[i] = -1;
    struct in in = {data, size};
    uint8_t buf[4096];
    while (in.n) {
        uint8_t op = take(&in);
        int k = (op >> 3) % NCONN;
        switch (op % 10) {
        case 0: /* connect */
            if (fd[k] >= 0) break;
            fd[k] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd[k] >= 0 && connect(fd[k], (struct sockaddr *)&sock, sizeof sock) < 0) {
                close(fd[k]);
                fd[k] = -1;
            }
            break;
        case 1: { /* raw bytes: partial and malformed frames */
            size_t n = (size_t)take(&in) * 4;
            if (n > in.n) n = in.n;
            if (fd[k] >= 0) (void)!send(fd[k], in.p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            in.p += n;
            in.n -= n;
            break;
        }
        case 2: { /* a well-formed request */
            struct psmsg_buf b = {0};
            int pfd;
            request(&in, &b, &pfd);
            if (fd[k] >= 0 && psmsg_end(&b) == 0)
                fdpass_send(fd[k], b.data, b.len, &pfd, pfd >= 0, MSG_DONTWAIT | MSG_NOSIGNAL);
            psmsg_buf_free(&b);
            break;
        }
        case 3: /* half-close either way */
            if (fd[k] >= 0) shutdown(fd[k], take(&in) & 1 ? SHUT_RD : SHUT_WR);
            break;
        case 4: /* close */
            if (fd[k] >= 0) close(fd[k]);
            fd[k] = -1;
            break;
        case 5: /* read what came */
            if (fd[k] >= 0) (void)!recv(fd[k], buf, sizeof buf, MSG_DONTWAIT);
            break;
        case 6: { /* a burst of PSM_NODES it does not read, and a request held behind them */
            unsigned n = (unsigned)take(&in) * 16u;
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_NODES, 0);
            size_t one = psmsg_end(&b) == 0 ? b.len : 0, len = n * one;
            uint8_t *all = malloc(len + PSMSG_MAX);
            for (unsigned i = 0; all && i < n; i++) memcpy(all + i * one, b.data, one);
            psmsg_buf_free(&b);
            int pfd;
            request(&in, &b, &pfd);
            if (all && psmsg_end(&b) == 0) {
                memcpy(all + len, b.data, b.len);
                len += b.len;
            }
            psmsg_buf_free(&b);
            /* psid reads meanwhile, until it holds the rest back: then the rest stays unsent */
            for (size_t off = 0, tries = 0; all && fd[k] >= 0 && off < len && tries < 64;) {
                ssize_t w = send(fd[k], all + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w > 0) {
                    off += (size_t)w;
                } else if (w < 0 && errno == EAGAIN) {
                    loop_once(d.loop);
                    tries++;
                } else {
                    break;
                }
            }
            free(all);
            break;
        }
        case 7: /* node 1 comes up, or is lost (its notifications fire with "lost") */
            if (take(&in) & 1)
                d.nodes[1].state = PSNODE_UP;
            else
                membership_rdp_lost(&d, 1, RDP_LOST_TIMEOUT);
            break;
        case 8: /* node 1 answers or fires a notification */
            from_node1(&in);
            break;
        default: /* psid's turn */
            loop_once(d.loop);
        }
    }
    loop_once(d.loop);
    for (int i = 0; i < NCONN; i++)
        if (fd[i] >= 0) close(fd[i]);
    for (int i = 0; i < 4; i++) loop_once(d.loop); /* every client seen gone and freed */
    return 0;
}
