/*
 * psp.h - the preload library's internal interfaces (docs/preload-design.md).
 *
 * One process-wide state, struct psp (state.c), guarded by psp.lock: the RDP endpoint, the
 * connections, the table from the program's descriptors to them. The psid connection has
 * its own lock (psp.psi_lock, always taken before psp.lock), since a request to psid may
 * wait for another node's psid and must not stop the progress thread meanwhile.
 *
 * Modules: real.c (the C library's functions under ours), state.c (the endpoint, the
 * progress thread, fork, exit, statistics), fdtable.c (what each descriptor number is to us:
 * the program's connections, references to them, our own hidden descriptors, per-thread
 * state), negotiate.c (the requests to psid), lifecycle.c (a connection's states and the
 * transitions between them: lifecycle.h), conn.c (a connection: buffers, credit, the read
 * and write loops, the lifecycle's moves) over its transport (xport.h: xkernel.c, the kernel
 * socket; xrdp.c, RDP and its messages; shm.c, the same-node path: a shared-memory channel),
 * wait.c (blocking and waking), and the wrappers: sock.c (socket calls), io.c (reads and
 * writes), poll.c (poll, select), epoll.c (epoll) with bells.c (its doorbells; the three
 * share pollint.h), exec.c (the exec family).
 */
#ifndef PSCLUSTER_PRELOAD_PSP_H
#define PSCLUSTER_PRELOAD_PSP_H

#include "psi_nodes.h"
#include "psi.h"
#include "rdp.h"
#include "lifecycle.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* --- real.c: the next definitions of what we wrap (RTLD_NEXT) --- */
struct psp_real {
    int (*socket)(int, int, int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*listen)(int, int);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*close)(int);
    int (*shutdown)(int, int);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*ioctl)(int, unsigned long, ...);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    int (*epoll_ctl)(int, int, int, struct epoll_event *);
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
    pid_t (*fork)(void);
    long (*syscall)(long, ...);
};
extern struct psp_real real;
void real_init(void);
/* The real functions resolved also when a wrapper runs before the library's constructor:
 * another library's constructor may call read or close first (libcap-ng's does, under
 * setpriv), and a NULL real.read there was a crash. */
static inline void real_ready(void)
{
    if (__builtin_expect(!real.read, 0)) real_init();
}

/* --- the reasons a connection stays on TCP (PSP_STATS) --- */
enum psp_reason {
    PSP_R_NOT_CLUSTER,  /* not a cluster node's address */
    PSP_R_NO_LIBRARY,   /* nobody under the library listens there */
    PSP_R_NOT_ACCEPTED, /* not taken under the library in time */
    PSP_R_SAME_NODE,    /* the same-node path is off (PSP_SHM=0) */
    PSP_R_RULE,         /* PSP_RULES */
    PSP_R_LIMIT,        /* a resource limit */
    PSP_R_ERROR,        /* anything else */
    PSP_R_SHORT,        /* it ended (or the process did) before its negotiation's answer */
    PSP_R__COUNT
};

/* --- conn.c: one TCP connection of the program (its states: lifecycle.h) --- */

enum conn_sw {
    SW_NONE,
    SW_INIT, /* we asked (PLW_SWITCH): our program waits; we return what it did not read */
    SW_RESP, /* the peer asked: our program reads what came before, then the kernel socket */
};

struct chunk {
    struct chunk *next;
    size_t len, off;
    uint8_t data[];
};

struct waiter {
    struct waiter *next;
    int efd;
    bool direct; /* its thread sleeps in the RDP socket's read: woken by a kick (wait.c) */
    bool kicked; /* kicked already */
};

struct epreg;    /* epoll.c: one registration of the connection in an epoll set */
struct shm_chan; /* shm.c: a same-node channel */

struct conn {
    int kfd;                    /* our own descriptor of the kernel socket (hidden): the guard */
    int nfds;                   /* the program's descriptors of it */
    _Atomic enum conn_state st; /* lifecycle.h: written by conn_enter only, under psp.lock;
                                 * read without it in the wrappers (a look, checked again
                                 * under it) */
    const struct conn_ops *ops; /* its transport's operations (xport.h), set by conn_enter */
    uint32_t peer;              /* RDP_PEER(node, endpoint) of the other process */
    uint32_t id;                /* the connector's id */
    bool connector;
    /* receive side */
    struct chunk *rxq, **rxq_tail;
    size_t rx_bytes;   /* held, unread */
    size_t rx_unacked; /* read by the program, not yet returned as credit */
    bool rx_fin;       /* the peer sends no more */
    bool fin_seen;     /* ... by FIN or CLOSE (not a reset): reads give EOF first */
    bool peer_closed;  /* the peer reads no more: writes give EPIPE */
    int err;           /* a pending error (ECONNRESET, ETIMEDOUT), sticky */
    /* send side */
    size_t credit; /* bytes we may still send */
    bool tx_fin;   /* shutdown(SHUT_WR) or close: FIN sent or queued */
    bool tx_fin_sent;
    bool credit_owed;                /* a CREDIT could not be sent (RDP full) */
    struct chunk *hold, **hold_tail; /* CS_CONNECTING/CS_DRAIN: bytes not yet sent */
    size_t hold_bytes;
    bool linger0;        /* SO_LINGER with timeout 0: close sends RST */
    bool cork_on;        /* TCP_CORK set */
    uint64_t cork_until; /* bytes a cork or MSG_MORE holds (in hold) go out then; 0: none */
    bool guard_fired;    /* the guard's event came (EPOLLRDHUP: the peer's FIN or reset) */
    bool guard_eof;      /* ... and nothing of the peer's is left to read there */
    bool guard_rst;      /* an error (reset) */
    bool err_reported;   /* err was returned once */
    bool rd_shut;        /* shutdown(SHUT_RD) */
    int timeo[2];        /* SO_RCVTIMEO, SO_SNDTIMEO in ms (-1 none), -2: not looked up */
    bool rdp_full;       /* RDP's queue to the peer was full: wait for can_send */
    uint64_t closed_at;  /* when the program closed its last descriptor */
    /* the TCP phase and the move up (conn.c, "The TCP phase"): what went over the kernel
     * socket before the fast path, each way */
    uint64_t k_tx;     /* bytes the program wrote to the kernel socket */
    uint64_t k_rx;     /* bytes it read from there */
    uint64_t peer_ktx; /* with peer_up: the peer's k_tx, its bytes still to read there */
    bool peer_up;      /* the peer's UP came: its bytes travel the fast path after peer_ktx */
    bool krx;          /* reads take the kernel socket's bytes first (until peer_ktx) */
    bool up_owed;      /* our UP is not sent yet (RDP full): nothing may go before it */
    bool kmore;        /* the last write to the kernel socket had MSG_MORE */
    bool zombie;       /* closed while negotiating: the answer gets CLOSE (or RST), no UP */
    bool counted;      /* in PSP_STATS: accelerated, or on TCP with its reason */
    uint64_t plain_at; /* CS_PLAIN: when its negotiation starts */
    struct conn *pnext, **pprev; /* CS_PLAIN: the queue of those, by plain_at */
    uint32_t tag;                /* an acceptor's name for its claim (PSF_TAG) */
    bool sw_epoll; /* its epoll registrations could not move up (no descriptors for its
                    * bells): it moves back to TCP */
    uint64_t rx_read;
    uint64_t guard_at; /* when (the event, then the check) */
    struct waiter *waiters;
    int bell_in, bell_out; /* epoll doorbells (-1 until used in epoll) */
    int bell_hup;          /* readable on POLLHUP/POLLERR alone: for registrations with
                            * neither EPOLLIN nor EPOLLOUT (-1 until one exists) */
    bool bell_in_on, bell_out_on, bell_hup_on;
    struct epreg *regs;
    struct conn *hnext; /* the (peer, id, connector) hash chain */
    struct conn *lnext; /* the list of all connections */
    uint64_t tx_bytes, rx_total;
    /* the move back to TCP */
    enum conn_sw sw;
    bool sw_peer_end; /* the peer's RDP stream ended: its SWITCH or SWITCH_ACK came */
    bool sw_ret_due;  /* the peer returns bytes to us (we answered, or both asked) */
    bool sw_ret_end;  /* ... its RETURN_END came */
    bool sw_returned; /* we returned ours (RETURN_END sent) */
    bool sw_ack_owed; /* a SWITCH_ACK (SW_RESP) or SWITCH (SW_INIT) not sent yet (RDP full) */
    bool forked;      /* a fork's child holds the socket too: close moves it to TCP */
    /* O_NONBLOCK of its open file, as last asked (-1: ask): kept while this process alone
     * can change it (F_SETFL and FIONBIO through us forget it; after a fork, always ask) */
    int8_t nb;
    bool nb_shared;
    bool sw_failed;                /* it did not complete: the connection was reset */
    struct chunk *ret, **ret_tail; /* bytes the peer returned, written to the socket first */
    size_t ret_bytes;
    uint64_t sw_at;
    int sw_kids[4]; /* channels of children waiting for it (fork.c), -1: none */
    /* the same-node path */
    struct shm_chan *shm; /* CS_SHM: the channel (NULL: it could not be mapped: reset) */
    bool same;            /* CS_CONNECTING: to a listener on this node */
    bool xns;             /* to an address of no cluster node: maybe another network
                           * namespace of this machine, served by our psid (psid decides) */
    size_t hold_max;      /* bytes that may be held (the window) */
    int shm_slot;         /* a hidden descriptor kept for the doorbell, or -1 */
    bool bells_later;     /* bells.c: its bells are brought up to date at the next epoll wait */
    bool lazy;            /* bells.c: in the lazy list (not armed: the epoll waits look) */
    bool lazy_armed;      /* ... armed for a sleep, to be disarmed after it */
    uint64_t lazy_seen;   /* ... when it was last found ready (or joined) */
    /* alive.c: whether the peer process lives */
    int guard_err;     /* with guard_rst: the kernel socket's error (ECONNRESET, ETIMEDOUT) */
    uint64_t doubt_at; /* in doubt since (RDP stalled, or psid lost the node); 0: not */
    bool ka_mine;      /* our keepalive probes are on the kernel socket; the program's ... */
    int ka[4];         /* ... SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, kept here */
    /* Last, and atomic: what a lookup racing with the destroy may touch (fdtable.c), which
     * conn_new does not clear nor ASan builds poison. refs: calls of the program inside it,
     * and holders of ours that let psp.lock go (waits, spins, a negotiation). */
    int refs;
    bool doomed; /* ended (destroy): its memory goes with the last reference (conn_release) */
    bool freed;  /* in fdtable.c's free list, linked by free_next */
    struct conn *free_next;
};

/* --- state.c --- */
struct psp {
    pthread_mutex_t lock;
    pthread_mutex_t psi_lock;
    bool inited, disabled, strict, broken;
    bool refused;        /* psid refused our connection for its limit of clients (EUSERS): every TCP
                          * connection is counted as `limit` */
    bool sync;           /* PSP_SYNC (or PSP_STRICT): the first use of a connection waits for its
                          * negotiation, so that every byte of an accelerated one takes the fast path */
    uint64_t upgrade_ns; /* PSP_UPGRADE_US: a connection's age at its negotiation */
    struct conn *plain, **plain_tail; /* CS_PLAIN connections, oldest first */
    pid_t pid;                        /* the process this state belongs to (fork) */
    struct psi psi;                   /* connection to the node's psid (psi_lock) */
    struct psi_nodetab nodes;         /* the cluster's nodes, from psid at start */
    bool psi_open;
    uint32_t node; /* our node id */
    struct sockaddr_storage node_addr;
    socklen_t node_addr_len;
    rdp_t *rdp; /* our endpoint: NULL until the first use */
    uint16_t endpoint;
    pthread_t thread; /* the progress thread */
    bool thread_running;
    int epfd, timerfd, wakefd; /* the progress thread's */
    int deaf_tfd;              /* the progress thread's: when to listen to RDP again */
    uint64_t armed;            /* the timer's deadline; UINT64_MAX: not armed */
    struct conn **byfd;        /* descriptor -> connection, or a mark (fdtable.c) */
    int nbyfd;
    bool *listener;     /* the program's descriptor -> registered listener */
    struct conn **hash; /* (peer, id, connector) -> connection */
    unsigned hash_size;
    struct conn *all;
    unsigned nconns;
    unsigned guards; /* connections whose kernel socket saw EOF (psp_arm_timer looks at them) */
    unsigned corks;  /* connections whose cork holds bytes (cork_until set) */
    uint32_t next_conn_id;
    int hidden_base; /* hidden descriptors are placed at or above this */
    uint64_t stats_tcp[PSP_R__COUNT];
    uint64_t bad_msgs;        /* malformed messages from a peer, dropped */
    uint64_t bad_transitions; /* state changes the lifecycle's table does not list (lifecycle.c) */
    uint64_t accelerated, rdp_tx, rdp_rx, tcp_tx, tcp_rx;        /* bytes per path */
    uint64_t rdp_tx_msgs, rdp_rx_msgs, tcp_tx_msgs, tcp_rx_msgs; /* DATA messages; calls */
    char *stats; /* PSP_STATS: NULL, "1" (stderr) or a file */
    struct psp_rule *rules;
    unsigned nrules;
    unsigned window; /* per-connection credit, bytes */
    unsigned mtu;    /* RDP's, from psid (0: RDP's default) */
    unsigned busy_poll_us;
    int app_pollers;            /* program threads waiting on the RDP socket themselves (wait.c) */
    struct waiter *direct;      /* the thread asleep in the RDP socket's read (wait.c) */
    pthread_cond_t direct_gone; /* it woke (psp.lock) */
    bool direct_off;            /* not that way (PSP_DIRECT_WAIT=0, or a socket error) */
    int kick_fd;                /* sends it its wake-ups (-1 until the first) */
    struct sockaddr_storage kick_addr;
    socklen_t kick_len;
    uint64_t rdp_sleeps; /* waits that slept in the read (PSP_STATS) */
    bool rdp_deaf;       /* the progress thread does not listen to the RDP socket */
    bool deaf_armed;     /* deaf_tfd is armed */
    uint64_t left_at;    /* when the last of them stopped waiting (rdp_now_ns) */
    uint64_t switched;   /* connections moved back to TCP (fork, exec) */
    /* the same-node path (PSP_SHM, PSP_SHM_RING, PSP_SHM_SPIN) */
    bool shm_off;
    /* our network namespace lacks the node's address (a container's, served by the node's
     * psid): no RDP, only same-node connections, through shared memory */
    bool shm_only;
    unsigned shm_ring, shm_spin_ns;
    uint64_t shm_conns, shm_tx, shm_rx, shm_tx_msgs;
    uint64_t shm_bells; /* doorbells rung: wake-ups of a sleeping peer */
    /* the spin rule (cosched.c; PSP_STATS, atomic): samples of the node's load, spins not
     * done because it was oversubscribed */
    uint64_t spin_samples, spin_skipped;
    uint32_t pokes[8]; /* pids for psid to poke, sent by the progress thread (0: free) */
};
extern struct psp psp;

/* Initialise on first use (the library's constructor does the cheap part). Returns false
 * when the library is disabled, or the process has no psid: everything passes through. */
bool psp_ready(void);
/* The endpoint (RDP socket, psid registration, progress thread), opened on first need.
 * 0, or -1 (the reason is counted by the caller as PSP_R_ERROR). Under psp.lock. */
int psp_endpoint(void);
/* The connection of the program's descriptor fd, or NULL: no reference taken (under
 * psp.lock, or only to ask whether there is one). */
struct conn *psp_conn_of(int fd);
/* Move a new descriptor of ours to psp.hidden_base or above, close-on-exec, and mark it
 * hidden (fdt_hide); -1 on error. */
int psp_hide(int fd);
/* Whether fd is one of ours (the program must not close or replace it). */
bool psp_is_hidden(int fd);
void psp_kick(void); /* wake the progress thread */
/* Have psid poke process pid (PSM_PL_POKE): the progress thread sends it (under psp.lock) */
void psp_poke(uint32_t pid);
/* A program thread waits on the RDP socket itself: whether it counted (to leave then). */
bool psp_poller_enter(void);
void psp_poller_leave(bool entered);
/* The same for a thread that will sleep in the socket's read: true when it is the only one
 * (wait.c, under psp.lock) */
bool psp_poller_enter_alone(void);
void psp_arm_timer(void); /* its timer at RDP's next deadline (under psp.lock) */
void psp_guard_add(struct conn *c);
void psp_guard_del(struct conn *c);
void psp_count_tcp(enum psp_reason r);
/* The reason of a connection that ended on TCP before its negotiation's answer: short, but
 * one to an address of no cluster node was most likely just that (PSP_STATS) */
static inline enum psp_reason psp_short_reason(const struct conn *c)
{
    return c->xns ? PSP_R_NOT_CLUSTER : PSP_R_SHORT;
}
void psp_print_stats(void); /* PSP_STATS: at exit, and before exec (the image ends there) */
/* PSP_RULES: whether a destination may be accelerated. */
bool psp_rules_allow(const struct sockaddr *sa);

/* --- fdtable.c: the descriptor table (see its comment) --- */
#define FDT_HIDDEN  ((struct conn *)1) /* one of our own descriptors */
#define FDT_THREAD  ((struct conn *)2) /* ... a thread's wake-up eventfd */
#define FDT_CLOSING ((struct conn *)3) /* the program's close of a connection is under way */
static inline bool fdt_is_conn(const struct conn *c)
{
    return (uintptr_t)c > 3;
}
/* fd's connection with a reference, or NULL; a wrapper's (dropped by fdt_put, or when a
 * cancellation acts in a sleep: fdt_release_held) */
struct conn *fdt_get(int fd);
void fdt_put(struct conn *c);  /* drop it (NULL: nothing); not under psp.lock */
void fdt_release_held(void);   /* the thread's fdt_get references (cancelled) */
void fdt_hold(struct conn *c); /* a reference taken otherwise held as fdt_get's */
/* The connection the calling thread keeps a reference on (the last it used): fdt_get of
 * its descriptor counts nothing, fdt_put of it does nothing */
extern __thread struct conn *fdt_kept;
extern __thread int fdt_nheld;       /* how many wrapper references the thread holds besides */
struct conn *fdt_find(int fd);       /* a reference its taker drops itself (fdt_unfind) */
void fdt_unfind(struct conn *c);     /* not under psp.lock */
void fdt_put_locked(struct conn *c); /* ... under psp.lock */
void fdt_ref(struct conn *c);        /* one more, on a connection held or under psp.lock */
struct conn *fdt_conn_alloc(void);   /* conn_new's memory (under psp.lock) */
void fdt_conn_free(struct conn *c);  /* destroy's (under psp.lock) */
void fdt_attach(int fd, struct conn *c);
void fdt_clear(int fd, struct conn *was); /* fd's slot empty, if it still holds was */
/* The program closes fd (close, dup2 onto it, close_range): its connection's record of it
 * goes first (conn_detach, the slot FDT_CLOSING), then the kernel's close, then
 * fdt_close_end. Whether fd was a connection's. Not under psp.lock. */
bool fdt_close_begin(int fd);
void fdt_close_end(int fd);
void fdt_wait_closed(int fd); /* until another thread's close of fd is over */
bool fdt_hidden(int fd);
int fdt_hide(int fd);          /* moved to psp.hidden_base or above, and marked */
int fdt_hidden_dup(int fd);    /* a hidden duplicate of fd, or -1 */
int fdt_mark_hidden(int fd);   /* fd (placed already) marked */
void fdt_unmark(int fd);       /* no longer ours (not closed) */
void fdt_close_hidden(int fd); /* unmarked, then closed */
int fdt_top(void);             /* one above the highest number ever marked */
void fdt_note(int fd);         /* fd is something of ours outside the table (a listener) */
/* The calling thread's wake-up eventfd (hidden, efd) is closed when the thread ends. */
int fdt_thread_fd(int efd);
void fdt_thread_enter(void); /* the lock checker looks at this thread when it ends */
void fdt_fork_child(void);
void psp_unwinding(void); /* a cancellation unwinds the stack (for ASan builds) */
/* PSP_LOCK_CHECK builds (the ASan tree): a thread that ends holding psp.lock or psi_lock
 * (a cancellation that acted under it) aborts the process with a message. */
#ifdef PSP_LOCK_CHECK
void lock_check_thread_end(void);
#else
static inline void lock_check_thread_end(void)
{
}
#endif

/* --- negotiate.c (psi_lock taken inside; never call with psp.lock held) --- */
int neg_open(int udp_fd, bool shm_only, uint32_t *node, uint16_t *ep);
int neg_listen(int fd);
/* PSM_PL_DECLINE: an accepted socket we will not take (exec): the connector goes TCP. */
/* An accepted socket this process cannot take under the library for a limit (no
 * descriptors for its bells): PSM_PL_DECLINE with ENOBUFS, not waited for, so that its
 * connector goes TCP at once with the reason `limit`. 0 or an errno value. */
int neg_decline_limit(int fd);
int neg_decline(int fd);
/* An accepted socket we cannot take (no descriptor left): its connector goes TCP at once. */
void neg_refuse(int fd);
void neg_unlisten(uint16_t port);
void neg_poke(uint32_t pid); /* PSM_PL_POKE: no reply */
/* PSM_PL_CONNECT: 0 pending, or an errno value (TCP); *why set to a reason. same: 1 the
 * destination is an address of this node (the same-node path), 2 it is no cluster node's
 * and may be another network namespace's on this node (psid looks for its listener). */
int neg_connect(int fd, const struct sockaddr *dst, uint32_t conn_id, int same,
                enum psp_reason *why);
enum psp_reason neg_reason(int e); /* why an outcome's errno value means TCP */
/* Whether sa is an address of this machine: loopback, or one of its interfaces'. */
bool neg_local_addr(const struct sockaddr *sa);
struct neg_peer {
    uint32_t node, ep, udp_port, conn;
    char addr[64];
    uint8_t key[32];
    uint32_t shm_ring; /* nonzero: the same-node path, with the channel's descriptors */
    int shm_fds[2];    /* the memfd, our end of the doorbell */
};
/* PSM_PL_ACCEPT, not waited for: 0, or an errno value (TCP). The answer comes as the event
 * PSM_PL_ACCEPTED with tag (conn_accepted). shm: we can take the same-node path. */
int neg_accept(int fd, bool shm, uint32_t tag);
/* Take the events psid sent (outcomes): under psi_lock, then psp.lock inside. The progress
 * thread (progress: true) stops listening to psid while another thread holds it. */
void neg_events(bool progress);
/* Release psp.psi_lock after a request: the progress thread listens again, and what came
 * meanwhile is taken. */
void psi_unlock(void);
#define PSP_TAG_PSI 4u /* the psid connection's tag in the progress thread's epoll */
/* The node table's answer: our node's address (for binding), and whether an address is a
 * cluster node's and which. */
int neg_nodes(void);
int neg_node_of(const struct sockaddr *sa, uint32_t *node);

/* --- conn.c (under psp.lock) --- */
struct conn *conn_new(int kfd, enum conn_state st);
void conn_attach(struct conn *c, int fd); /* the program's descriptor fd refers to c */
void conn_detach(int fd);                 /* the program closed fd */
/* Destroy c if it is doomed and nobody holds it any more (fdt_put's last reference). */
void conn_release(struct conn *c);
int conn_set_peer(struct conn *c, const struct neg_peer *p);
void conn_outcome(uint32_t conn_id, int err, const struct neg_peer *p);
/* The answer to an acceptor's claim (PSM_PL_ACCEPTED): its tag, and the peer or an errno
 * value (TCP). */
void conn_accepted(uint32_t tag, int err, const struct neg_peer *p);
/* A negotiating connection's answer has come (PSP_SYNC: a call waits for it first, at most
 * SETTLE_MS). Not under psp.lock. */
void conn_settle(struct conn *c);
/* A connection of ours is on the kernel socket (connected, or its accept's first use):
 * negotiate now (PSP_SYNC, or PSP_UPGRADE_US=0) or once it lived PSP_UPGRADE_US
 * (CS_PLAIN). Under psp.lock; 0, or -1 when the negotiation is to start now (the caller
 * calls conn_negotiate without the lock). */
int conn_plain(struct conn *c);
/* Start c's negotiation (the request to psid, not waited for): CS_PLAIN -> CS_CONNECTING.
 * Not under psp.lock; c's users count was raised by the caller, and is lowered here. */
void conn_negotiate(struct conn *c);
/* The progress thread: the CS_PLAIN connections due now, at most max, each with its users
 * count raised (conn_negotiate lowers it). Under psp.lock. */
int conn_plain_due(struct conn **out, int max);
/* A CS_PLAIN connection moves to its kernel socket for good, never negotiated (a fork's
 * child uses it, exec, urgent data). Under psp.lock. */
void conn_plain_to_tcp(struct conn *c);
/* The peer's UP came (shm.c, from the ring's header): reads go on from the kernel socket
 * until its count, then from the fast path. Under psp.lock. */
void conn_krx_check(struct conn *c);
struct conn *conn_find(uint32_t peer, uint32_t id, bool connector);
bool conn_rdp_peers(void); /* whether any RDP peer was added (a connection between nodes) */
void conn_fallback(struct conn *c, enum psp_reason r); /* to TCP, held bytes first */
void conn_changed(struct conn *c);                     /* wake waiters, ring bells */
int conn_claim(struct conn *c);                        /* CS_ACCEPTED -> RDP or TCP */
void conn_guard_event(struct conn *c);
void conn_timers(void);
/* TCP_CORK set or cleared on c (setsockopt); cleared sends what it held. */
void conn_cork(struct conn *c, bool on);
/* RDP callbacks */
void conn_rdp_recv(void *ctx, uint32_t peer, const struct iovec *iov, int iovcnt, size_t len);
void conn_rdp_lost(void *ctx, uint32_t peer, enum rdp_lost_reason why);
void conn_rdp_undeliverable(void *ctx, uint32_t peer, const void *msg, size_t len);
void conn_rdp_can_send(void *ctx, uint32_t peer);
/* the data path: 0.. bytes, or -1 and errno; blocking per the descriptor and flags */
ssize_t conn_read(int fd, struct conn *c, const struct iovec *iov, int iovcnt, int flags);
ssize_t conn_write(int fd, struct conn *c, const struct iovec *iov, int iovcnt, int flags);
int conn_shutdown(struct conn *c, int how);
/* readiness: POLLIN, POLLOUT, POLLRDHUP, POLLHUP, POLLERR as the kernel would show them */
short conn_poll(struct conn *c);
void conn_fork_child(void);
/* fcntl(F_SETFL) or ioctl(FIONBIO) on fd: what we keep of its flags is forgotten */
void conn_flags_changed(int fd);
/* The move back to TCP (under psp.lock): start it (we are the endpoint's owner); whether
 * it is over (CS_TCP or CS_DRAIN); and, in a fork's child, an inherited connection's first
 * use asks the owner through fork.c (psp.lock not held). */
void conn_switch(struct conn *c);
/* Move c to its kernel socket now and wait (10 s at most) until it is there: its outcome
 * first if it has none yet; a fork's child asks the owner. Not under psp.lock. */
void conn_to_tcp_now(struct conn *c);
bool conn_switched(const struct conn *c);
void conn_shm_look(struct conn *c);     /* a same-node connection's rings changed (progress) */
void conn_shm_switched(struct conn *c); /* the peer's SWITCH came: our answer starts */
void conn_switch_notify(struct conn *c, int kid);
void conn_kid_gone(int kid);

/* The progress thread's try to reach psid again (relink.c, when relink_try finds it due). */
void neg_reconnect(void);

/* --- relink.c: psid restarts (under psi_lock but relink_deadline and relink_stale) ---
 * The endpoint and the listeners are registered again with the psid that answers after the
 * one that held them went away. */
void relink_listen(int fd);          /* a listener registered (or to be, psid away) */
void relink_unlisten(uint16_t port); /* ... not any more */
void relink_lost(void);              /* the psid connection is gone: tries from now on */
int relink_open(void);               /* on a fresh connection: endpoint and listeners again */
void relink_try(void);               /* the progress thread, at relink_deadline */
void relink_tried(bool ok);          /* neg_reconnect's result: done, or the next try later */
uint64_t relink_deadline(void);      /* the next try (UINT64_MAX: none due) */
bool relink_stale(void);             /* psid named the endpoint otherwise: no RDP from now on */

/* --- alive.c: whether the peer process lives (under psp.lock, but the socket options) ---
 * A doubt (RDP stalled on the peer, psid lost its node) is put to the connection's kernel
 * socket: keepalive probes, which the peer's kernel answers while the process lives,
 * stopped or not; unanswered, the socket fails with ETIMEDOUT and so does the connection. */
void alive_stalled(void *ctx, uint32_t peer, bool stalled); /* RDP's callback */
void alive_peer_lost(uint32_t peer);                        /* RDP dropped the peer */
void alive_node_lost(uint32_t node);                        /* PSM_PL_NODE_LOST */
void alive_end(struct conn *c);       /* it leaves the fast path, or ends: the program's settings */
void alive_check(uint64_t now);       /* the progress thread's timer */
bool alive_is_stalled(uint32_t peer); /* RDP finds the peer silent (and keeps it) */
uint64_t alive_deadline(void);        /* when alive_check is due (UINT64_MAX: never) */
/* The program's keepalive options (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT)
 * on fd, c's descriptor, under psp.lock (taken inside): kept aside while our probes are on
 * the socket. true with *r the call's result (errno set); false: another option. */
bool alive_getsockopt(struct conn *c, int fd, int level, int opt, void *val, socklen_t *len,
                      int *r);
bool alive_setsockopt(struct conn *c, int fd, int level, int opt, const void *val, socklen_t len,
                      int *r);

/* --- shm.c: the same-node path (under psp.lock) --- */
/* A hidden descriptor slot for a channel's doorbell, kept from before the negotiation (so
 * that a process at its descriptor limit stays on TCP instead of failing later), or -1. */
int shm_reserve(int any); /* any: an open descriptor to duplicate there */
/* Map the channel psid made (fds: the memfd, our end of the doorbell; both taken; the
 * doorbell goes to c->shm_slot) and make c CS_SHM. -1: it could not be used; c is reset
 * (and the peer told through the memfd). */
int shm_attach(struct conn *c, bool connector, uint32_t ring, const int fds[2]);
void shm_free(struct conn *c);
/* The mappings closed connections left (under psp.lock), for the progress thread to unmap
 * with shm_unmap_all after it let the lock go. */
struct shm_chan *shm_reap(void);
void shm_unmap_all(struct shm_chan *s);
void shm_sync(struct conn *c); /* the rings' state into c's fields */
/* The peer's SWITCH or SWITCH_ACK flag (0: none yet). */
uint32_t shm_peer_switch(const struct conn *c);
/* The peer process's pid as psid saw it (the channel's header), 0 if unknown. */
uint32_t shm_peer_pid(const struct conn *c);
/* The bytes of ours in the ring the peer did not read (it switched: it reads no more),
 * SIZE_MAX when the ring is broken; and a copy of n of them from the at-th on. */
size_t shm_unread(const struct conn *c);
void shm_unread_copy(const struct conn *c, size_t at, uint8_t *out, size_t n);
/* The progress thread watches the doorbell (on) while the connection moves to TCP. */
void shm_watch(struct conn *c, bool on);
bool shm_hup(const struct conn *c); /* the peer's end of the doorbell is closed */
/* Copy up to want bytes out (MSG_PEEK, MSG_TRUNC) into iov at offset done; bytes. */
size_t shm_read(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t want,
                int flags);
/* Our UP: the count of bytes we wrote to the kernel socket, before any byte of the ring. */
void shm_up(struct conn *c, uint64_t ktx);
/* Write CLOSE (RST: rst) into our ring of a channel we will not use (closed while it was
 * negotiated), through the memfd, and ring; both descriptors are closed. */
void shm_refuse(const int fds[2], bool connector, bool rst);
/* Copy up to n bytes (at most the ring's room) in from iov at offset done; bytes. */
size_t shm_write(struct conn *c, const struct iovec *iov, int iovcnt, size_t done, size_t n);
void shm_end(struct conn *c, uint32_t flag); /* PSHM_FIN, PSHM_CLOSE, PSHM_RST */
/* Ask the peer to ring our doorbell on what events (POLLIN, POLLOUT) wait for; what of
 * them is ready already (then the caller need not sleep). */
short shm_arm(struct conn *c, short events);
/* Ring me at the peer's next publish, whether or not there is something already (EPOLLET:
 * the next bytes are an edge too). */
void shm_want(struct conn *c, short events);
void shm_disarm(struct conn *c); /* the peer need not ring us (we look ourselves) */
/* Positions of c's rings as of the last look: bytes (and ends) that came, room that came;
 * each only grows (EPOLLET's edges, epoll.c). */
void shm_positions(const struct conn *c, uint64_t *in, uint64_t *out);
int shm_bell(const struct conn *c);    /* the doorbell to sleep on, or -1 */
int shm_bell_fd(const struct conn *c); /* the doorbell, to take out of epoll sets, or -1 */
void shm_bell_drain(struct conn *c);
/* Spin a while (adaptive) for bytes (data) or room, without psp.lock; whether they came. */
bool shm_spin(struct conn *c, bool data);
/* An adaptive spin's length: it doubles (up to PSP_SHM_SPIN) when what it waited for came
 * within it, halves after a few misses in a row, and tries its whole length now and then. */
struct spin {
    unsigned ns, misses, probes;
};
unsigned spin_budget(struct spin *sp);                      /* this wait's, in ns (0: none) */
void spin_adapt(struct spin *sp, unsigned budget, bool ok); /* after it: whether it came */

/* --- fork.c: the channel between a process and its forked children --- */
#define PSP_TAG_KID (1ull << 40) /* + a child's channel: its tag in the progress thread's epoll */
#define PSP_TAG_SHM (1ull << 41) /* + the kernel socket of a same-node connection moving to TCP */
void fork_prepare(void);         /* under both locks: a channel when a child may need it */
void fork_parent(void);
void fork_child(void);
/* a child: ask the owner of c's endpoint to move it to TCP; 0, or -1 (EIO) */
int fork_ask_switch(struct conn *c);
/* the progress thread: a child's channel is readable */
void fork_kid_ready(int fd);

/* --- signals.c --- */
void signals_init(void);
bool signals_all_restart(void); /* no handler without SA_RESTART is installed */

/* --- wait.c --- */
/* Wait until conn_changed(c) (or any of cs[0..n)), with psp.lock held on entry and exit.
 * timeout_ms < 0: forever; the kernel restarts or interrupts the wait as it would a socket
 * read (SA_RESTART). 0, or -1 and errno (EINTR, EAGAIN on timeout). */
int wait_conns(struct conn **cs, int n, int timeout_ms);
/* ... and, with kfd >= 0, until kfd has one of the poll events kev (a kernel socket). */
int wait_conns_k(struct conn **cs, int n, int timeout_ms, int kfd, short kev);
void wake_conn(struct conn *c);
void waiter_wake(struct waiter *w);
/* End the sleep of a thread in the RDP socket's read, and wait until it is over (without
 * psp.lock): the caller waits on the socket next */
void wait_direct_end(void);
/* Cancellation (wait.c): a wrapped call that may take psp.lock runs between psp_cancel_entry
 * (a pending cancellation acts there; psp_cancel_off where a lock may be held) and
 * psp_cancel_on(what it returned), which keeps errno; its sleeps are cancellation points,
 * as the program's thread allowed on entry, with a handler that undoes what the sleep set
 * up. The sleeping call must sit in a function of its own (the handler's frame is a setjmp). */
int psp_cancel_entry(void); /* psp_testcancel, then psp_cancel_off */
void psp_testcancel(void);  /* a pending cancellation acts here (hold nothing then) */
int psp_cancel_off(void);
void psp_cancel_on(int state);
int psp_cancel_prog(void);
/* A cancellation in the sleep runs handler(arg), then drops the wrapper's references
 * (fdt_release_held) */
struct psp_cleanup {
    void (*fn)(void *);
    void *arg;
};
void psp_sleep_cancelled(void *cleanup);
#define PSP_SLEEP_IN(handler, arg, call)                                                           \
    do {                                                                                           \
        struct psp_cleanup psp_cl_ = {(handler), (arg)};                                           \
        pthread_cleanup_push(psp_sleep_cancelled, &psp_cl_);                                       \
        if (psp_cancel_prog() == PTHREAD_CANCEL_ENABLE)                                            \
            pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);                                   \
        call;                                                                                      \
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);                                      \
        pthread_cleanup_pop(0);                                                                    \
    } while (0)
/* rdp_process for a program thread (under psp.lock), and re-arm the timer if need be */
void psp_rdp_process(void);
int wait_fd(void); /* the calling thread's eventfd that wakers write to */
/* PSP_BUSY_POLL: until when a wait may spin before sleeping (rdp_now_ns), 0: no spin (none
 * asked for, or the spin rule says sleep) */
uint64_t psp_busy_until(void);
/* The spin rule's mode now (enum spin_mode, spinrule.h; cosched.c samples the node's load
 * at most every millisecond) */
int psp_spin_mode(void);
void psp_spin_init(void); /* with the endpoint's descriptors: the load's (if a spin may come) */
void psp_spin_fork_child(void);
void waiters_add(struct conn **cs, int n, struct waiter *w, int fd);
void waiters_del(struct conn **cs, int n, struct waiter *w);

/* --- epoll.c --- */
void epoll_conn_gone(struct conn *c);
void epoll_set_closed(int epfd); /* the program closes a descriptor: if an epoll set, forget it */
void epoll_sets_closed(unsigned first, unsigned last); /* ... every one in [first, last] */
bool epoll_sets_held(void); /* whether the program has epoll sets holding connections */
void epoll_fd_closed(struct conn *c, int fd); /* the program closed fd: its registrations go */
void epoll_conn_to_tcp(struct conn *c);
void epoll_conn_to_shm(struct conn *c); /* its doorbell joins the sets it is in */
/* It moved onto the fast path: its registrations, on the kernel socket so far, go to its
 * bells (and its kernel socket joins the sets while reads take bytes from there). */
void epoll_conn_up(struct conn *c);
/* Before a connection asks (conn_negotiate): the bells its epoll registrations will need
 * once it moves up, made now. 0, or -1 (no descriptors: it stays on TCP, `limit`). Under
 * psp.lock. */
int epoll_conn_reserve(struct conn *c);
void epoll_conn_krx_done(struct conn *c); /* the kernel socket leaves the sets again */
void epoll_conn_unbell(struct conn *c);   /* and leaves them (before it is closed) */

/* --- bells.c --- */
void epoll_fork_child(void); /* a fork's child: no thread of its own sleeps in a wait */
void bells_update(struct conn *c);
void bells_forget(struct conn *c); /* it is destroyed: not due any more */

/* --- a connection's transport: its operations and what the transports share --- */
#include "xport.h"

#endif
