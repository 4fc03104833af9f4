/*
 * state.c - the preload library's process-wide state (psp.h): set-up from the environment,
 * the RDP endpoint and the progress thread, hidden descriptors, fork, exit and statistics.
 *
 *  - Nothing happens at load time beyond reading the environment: the psid connection is
 *    made at the first TCP connect or listen to an IPv4/IPv6 address (psp_ready), the RDP
 *    endpoint and the progress thread at the first connection that needs them
 *    (psp_endpoint). A process without a psid (or with PSP_DISABLE=1) passes everything
 *    through.
 *  - The progress thread sleeps in epoll on the RDP socket, RDP's timer, the psid
 *    connection, a wake-up eventfd and every accelerated connection's kernel socket (the
 *    guard: its EOF or reset is how a crashed peer process shows). It runs rdp_process, so
 *    acknowledgements and retransmissions go on while the program computes.
 *  - Our descriptors are "hidden": moved to psp.hidden_base or above, close-on-exec, and
 *    marked in the descriptor table (fdtable.c); the program cannot close or replace them
 *    (close gives EBADF, dup2 onto one EBUSY, close_range and closefrom skip them).
 *  - Exit: connections the program left open are closed as the kernel would (CLOSE to the
 *    peer), and the process waits, at most PSP_EXIT_WAIT_MS, until RDP has delivered what
 *    it queued, since unlike the kernel's socket buffers ours end with the process.
 */
#include "psp.h"
#include "psshm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

extern __thread int psp_in;

#define PSP_EXIT_WAIT_MS  5000
#define PSP_RULES_DEFAULT "/etc/pscluster/preload.rules"
#define PSP_WINDOW        (1u << 20) /* per-connection credit */
#define PSP_SHM_RING      (1u << 20) /* same node: ring bytes per direction (the window) */
#define PSP_SHM_SPIN_US   20u        /* same node: a wait spins at most this long first */
/* RDP's delayed ACK for a process's endpoint: a request/response program answers within a
 * millisecond, and the answer carries the ACK. RDP's default (100 us) made an ACK of its
 * own, and a wake-up of the progress thread, for most requests of redis-benchmark -c 50
 * (GET 54k/s against 75k/s with 1 ms, same run; 70-76k against 92-98k in a later one).
 * RDP holds back the ACK of a stream's fragments 100 us at most whatever this says, and
 * takes our credits for no answers (docs/rdp-protocol.md, "Acknowledgements"). */
#define PSP_ACK_DELAY_US     1000u
#define PSP_BUSY_POLL_MAX_US 10000u /* PSP_BUSY_POLL's bound: 10 ms of spinning per wait */
/* A peer process silent past RDP's loss bound (stopped, say) is probed at intervals that
 * back off up to this (RDP's persist; alive.c tells a stopped peer from a dead one): a
 * probe a second costs nothing, and a peer whose socket lost what came while it stopped
 * hears the next one within a second of running again. */
#define PSP_PERSIST_MAX_US 1000000u
/* A connection negotiates once it lived this long (PSP_UPGRADE_US; 0: at its connect and
 * its accept's first use): one that ends sooner never asks psid. The negotiation costs both
 * psids and both processes work worth several kernel connections' (bench/RESULTS.md 8.7),
 * which a connection that exchanges one request does not earn back. */
#define PSP_UPGRADE_US     1000u
#define PSP_UPGRADE_MAX_US 10000000u
#define TAG_RDP            1u
#define TAG_TIMER          2u
#define TAG_WAKE           3u
#define TAG_DEAF           5u
/* The progress thread listens to the RDP socket again once no program thread has waited on
 * it for this long (psp_poller_leave): half RDP's least retransmission timeout (2 ms), so
 * that an ACK held back by it does not make the peer send again. Against 200 us, between
 * two loopback nodes: one iperf3 stream 20.1 against 13.5 Gbit/s, redis-benchmark -c 50
 * GET 44.7k against 33.9k/s (bench/preload-ab.sh, medians of 5; bench/RESULTS.md 8.8). */
#define PSP_DEAF_US 1000u
#define TAG_PSI     PSP_TAG_PSI
#define TAG_GUARD   16u /* + the guard's descriptor */

struct psp psp = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .psi_lock = PTHREAD_MUTEX_INITIALIZER,
    .epfd = -1,
    .timerfd = -1,
    .wakefd = -1,
    .deaf_tfd = -1,
    .kick_fd = -1,
    .direct_gone = PTHREAD_COND_INITIALIZER,
    .armed = UINT64_MAX,
};

struct psp_rule {
    bool deny;
    int family;
    uint8_t addr[16];
    unsigned prefix;
    uint16_t lo, hi;
};

static int parse_rules(const char *spec, const char *where)
{
    char *s = strdup(spec), *save = NULL, *t;
    if (!s) return -1;
    for (t = strtok_r(s, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        struct psp_rule r = {.lo = 0, .hi = 65535};
        if (*t == '!') {
            r.deny = true;
            t++;
        }
        char *port = NULL;
        if (*t == '[') { /* [v6]:port */
            char *e = strchr(t, ']');
            if (!e) goto bad;
            *e = 0;
            if (e[1] == ':') port = e + 2;
            t++;
        } else if (strchr(t, ':') == strrchr(t, ':')) {
            port = strchr(t, ':');
            if (port) *port++ = 0;
        }
        char *slash = strchr(t, '/');
        if (slash) *slash++ = 0;
        if (inet_pton(AF_INET, t, r.addr) == 1) {
            r.family = AF_INET;
            r.prefix = 32;
        } else if (inet_pton(AF_INET6, t, r.addr) == 1) {
            r.family = AF_INET6;
            r.prefix = 128;
        } else {
            goto bad;
        }
        if (slash) {
            char *e;
            unsigned long p = strtoul(slash, &e, 10);
            if (*e || p > r.prefix) goto bad;
            r.prefix = (unsigned)p;
        }
        if (port) {
            char *e;
            unsigned long lo = strtoul(port, &e, 10), hi = lo;
            if (*e == '-') hi = strtoul(e + 1, &e, 10);
            if (*e || lo > hi || hi > 65535) goto bad;
            r.lo = (uint16_t)lo;
            r.hi = (uint16_t)hi;
        }
        struct psp_rule *n = realloc(psp.rules, (psp.nrules + 1) * sizeof *n);
        if (!n) goto bad;
        psp.rules = n;
        psp.rules[psp.nrules++] = r;
    }
    free(s);
    return 0;
bad:
    fprintf(stderr, "pspreload: %s: bad rule near '%s': the library is off\n", where, t);
    free(s);
    return -1;
}

/* The rules file: one rule list a line, '#' starts a comment. A file that is not there is
 * no rule (unless named by PSP_RULES_FILE); a bad line names file:line and turns the
 * library off, as a bad PSP_RULES does. */
static int read_rules_file(const char *path, bool named)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        if (!named && errno == ENOENT) return 0;
        fprintf(stderr, "pspreload: %s: %s: the library is off\n", path, strerror(errno));
        return -1;
    }
    char line[1024], where[PATH_MAX + 32];
    int n = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        n++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        line[strcspn(line, "\n")] = 0;
        if (!line[strspn(line, " \t,")]) continue;
        snprintf(where, sizeof where, "%s:%d", path, n);
        rc = parse_rules(line, where);
    }
    fclose(f);
    return rc;
}

bool psp_rules_allow(const struct sockaddr *sa)
{
    const uint8_t *a;
    uint16_t port;
    int fam = sa->sa_family;
    if (fam == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        a = (const uint8_t *)&in->sin_addr;
        port = ntohs(in->sin_port);
    } else {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        a = in6->sin6_addr.s6_addr;
        port = ntohs(in6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            fam = AF_INET;
            a += 12;
        }
    }
    for (unsigned i = 0; i < psp.nrules; i++) {
        const struct psp_rule *r = &psp.rules[i];
        if (r->family != fam || port < r->lo || port > r->hi) continue;
        unsigned bits = r->prefix, k = 0;
        for (; bits >= 8; bits -= 8, k++)
            if (a[k] != r->addr[k]) break;
        if (bits >= 8) continue;
        if (bits && (a[k] ^ r->addr[k]) & (0xff00 >> bits)) continue;
        return !r->deny;
    }
    return true;
}

void psp_print_stats(void)
{
    if (!psp.stats || !*psp.stats || psp.pid != getpid()) return;
    uint64_t tcp = 0;
    for (int i = 0; i < PSP_R__COUNT; i++) tcp += psp.stats_tcp[i];
    if (!psp.accelerated && !tcp && !psp.inited) return;
    /* datagrams RDP dropped (forged, replayed, unknown sender, ...), and of them those whose
     * MAC did not verify; the library's own malformed messages; and the moves of a
     * connection's state the lifecycle's table does not list (lifecycle.c) */
    uint64_t dropped = 0, bad_mac = 0, retrans = 0;
    pthread_mutex_lock(&psp.lock);
    if (psp.rdp) {
        struct rdp_stats rs;
        rdp_stats(psp.rdp, &rs);
        retrans = rs.retransmits;
        for (int i = 0; i < RDP_DROP__COUNT; i++)
            if (i != RDP_DROP_DUPLICATE) dropped += rs.drops[i]; /* duplicates are normal */
        bad_mac = rs.drops[RDP_DROP_MAC];
    }
    char line[1024]; /* (the counters as of one moment: under the lock) */
    int n = snprintf(
        line, sizeof line,
        "pspreload: pid=%d accelerated=%llu tcp=%llu not_cluster=%llu "
        "no_library=%llu not_accepted=%llu same_node=%llu rule=%llu limit=%llu "
        "error=%llu short=%llu rdp_tx_bytes=%llu rdp_rx_bytes=%llu tcp_tx_bytes=%llu "
        "tcp_rx_bytes=%llu rdp_tx_msgs=%llu rdp_rx_msgs=%llu tcp_tx_msgs=%llu tcp_rx_msgs=%llu "
        "rdp_dropped=%llu rdp_bad_mac=%llu bad_msgs=%llu bad_transitions=%llu switched=%llu "
        "shm=%llu shm_tx_bytes=%llu shm_rx_bytes=%llu shm_tx_msgs=%llu rdp_retransmits=%llu "
        "shm_bells=%llu rdp_sleeps=%llu spin_samples=%llu spin_skipped=%llu\n",
        (int)getpid(), (unsigned long long)psp.accelerated, (unsigned long long)tcp,
        (unsigned long long)psp.stats_tcp[PSP_R_NOT_CLUSTER],
        (unsigned long long)psp.stats_tcp[PSP_R_NO_LIBRARY],
        (unsigned long long)psp.stats_tcp[PSP_R_NOT_ACCEPTED],
        (unsigned long long)psp.stats_tcp[PSP_R_SAME_NODE],
        (unsigned long long)psp.stats_tcp[PSP_R_RULE],
        (unsigned long long)psp.stats_tcp[PSP_R_LIMIT],
        (unsigned long long)psp.stats_tcp[PSP_R_ERROR],
        (unsigned long long)psp.stats_tcp[PSP_R_SHORT], (unsigned long long)psp.rdp_tx,
        (unsigned long long)psp.rdp_rx, (unsigned long long)psp.tcp_tx,
        (unsigned long long)psp.tcp_rx, (unsigned long long)psp.rdp_tx_msgs,
        (unsigned long long)psp.rdp_rx_msgs, (unsigned long long)psp.tcp_tx_msgs,
        (unsigned long long)psp.tcp_rx_msgs, (unsigned long long)dropped,
        (unsigned long long)bad_mac, (unsigned long long)psp.bad_msgs,
        (unsigned long long)psp.bad_transitions, (unsigned long long)psp.switched,
        (unsigned long long)psp.shm_conns, (unsigned long long)psp.shm_tx,
        (unsigned long long)psp.shm_rx, (unsigned long long)psp.shm_tx_msgs,
        (unsigned long long)retrans,
        (unsigned long long)__atomic_load_n(&psp.shm_bells, __ATOMIC_RELAXED),
        (unsigned long long)psp.rdp_sleeps,
        (unsigned long long)__atomic_load_n(&psp.spin_samples, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&psp.spin_skipped, __ATOMIC_RELAXED));
    pthread_mutex_unlock(&psp.lock);
    if (n <= 0) return;
    if (!strcmp(psp.stats, "1")) {
        (void)!real.write(2, line, (size_t)n);
        return;
    }
    int fd = open(psp.stats, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    (void)!real.write(fd, line, (size_t)n);
    real.close(fd);
}

void psp_count_tcp(enum psp_reason r)
{
    psp.stats_tcp[r]++;
}

/* psp.lock, or false: _exit may come from a signal handler that interrupted its holder,
 * so there it is only tried (for at most 100 ms). */
static bool exit_lock(bool may_block)
{
    if (may_block) return pthread_mutex_lock(&psp.lock) == 0;
    for (int i = 0; i < 100; i++) {
        if (pthread_mutex_trylock(&psp.lock) == 0) return true;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static bool exited; /* the exit wait ran (exit, or _exit) */

/* Connections the program left open end as the kernel would end them at exit; then wait
 * until RDP delivered what is queued (bounded). */
static void exit_wait(bool may_block)
{
    if (psp.pid != getpid() || exited) return;
    exited = true;
    if (psp.rdp) {
        if (!exit_lock(may_block)) return;
        for (int fd = 0, top = fdt_top(); fd < top; fd++)
            if (psp_conn_of(fd)) conn_detach(fd);
        for (struct conn *c = psp.all; c; c = c->lnext)
            if (cs_tcp_phase(c->st) && !c->counted) {
                /* it ends before its negotiation, or its answer */
                c->counted = true;
                psp_count_tcp(psp_short_reason(c));
            }
        uint64_t until = rdp_now_ns() + PSP_EXIT_WAIT_MS * 1000000ull;
        for (;;) {
            bool busy = false;
            for (struct conn *c = psp.all; c && !busy; c = c->lnext) {
                struct rdp_peer_stats st;
                if (c->st == CS_RDP && rdp_peer_stats(psp.rdp, c->peer, &st) == 0 &&
                    st.state == RDP_ESTABLISHED && st.queued)
                    busy = true;
                if (c->st == CS_DRAIN) busy = true; /* bytes the program wrote, for TCP */
            }
            if (!busy || rdp_now_ns() > until) break;
            pthread_mutex_unlock(&psp.lock);
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
            if (!exit_lock(may_block)) return;
        }
        pthread_mutex_unlock(&psp.lock);
    }
    psp_print_stats();
}

static void psp_exit(void)
{
    exit_wait(true);
}

/* _exit and _Exit end the process without atexit handlers; the kernel would still deliver
 * what the program wrote to its sockets, so the library's buffers are delivered first, as
 * at exit (a forked child's _exit, or a vfork child's, is not ours: it passes through). */
void _exit(int status)
{
    if (psp.inited && !psp.disabled && !psp.broken) exit_wait(false);
    for (;;) syscall(SYS_exit_group, status);
}
void _Exit(int status) __attribute__((alias("_exit")));

__attribute__((constructor)) static void psp_ctor(void)
{
    real_init();
    psp.pid = getpid();
    const char *v = getenv("PSP_DISABLE");
    psp.disabled = v && *v && strcmp(v, "0");
    v = getenv("PSP_STRICT");
    psp.strict = v && *v && strcmp(v, "0");
    v = getenv("PSP_SYNC"); /* the first use of a connection waits for its negotiation */
    psp.sync = psp.strict || (v && *v && strcmp(v, "0"));
    v = getenv("PSP_UPGRADE_US"); /* a connection's age when its negotiation starts */
    unsigned long up = v && *v ? strtoul(v, NULL, 10) : PSP_UPGRADE_US;
    psp.upgrade_ns = (up > PSP_UPGRADE_MAX_US ? PSP_UPGRADE_MAX_US : up) * 1000ull;
    v = getenv("PSP_STATS");
    if (v && *v && strcmp(v, "0")) psp.stats = strdup(v);
    /* rules: the environment's first (a user's own), then the node's file */
    v = getenv("PSP_RULES");
    if (v && *v && parse_rules(v, "PSP_RULES") < 0) psp.disabled = true;
    v = getenv("PSP_RULES_FILE");
    if (!psp.disabled && read_rules_file(v && *v ? v : PSP_RULES_DEFAULT, v && *v) < 0)
        psp.disabled = true;
    v = getenv("PSP_BUSY_POLL"); /* microseconds a wait may spin first; bounded */
    if (v) {
        unsigned long us = strtoul(v, NULL, 10);
        psp.busy_poll_us = us > PSP_BUSY_POLL_MAX_US ? PSP_BUSY_POLL_MAX_US : (unsigned)us;
    }
    v = getenv("PSP_DIRECT_WAIT"); /* 0: a waiting thread never sleeps in the RDP read */
    psp.direct_off = v && !strcmp(v, "0");
    psp.window = PSP_WINDOW;
    /* the same-node path: on unless PSP_SHM=0; ring bytes per direction; spin bound */
    v = getenv("PSP_SHM");
    psp.shm_off = v && !strcmp(v, "0");
    psp.shm_ring = PSP_SHM_RING;
    v = getenv("PSP_SHM_RING");
    if (v && *v) {
        unsigned long r = strtoul(v, NULL, 0), p2 = PSHM_RING_MIN;
        while (p2 < r && p2 < PSHM_RING_MAX) p2 <<= 1; /* a power of two, within bounds */
        psp.shm_ring = (unsigned)p2;
    }
    unsigned long spin = PSP_SHM_SPIN_US;
    v = getenv("PSP_SHM_SPIN");
    if (v && *v) spin = strtoul(v, NULL, 10);
    if (spin > PSP_BUSY_POLL_MAX_US) spin = PSP_BUSY_POLL_MAX_US;
    if (psp.busy_poll_us > spin) spin = psp.busy_poll_us;
    psp.shm_spin_ns = (unsigned)spin * 1000u;
    atexit(psp_exit);
    signals_init();
}

int psp_hide(int fd)
{
    return fdt_hide(fd);
}

bool psp_is_hidden(int fd)
{
    return psp.inited && fdt_hidden(fd);
}

bool psp_ready(void)
{
    if (psp.inited) return !psp.disabled && !psp.broken && psp.pid == getpid();
    if (psp.disabled) return false;
    pthread_mutex_lock(&psp.psi_lock);
    if (!psp.inited) {
        struct rlimit rl;
        rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_max : 1024;
        if (lim > (1u << 20) || lim == RLIM_INFINITY) lim = 1u << 20;
        psp.nbyfd = (int)lim;
        rlim_t soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
        psp.hidden_base = soft > 512 ? (int)(soft * 3 / 4) : (int)(soft / 2);
        psp.byfd = calloc((size_t)psp.nbyfd, sizeof *psp.byfd);
        psp.listener = calloc((size_t)psp.nbyfd, sizeof *psp.listener);
        if (!psp.byfd || !psp.listener || sodium_init() < 0 || psi_open(&psp.psi, NULL) < 0) {
            psp.broken = true;
        } else {
            psp.psi_open = true;
            int h = psp_hide(psp.psi.fd);
            if (h < 0) psp.broken = true;
            psp.psi.fd = h;
            if (!psp.broken && neg_nodes() < 0) {
                psp.broken = true;
                psp.refused = errno == EUSERS; /* psid's limit of clients: counted so */
            }
        }
        psp.inited = true;
    }
    pthread_mutex_unlock(&psp.psi_lock);
    return !psp.disabled && !psp.broken;
}

struct conn *psp_conn_of(int fd)
{
    if (fd < 0 || fd >= psp.nbyfd || !psp.byfd) {
        real_ready(); /* the caller's next step is real.X */
        return NULL;
    }
    struct conn *c = __atomic_load_n(&psp.byfd[fd], __ATOMIC_ACQUIRE);
    return fdt_is_conn(c) ? c : NULL;
}

/* A program thread about to wait on the RDP socket itself (wait.c, poll.c, epoll.c): the
 * progress thread stops listening to the socket while any does (every datagram would wake
 * it for nothing, and it would take the lock from the thread the datagram is for). It listens
 * again only once no program thread has waited for PSP_DEAF_US (the deaf timer, deaf_tfd):
 * a program that answers and waits again (a request/response loop) is back before a
 * datagram is due, and telling the progress thread at every wait's end was two epoll_ctl
 * per wait and a window in which it took the answer the program was about to wait for
 * (bench/RESULTS.md 8.8). A stream's sender, writing, finds the ACKs in the socket when it
 * next waits for credit, instead of a progress thread fighting it for the lock. Until then
 * a datagram waits in the socket for the next waiting thread or the timer, PSP_DEAF_US at
 * most. Listening again (EPOLL_CTL_MOD) re-arms the edge: what came meanwhile is reported at
 * once. The registration follows the count under its own small lock. */
static pthread_mutex_t poller_lock = PTHREAD_MUTEX_INITIALIZER;

static void rdp_listen(bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN | EPOLLET : EPOLLET, .data.u64 = TAG_RDP};
    if (real.epoll_ctl(psp.epfd, EPOLL_CTL_MOD, rdp_fd(psp.rdp), &ev) == 0)
        __atomic_store_n(&psp.rdp_deaf, !on, __ATOMIC_SEQ_CST);
}

static void deaf_arm(uint64_t at)
{
    struct itimerspec its = {
        .it_value = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)}};
    timerfd_settime(psp.deaf_tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static bool poller_count(void)
{
    /* no RDP peer yet (only same-node connections): no datagram is ours to take */
    if (!psp.rdp || !conn_rdp_peers() || psp.epfd < 0) return false;
    if (__atomic_add_fetch(&psp.app_pollers, 1, __ATOMIC_SEQ_CST) == 1 &&
        !__atomic_load_n(&psp.rdp_deaf, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&poller_lock);
        if (!psp.rdp_deaf && __atomic_load_n(&psp.app_pollers, __ATOMIC_SEQ_CST) > 0)
            rdp_listen(false);
        pthread_mutex_unlock(&poller_lock);
    }
    return true;
}

bool psp_poller_enter(void)
{
    if (!poller_count()) return false;
    wait_direct_end(); /* a thread asleep in the socket's read leaves it to us all */
    return true;
}

bool psp_poller_enter_alone(void)
{
    if (!poller_count()) return false;
    if (__atomic_load_n(&psp.app_pollers, __ATOMIC_SEQ_CST) == 1) return true;
    psp_poller_leave(true);
    return false;
}

void psp_poller_leave(bool entered)
{
    if (!entered || __atomic_sub_fetch(&psp.app_pollers, 1, __ATOMIC_SEQ_CST) != 0) return;
    uint64_t now = rdp_now_ns();
    __atomic_store_n(&psp.left_at, now, __ATOMIC_SEQ_CST);
    /* the deaf timer: armed by the first to leave, then kept going by the progress thread
     * while threads keep coming back (deaf_expired) */
    if (!__atomic_exchange_n(&psp.deaf_armed, true, __ATOMIC_SEQ_CST))
        deaf_arm(now + PSP_DEAF_US * 1000ull);
}

/* The progress thread, at the deaf timer: listen to the RDP socket again if no program
 * thread has waited for PSP_DEAF_US; else look again later while they come and go (a
 * thread that has been waiting longer arms the timer when it leaves). */
static void deaf_expired(void)
{
    uint64_t x;
    (void)!real.read(psp.deaf_tfd, &x, 8);
    __atomic_store_n(&psp.deaf_armed, false, __ATOMIC_SEQ_CST); /* before the count */
    uint64_t now = rdp_now_ns(),
             due = __atomic_load_n(&psp.left_at, __ATOMIC_SEQ_CST) + PSP_DEAF_US * 1000ull;
    pthread_mutex_lock(&poller_lock);
    bool waiting = __atomic_load_n(&psp.app_pollers, __ATOMIC_SEQ_CST) > 0;
    if (!waiting && now >= due) {
        if (psp.rdp_deaf) rdp_listen(true);
    } else if (now < due && !__atomic_exchange_n(&psp.deaf_armed, true, __ATOMIC_SEQ_CST)) {
        deaf_arm(waiting ? now + PSP_DEAF_US * 1000ull : due);
    }
    pthread_mutex_unlock(&poller_lock);
}

void psp_poke(uint32_t pid)
{
    if (!pid) return;
    for (int i = 0; i < 8; i++)
        if (!psp.pokes[i] || psp.pokes[i] == pid) {
            psp.pokes[i] = pid;
            psp_kick();
            return;
        }
    /* more at once than we keep: the peer answers when its program looks (6 s at most) */
}

void psp_kick(void)
{
    if (psp.wakefd >= 0) (void)!real.write(psp.wakefd, &(uint64_t){1}, 8);
}

/* A connection on the fast path: until its kernel socket sees the peer's FIN or a reset
 * (EPOLLRDHUP). One event (EPOLLONESHOT): the condition stays, the event is needed once. */
void psp_guard_add(struct conn *c)
{
    if (psp.epfd < 0 || c->kfd < 0) return;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT,
                             .data.u64 = TAG_GUARD + (uint64_t)c->kfd};
    if (real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, c->kfd, &ev) < 0 && errno == EEXIST)
        real.epoll_ctl(psp.epfd, EPOLL_CTL_MOD, c->kfd, &ev);
}

void psp_guard_del(struct conn *c)
{
    if (psp.epfd >= 0 && c->kfd >= 0) real.epoll_ctl(psp.epfd, EPOLL_CTL_DEL, c->kfd, NULL);
}

/* The progress thread's timer at RDP's next deadline (or the guards' grace): any thread
 * may re-arm it, under psp.lock, without waking the progress thread. */
void psp_arm_timer(void)
{
    if (psp.timerfd < 0) return;
    uint64_t d = psp.rdp ? rdp_next_deadline(psp.rdp) : UINT64_MAX; /* same-node only: none */
    bool guards = false; /* the walk only when a guard saw EOF: not once per send */
    for (struct conn *c = psp.guards ? psp.all : NULL; c && !guards; c = c->lnext)
        guards = c->guard_fired && cs_fast(c->st) && !c->rx_fin && !(c->krx && c->peer_closed);
    if (guards) {
        uint64_t g = rdp_now_ns() + 50000000ull;
        if (g < d) d = g;
    }
    for (struct conn *c = psp.corks ? psp.all : NULL; c; c = c->lnext) /* held by a cork */
        if (c->cork_until && c->cork_until < d) d = c->cork_until;
    if (psp.plain && psp.plain->plain_at < d) d = psp.plain->plain_at; /* a negotiation due */
    uint64_t a = alive_deadline(); /* doubts about peers, stalled peers */
    if (a < d) d = a;
    a = relink_deadline(); /* psid went away: the next try to reach it */
    if (a < d) d = a;
    if (d == psp.armed) return;
    psp.armed = d;
    struct itimerspec its = {0};
    if (d != UINT64_MAX) {
        its.it_value.tv_sec = (time_t)(d / 1000000000ull);
        its.it_value.tv_nsec = (long)(d % 1000000000ull);
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec) its.it_value.tv_nsec = 1;
    }
    timerfd_settime(psp.timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void *progress(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* the program's signals go to its threads */
    struct epoll_event ev[64];
    for (;;) {
        int n = real.epoll_wait(psp.epfd, ev, 64, -1);
        if (n < 0 && errno == EBADF) return NULL; /* a raw close_range took our descriptors */
        if (n < 0) continue;
        /* datagrams alone, while a program thread waits on the socket itself: its to take */
        if (n == 1 && ev[0].data.u64 == TAG_RDP &&
            __atomic_load_n(&psp.app_pollers, __ATOMIC_ACQUIRE))
            continue;
        if (n == 1 && ev[0].data.u64 == TAG_DEAF) { /* nothing else: not the lock */
            deaf_expired();
            continue;
        }
        bool psi_ready = false;
        pthread_mutex_lock(&psp.lock);
        for (int i = 0; i < n; i++) {
            uint64_t tag = ev[i].data.u64;
            if (tag == TAG_TIMER) {
                uint64_t x;
                (void)!real.read(psp.timerfd, &x, 8);
                psp.armed = UINT64_MAX; /* it fired: nothing is armed */
            } else if (tag == TAG_RDP) {
                /* nothing more: rdp_process below */
            } else if (tag == TAG_WAKE) {
                uint64_t x;
                (void)!real.read(psp.wakefd, &x, 8);
            } else if (tag == TAG_DEAF) {
                deaf_expired();
            } else if (tag == TAG_PSI) {
                psi_ready = true;
            } else if (tag >= PSP_TAG_SHM) { /* a same-node connection moving to TCP */
                int kfd = (int)(tag - PSP_TAG_SHM);
                for (struct conn *c = psp.all; c; c = c->lnext)
                    if (c->kfd == kfd && c->shm) {
                        shm_bell_drain(c);
                        conn_shm_look(c);
                        break;
                    }
            } else if (tag >= PSP_TAG_KID) {
                fork_kid_ready((int)(tag - PSP_TAG_KID));
            } else if (tag >= TAG_GUARD) {
                int kfd = (int)(tag - TAG_GUARD);
                for (struct conn *c = psp.all; c; c = c->lnext)
                    if (c->kfd == kfd) {
                        conn_guard_event(c);
                        break;
                    }
            }
        }
        rdp_process(psp.rdp);
        conn_timers();
        psp_arm_timer();
        struct shm_chan *dead = shm_reap();
        struct conn *due[32]; /* negotiations to start (psi_lock: not under psp.lock) */
        int ndue = conn_plain_due(due, 32);
        uint32_t pokes[8];
        memcpy(pokes, psp.pokes, sizeof pokes);
        memset(psp.pokes, 0, sizeof psp.pokes);
        pthread_mutex_unlock(&psp.lock);
        shm_unmap_all(dead); /* not under the lock: munmap may wait for other CPUs */
        for (int i = 0; i < 8 && pokes[i]; i++)
            neg_poke(pokes[i]); /* psi_lock: not under psp.lock */
        for (int i = 0; i < ndue; i++) conn_negotiate(due[i]);
        if (ndue == 32) psp_kick(); /* more are due: the next round */
        if (psi_ready) neg_events(true);
        relink_try(); /* psid went away: reach it again when due (psi_lock) */
    }
    return NULL;
}

int psp_endpoint(void)
{
    if (psp.rdp) return 0;
    pthread_mutex_lock(&psp.psi_lock);
    pthread_mutex_lock(&psp.lock);
    int ret = -1;
    if (psp.rdp) {
        ret = 0;
        goto out;
    }
    struct rdp_config cfg;
    rdp_config_defaults(&cfg);
    cfg.node_id = psp.node;
    cfg.endpoint = 0xffff; /* until psid names it */
    memcpy(&cfg.bind, &psp.node_addr, psp.node_addr_len);
    if (cfg.bind.ss_family == AF_INET)
        ((struct sockaddr_in *)&cfg.bind)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&cfg.bind)->sin6_port = 0;
    cfg.bind_len = psp.node_addr_len;
    randombytes_buf(cfg.key, sizeof cfg.key); /* every peer comes with its pair's key */
    if (psp.mtu) cfg.mtu = psp.mtu;
    cfg.ack_delay_us = PSP_ACK_DELAY_US;
    cfg.persist_max_us = PSP_PERSIST_MAX_US; /* a silent peer is stalled, not lost (alive.c) */
    struct rdp_callbacks cb = {.recvv = conn_rdp_recv,
                               .lost = conn_rdp_lost,
                               .undeliverable = conn_rdp_undeliverable,
                               .can_send = conn_rdp_can_send,
                               .stalled = alive_stalled};
    psp_in++; /* (its socket call is ours: no record of the table's to look at, under the lock) */
    rdp_t *r = rdp_open(&cfg, &cb);
    psp_in--;
    bool shm_only = false;
    if (!r && errno == EADDRNOTAVAIL) {
        /* a network namespace without the node's address (a container on this node, its
         * programs psid's clients through the socket's path): same-node connections only */
        memset(&cfg.bind, 0, sizeof cfg.bind);
        cfg.bind.ss_family = psp.node_addr.ss_family;
        psp_in++;
        r = rdp_open(&cfg, &cb);
        psp_in--;
        shm_only = r != NULL;
    }
    if (!r) goto out;
    psp_in++; /* its socket among our hidden descriptors, out of the program's reach */
    int moved = rdp_move_fd(r, psp.hidden_base);
    psp_in--;
    if (moved < 0) goto fail;
    fdt_mark_hidden(rdp_fd(r));
    uint32_t node;
    uint16_t ep;
    pthread_mutex_unlock(&psp.lock);
    int e = neg_open(rdp_fd(r), shm_only, &node, &ep); /* psid reads its port from it */
    pthread_mutex_lock(&psp.lock);
    if (e || rdp_set_endpoint(r, node, ep) < 0) goto fail;
    psp.epfd = psp_hide(epoll_create1(EPOLL_CLOEXEC));
    psp.timerfd = psp_hide(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    psp.wakefd = psp_hide(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    psp.deaf_tfd = psp_hide(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (psp.epfd < 0 || psp.timerfd < 0 || psp.wakefd < 0 || psp.deaf_tfd < 0) goto fail;
    psp_spin_init();
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.u64 = TAG_RDP;
    ev.events = EPOLLIN | EPOLLET; /* rdp_process reads all; a waiting thread may take it */
    real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, rdp_fd(r), &ev);
    ev.events = EPOLLIN;
    ev.data.u64 = TAG_TIMER;
    real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, psp.timerfd, &ev);
    ev.data.u64 = TAG_WAKE;
    real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, psp.wakefd, &ev);
    ev.data.u64 = TAG_DEAF;
    real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, psp.deaf_tfd, &ev);
    ev.data.u64 = TAG_PSI;
    real.epoll_ctl(psp.epfd, EPOLL_CTL_ADD, psi_fd(&psp.psi), &ev);
    psp.rdp = r;
    psp.shm_only = shm_only;
    psp.node = node;
    psp.endpoint = ep;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256u << 10);
    if (pthread_create(&psp.thread, &at, progress, NULL) != 0) {
        psp.rdp = NULL;
        pthread_attr_destroy(&at);
        goto fail;
    }
    pthread_attr_destroy(&at);
    psp.thread_running = true;
    ret = 0;
    goto out;
fail:
    fdt_unmark(rdp_fd(r));
    psp_in++;
    rdp_close(r);
    psp_in--;
out:
    pthread_mutex_unlock(&psp.lock);
    psi_unlock();
    return ret;
}

/* fork: the child keeps the program's descriptors, not our endpoint: its RDP socket,
 * psid connection and thread stay the parent's. Connections already on RDP become orphans
 * in the child; accepted ones not yet claimed can still be claimed by it (prefork). */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&psp.psi_lock);
    pthread_mutex_lock(&psp.lock);
    if (psp.inited && !psp.broken && psp.pid == getpid()) fork_prepare();
}

static void atfork_parent(void)
{
    for (struct conn *c = psp.inited ? psp.all : NULL; c; c = c->lnext)
        c->nb_shared = true; /* the child's open file too: it may change its flags */
    fork_parent();
    pthread_mutex_unlock(&psp.lock);
    psi_unlock();
}

static void atfork_child(void)
{
    pthread_mutex_init(&psp.lock, NULL);
    pthread_mutex_init(&psp.psi_lock, NULL);
    psp.pid = getpid();
    if (psp.inited && !psp.broken) {
        fork_child();
        conn_fork_child();
        epoll_fork_child();
        fdt_fork_child();
        if (psp.rdp) {
            /* the socket is shared with the parent: close our copy, never read it */
            fdt_close_hidden(rdp_fd(psp.rdp));
            psp.rdp = NULL; /* its memory is the parent's copy: leak it */
        }
        fdt_close_hidden(psp.epfd);
        fdt_close_hidden(psp.timerfd);
        fdt_close_hidden(psp.wakefd);
        fdt_close_hidden(psp.deaf_tfd);
        psp.epfd = psp.timerfd = psp.wakefd = psp.deaf_tfd = -1;
        fdt_close_hidden(psp.kick_fd);
        psp.kick_fd = -1;
        /* the parent's threads that waited are not ours: none waits, none is listened for */
        psp.app_pollers = 0;
        psp.direct = NULL;
        pthread_cond_init(&psp.direct_gone, NULL);
        psp.rdp_sleeps = 0;
        psp.rdp_deaf = psp.deaf_armed = false;
        psp.thread_running = false;
        psp.accelerated = psp.rdp_tx = psp.rdp_rx = psp.tcp_tx = psp.tcp_rx = 0;
        psp.rdp_tx_msgs = psp.rdp_rx_msgs = psp.tcp_tx_msgs = psp.tcp_rx_msgs = 0;
        psp.shm_conns = psp.shm_tx = psp.shm_rx = psp.shm_tx_msgs = psp.shm_bells = 0;
        psp.spin_samples = psp.spin_skipped = 0;
        memset(psp.stats_tcp, 0, sizeof psp.stats_tcp);
        if (psp.psi_open) { /* the parent's: the child opens its own when it needs one */
            fdt_close_hidden(psi_fd(&psp.psi));
            psp.psi.fd = -1;
            psp.psi_open = false;
        }
    }
}

__attribute__((constructor)) static void psp_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}
