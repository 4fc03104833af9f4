/*
 * psproto.h - message types and field tags of psid's protocols (encoding: psmsg.h).
 *
 * Client protocol: a local program connects to its node's psid on a UNIX stream socket
 * (path: PSID_SOCKET, else PSI_DEFAULT_SOCKET) and sends requests; each reply carries the
 * request's id. psid identifies the caller with SO_PEERCRED and never reads a uid from a
 * message. Any request may be answered with PSM_ERROR (PSF_ERRNO, PSF_TEXT).
 *
 * Task ids: 64 bits, node id << 32 | pid, printed NODE:PID. A connected client is a task
 * of its node too (its tid: node << 32 | its pid). A job's id has the same form, its home
 * node and a number psid gives it, never reused (not the client's pid).
 *
 * Spawning a job (psrun):
 *   client -> PSM_SPAWN {PSF_ARG..., PSF_ENV..., PSF_CWD, PSF_UMASK, PSF_NP,
 *                        [PSF_NODE_ID... the partition, in order of preference],
 *                        [PSF_PPN], [PSF_OVERBOOK], [PSF_INPUT], [PSF_HOLD],
 *                        [PSF_DIST, PSF_PLANE], [PSF_NODES_MIN, PSF_NODES_MAX],
 *                        [PSF_EXCLUSIVE], [PSF_JOB_NAME]}
 *   psid   -> PSM_SPAWN_REPLY {PSF_JOB, PSF_NP}, or PSM_ERROR (no usable node, bad request)
 *             With PSF_HOLD the reply also has PSF_PLACEMENT (each rank's node) and nothing
 *             starts until the client sends PSM_SPAWN_GO {PSF_JOB} (or ends, ending the job):
 *             psrun names its output files after the job and the nodes before any rank runs.
 *   then, all with the SPAWN request's id, in this order per rank:
 *   psid   -> PSM_RANK {PSF_RANK, PSF_NODE_ID, PSF_TID}            rank started, or
 *             PSM_RANK {PSF_RANK, PSF_NODE_ID, PSF_ERRNO, PSF_TEXT} rank failed to start
 *             (PSF_ERRNO ENOENT: program not found, EACCES: not executable, ...;
 *             EHOSTDOWN: a node of the launch tree above its node was lost during the
 *             launch, so whether it started is unknown: a client ends the job, as for a
 *             lost node)
 *   psid   -> PSM_IO {PSF_RANK, PSF_STREAM (1 stdout, 2 stderr), PSF_DATA} output, in
 *             order per rank and stream; an empty PSF_DATA is end of that stream
 *   client -> PSM_IO_ACK {PSF_RANK, PSF_BYTES}: output consumed; a rank's node stops
 *             reading its pipes while PSI_IO_WINDOW bytes are unacknowledged (the task
 *             blocks, no daemon buffers grow)
 *   client -> PSM_INPUT {PSF_RANK, PSF_DATA}: stdin for a rank (PSF_RANK 0xffffffff: all
 *             ranks that take input); empty PSF_DATA closes it. psid answers
 *             PSM_INPUT_ACK {PSF_RANK, PSF_BYTES} when the data has been written to the
 *             task(s), so the client can keep at most PSI_IO_WINDOW bytes in flight.
 *   psid   -> PSM_EXIT {PSF_RANK, PSF_TID, PSF_STATUS (wait(2) status)} or
 *             PSM_EXIT {PSF_RANK, PSF_TID, PSF_NODE_ID, PSF_LOST} when the rank's node was lost;
 *             a rank's PSM_EXIT comes after all its output
 *   When the client's connection closes (psrun exits or dies) every task of the job gets
 *   SIGTERM, and SIGKILL kill_delay_ms later if it is still there.
 *
 * Signals:
 *   client -> PSM_SIGNAL {PSF_TID, PSF_SIGNAL} -> PSM_SIGNAL_REPLY {PSF_ERRNO}: 0, or
 *             kill(2)'s errors: ESRCH (no such task), EPERM (not yours), EINVAL (signal).
 *             The check happens on the task's node: root, or the same uid.
 *   client -> PSM_SIGNAL {PSF_JOB, PSF_SIGNAL} -> PSM_SIGNAL_REPLY {PSF_ERRNO, PSF_COUNT}:
 *             every task of the job (routed through the job's node).
 *
 * Notifications ("tell me when task T dies"):
 *   client -> PSM_NOTIFY {PSF_TID, PSF_SIGNAL} -> PSM_NOTIFY_REPLY {PSF_ERRNO}: when T ends,
 *             the client gets signal PSF_SIGNAL or, with PSF_SIGNAL 0, a message
 *             PSM_DEAD {PSF_TID, PSF_STATUS} (or {PSF_TID, PSF_LOST} when T's node is lost)
 *             with the NOTIFY request's id. ESRCH: no such task; EPERM: not root and not T's uid
 * (checked on T's node). A notification fires once. client -> PSM_RELEASE {PSF_TID} ->
 * PSM_NOTIFY_REPLY {PSF_ERRNO}: cancel it. Closing the connection releases every notification it
 * registered.
 *
 * Tasks:  client -> PSM_TASKS -> PSM_TASKS_REPLY {PSF_TASK records: PSF_TID, PSF_JOB,
 *             PSF_RANK, PSF_UID, PSF_STATE, PSF_CMD} for the whole cluster (each node
 *             answers for its own tasks; nodes that are down are skipped).
 *
 * RDP (psstat rdp): client -> PSM_RDP -> PSM_RDP_REPLY {PSF_SELF, PSF_MAC_IMPL, PSF_PKTS_SENT,
 *             PSF_PKTS_RECV, PSF_RETRANSMITS, PSF_DROP records (packets of no connection: bad
 *             MAC, unknown sender, ...), PSF_PEER records}: this daemon's RDP endpoint and
 *             its connection to each other node it has one with. Anyone may ask.
 *
 * Preload negotiation (docs/preload-design.md): a process under libpspreload, identified by
 * its connection (SO_PEERCRED), decides per TCP connection whether it travels over RDP (or
 * shared memory); the connection runs on the kernel's TCP meanwhile, and no request below
 * is waited for but OPEN, LISTEN and UNLISTEN. The requests about a socket carry it (SCM_RIGHTS,
 * one descriptor sent with the message's first byte): the endpoint's UDP socket (OPEN), a TCP
 * socket (LISTEN, CONNECT, ACCEPT, DECLINE); psid reads the addresses and ports from the kernel
 * (getsockname, getpeername, SO_ACCEPTCONN, and the socket's cookie and network namespace:
 * SO_COOKIE, SO_NETNS_COOKIE), never from the message, so a process can only speak for
 * sockets it holds; psid closes its copy at once. Every socket must be in its endpoint's
 * network namespace (EXDEV), and an endpoint in psid's or in one psid serves (made by root;
 * EPERM for a user's private namespace): docs/security.md, "The claim rule". Every reply is
 * PSM_PL_REPLY {PSF_ERRNO, [PSF_TEXT: why TCP]}, with more fields where said, but ACCEPT's:
 *   PSM_PL_OPEN + fd (its RDP endpoint's UDP socket, bound to the node's address; psid
 *             reads the port from it: EBADF without one, EADDRNOTAVAIL elsewhere; with
 *             {PSF_SAME_NODE 1}, or in a namespace other than psid's, same-node
 *             connections only, on any address; EPERM in a namespace psid does not serve;
 *             EOPNOTSUPP on a kernel that cannot name a socket's namespace) -> the
 *             endpoint: {PSF_NODE_ID, PSF_ENDPOINT, PSF_INCARNATION}. One per connection
 *             (EALREADY); it lives as long as the connection. The socket names it: the id
 *             is its port, the incarnation a hash of the boot and its cookie, so a process
 *             that opens its endpoint again with the same socket (psid restarted) gets the
 *             same name and pair keys; a socket names one endpoint at a time (EADDRINUSE).
 *   PSM_PL_LISTEN + fd (a listening TCP socket; EBADF without one, EINVAL if it does not
 *             listen) / PSM_PL_UNLISTEN {PSF_PORT}: a listening socket of the process, which
 *             counts for the connections the kernel would give it: to its address (or any,
 *             bound to the wildcard) and port, in its namespace (ENOTCONN without an
 *             endpoint, ENOBUFS past PSI_PL_LISTENS); UNLISTEN drops those of the port.
 *   PSM_PL_CONNECT {PSF_ADDR: destination address, PSF_PORT, PSF_CONN: the process's id for
 *             this connection} + fd (the socket, bound to the node's address, its kernel
 *             connect under way: the port is the kernel's choice) -> {PSF_ERRNO 0}:
 *             pending; the connector does not wait for this reply: the outcome comes as a
 *             PSM_PL_OUTCOME event once the destination process accepted the connection,
 *             or not in time, and so does any refusal, which means TCP at once:
 *             EHOSTUNREACH (not a cluster address), EXDEV (same node), ECONNREFUSED (no
 *             process under the library listens there), EADDRINUSE (listeners of several
 *             users would take it), ETIMEDOUT (its psid did not answer), ENOENT (accepted on TCP
 *             before the request came), ...
 * *             The destination psid keeps the connection by its 4-tuple for the acceptor.
 *             With {PSF_SAME_NODE 1, PSF_SHM_RING: the ring size wished} the destination is
 *             an address of this node (loopback, the node's, any local one): the socket
 *             may be unbound, connecting or connected (the connector does not wait for
 *             the reply: any refusal also comes as its PSM_PL_OUTCOME); the listener of
 *             that address and port is looked up here (or the one that closed lately,
 *             when the accepted socket is its user's), and the connection waits here, by
 *             its socket's cookie, for the acceptor.
 *   PSM_PL_ACCEPT {PSF_TAG: the acceptor's name for the connection} + fd (the accepted
 *             socket), answered by the event PSM_PL_ACCEPTED {PSF_TAG, PSF_ERRNO,
 *             [PSF_TEXT]}, with PSF_ERRNO 0 {PSF_NODE_ID, PSF_ENDPOINT, PSF_UDP_PORT,
 *             PSF_ADDR: the connector's endpoint, PSF_KEY: the pair's key, PSF_CONN: the
 *             connector's id for the connection}: RDP; ENOENT: TCP. Any process of the
 *             listener's uid with an endpoint may take it (prefork servers accept in the
 *             child), with the accepted socket itself: in psid's namespace the one
 *             sock_diag finds at its 4-tuple with its cookie, owned by that uid (EXDEV:
 *             not in the endpoint's namespace; ENOTCONN: not connected); before
 *             answering, the connector's psid checks that the connection is still the
 *             socket the connector registered (sock_diag: its cookie).
 *             A claim that comes before the request waits for it (docs/preload-design.md,
 *             "Who asks whom"). A same-node connection (the request says {PSF_SHM_RING 1}
 *             when the acceptor can take one; else TCP) is answered {PSF_CONN, PSF_SHM_RING}
 *             + two descriptors (include/psshm.h: the channel's memfd, the acceptor's end
 *             of the doorbell), and the connector's outcome the same with its own end: the
 *             shared-memory path instead of RDP.
 *   PSM_PL_DECLINE [{PSF_ERRNO ENOBUFS: why}] + fd (an accepted socket) -> {PSF_ERRNO 0}:
 *             its holder will not take it under the library (it is handed to a program
 *             through exec; or, with ENOBUFS, it is at a limit); the connector gets its
 *             outcome (ETIMEDOUT, or ENOBUFS: TCP) at once, or, when its request has not
 *             come yet, when it comes. ENOENT: no such connection waits,
 *             or the caller is not of the listener's uid; EPERM: the socket is in a
 *             namespace psid does not serve. No endpoint needed.
 *   PSM_PL_OUTCOME (event, id 0) {PSF_CONN, PSF_ERRNO, [PSF_TEXT]}, and with PSF_ERRNO 0 the
 *             acceptor's endpoint {PSF_NODE_ID, PSF_ENDPOINT, PSF_UDP_PORT, PSF_ADDR, PSF_KEY}:
 *             to the connector; any error means TCP (ETIMEDOUT: not accepted within
 *             PSI_PL_ACCEPT_MS, ...).
 *   PSM_PL_SOCKETS (psstat sockets; anyone) -> PSM_PL_SOCKETS_REPLY {PSF_SELF, PSF_SOCKET
 *             records: PSF_PID, PSF_UID, PSF_LOCAL, PSF_REMOTE, PSF_PATH, PSF_TX_BYTES,
 *             PSF_RX_BYTES}: every accelerated connection of the node's processes under the
 *             library. psid asks each of them (PSM_PL_QUERY, an event with PSF_REQ; one
 *             round at a time, shared by everyone who asks meanwhile, at least 100 ms
 *             after the last began; EBUSY past 8 askers waiting of one uid) and answers
 *             with what came within PSI_PL_QUERY_MS; each answers with
 *             PSM_PL_REPORT {PSF_REQ, PSF_SOCKET records without PSF_PID and PSF_UID, which
 *             psid adds from SO_PEERCRED}, which gets no reply.
 *   PSM_PL_NODE_LOST (event, id 0) {PSF_NODE_ID}: to every endpoint of the node when its
 *             psid declares that node down (also when it only restarted: a new
 *             incarnation). A doubt, not a verdict: the library asks each of its
 *             connections to processes there through its kernel TCP socket (keepalive
 *             probes, which the peer's kernel answers while the process lives, running or
 *             stopped), and ends those whose peer's kernel does not answer (ETIMEDOUT); an
 *             idle connection would otherwise never notice a dead node.
 * A pair key is per pair of endpoints: every connection between the same two processes is
 * carried by the same RDP connection, told apart by PSF_CONN (preload/wire.h).
 *
 * File broadcast (psbcast, psrun --bcast; psid/bcast.c, docs/psid-design.md "File broadcast"):
 *   client -> PSM_BCAST {PSF_BCAST_DEST: the destination, an absolute path in which %j (the
 *             broadcast's id, or its job's), %N (node name), %n (the node's index in the
 *             list below), %u (user) and %% are expanded on each node (logger/outfile.h;
 *             no %t), PSF_NODE_ID...: the nodes, in order (none: every node that is up),
 *             [PSF_BCAST_FLAGS: PSBCAST_F_*], [PSF_TREE_WIDTH: children per node, default
 *             psid.bcast_width], [PSF_JOB: a held spawn of this connection whose id the
 *             broadcast takes]} + fd: the file, open for reading (the client's: psid reads
 *             only what its user could). psid -> PSM_BCAST_REPLY {PSF_BCAST_ID, PSF_BYTES},
 *             or PSM_ERROR (EINVAL, EBADF: not a regular file open for reading, EHOSTDOWN,
 *             EAGAIN: over a limit, ESRCH: no such held spawn, EPERM: not vouched for)
 *   psid   -> PSM_BCAST_DONE (event, the PSM_BCAST's id) {PSF_BCAST_ID, PSF_COUNT: nodes that
 *             have the copy, PSF_N: nodes that failed, PSF_BCAST_FAIL records {PSF_NODE_ID,
 *             PSF_ERRNO, PSF_TEXT} (at most PSBCAST_FAILS of them), PSF_ELAPSED_US}
 *   Each node writes the copy as the user (its privileged child opens a temporary file
 *   beside the destination as the user), checks the whole file's BLAKE2b and only then
 *   renames it into place, mode & 0777 of the source. The copies are removed, as the user,
 *   when the connection closes, unless PSBCAST_F_KEEP.
 *
 * MPI jobs (PMI, docs/pmi.md): a PSM_SPAWN with {PSF_PMI: enum pspmi_mode} gives each rank
 * a PMI channel served by its node's psid (PMI_FD, PMI_RANK, PMI_SIZE in its environment).
 *   psid   -> PSM_PMI_EVENT {PSF_RANK, PSF_PMI_EVENT, [PSF_STATUS], [PSF_TEXT]} (event, the
 *             SPAWN request's id): PSPMI_EV_INIT, a rank started to use PMI (once per node:
 *             the job is an MPI job); PSPMI_EV_ABORT, a rank aborts the job (PSF_STATUS:
 *             its exit code, when the wire gave one; PSF_TEXT its message); PSPMI_EV_NOTE,
 *             PSF_TEXT says what a rank's PMI request broke (bounds, MPI_Comm_spawn, ...);
 *             PSPMI_EV_DEBUG, a job whose environment has PMI_DEBUG: PSF_TEXT is "> " and
 *             a request of the rank, or "< " and psid's answer, as on the wire.
 *   A rank's PSM_EXIT carries {PSF_PMI_STATE: enum pspmi_state} in a PMI job.
 *
 * Daemon protocol: messages between psids travel as RDP messages with the same encoding
 * (types from 0x1000 on); the uid in them comes from the originating node's SO_PEERCRED,
 * and RDP authenticates every packet with the cluster key.
 *
 * Numbers are never reused; new fields get new tags, and readers skip tags they do not know.
 */
#ifndef PSCLUSTER_PSPROTO_H
#define PSCLUSTER_PSPROTO_H

#define PSI_DEFAULT_SOCKET "/run/pscluster/psid.sock"
#define PSI_IO_WINDOW      (256u << 10) /* unacknowledged output/input bytes per rank */
#define PSI_ALL_RANKS      0xffffffffu
#define PSI_NO_RANK        0xfffffffeu
#define PSI_PL_LISTENS     256u   /* listening ports a preload process may register */
#define PSI_PL_QUERY_MS    500u   /* psstat sockets: how long psid waits for the processes */
#define PSI_PL_ACCEPT_MS   10000u /* a connection not accepted in this time goes TCP */

enum psm_type {
    PSM_ERROR = 1,        /* reply: PSF_ERRNO, PSF_TEXT */
    PSM_NODES = 10,       /* request: the node table */
    PSM_NODES_REPLY = 11, /* PSF_NODE records, PSF_SELF, PSF_MTU */
    PSM_SPAWN = 20,
    PSM_SPAWN_REPLY = 21,
    PSM_RANK = 22,
    PSM_IO = 23,
    PSM_IO_ACK = 24,
    PSM_INPUT = 25,
    PSM_INPUT_ACK = 26,
    PSM_EXIT = 27,
    /* {PSF_JOB}: start the ranks of a spawn that was held (PSF_HOLD); no reply, the job's
     * events follow */
    PSM_SPAWN_GO = 28,
    /* event {PSF_N: its place, 1 the first; PSF_TEXT: why}: with gang scheduling, the spawn
     * fits no row of the matrix and waits in the home node's queue; its PSM_SPAWN_REPLY (or
     * PSM_ERROR) comes when it starts. Closing the connection takes it out. */
    PSM_SPAWN_QUEUED = 29,
    PSM_SIGNAL = 30,
    PSM_SIGNAL_REPLY = 31,
    PSM_TASKS = 40,
    PSM_TASKS_REPLY = 41,
    PSM_NOTIFY = 50,
    PSM_NOTIFY_REPLY = 51,
    PSM_RELEASE = 52,
    PSM_DEAD = 53,
    PSM_RDP = 60,       /* request: this daemon's RDP endpoint and connections */
    PSM_RDP_REPLY = 61, /* PSF_SELF, endpoint totals, PSF_DROP and PSF_PEER records */
    PSM_PL_OPEN = 70,   /* preload negotiation (above) */
    PSM_PL_LISTEN = 71,
    PSM_PL_UNLISTEN = 72,
    PSM_PL_CONNECT = 73,
    PSM_PL_ACCEPT = 74,
    PSM_PL_REPLY = 75,
    PSM_PL_OUTCOME = 76, /* event: a PSM_PL_CONNECT's outcome */
    PSM_PL_SOCKETS = 77, /* psstat sockets */
    PSM_PL_SOCKETS_REPLY = 78,
    PSM_PL_QUERY = 79,   /* event: report your connections */
    PSM_PL_REPORT = 80,  /* the answer, no reply */
    PSM_PL_DECLINE = 81, /* an accepted socket its holder will not take: TCP at once */
    /* {PSF_PID}: a same-node connection of ours moves back to TCP; psid pokes that process
     * (its endpoint's client) with PSM_PL_POKED so that its progress thread looks at its
     * channels (the pid comes from the channel's header: a lie pokes a process for
     * nothing). No reply; at most PL_POKES_PER_S per client and PL_POKES_PER_UID per
     * user (but root) a second. */
    PSM_PL_POKE = 82,
    PSM_PL_POKED = 83,    /* event: look at your same-node channels */
    PSM_PL_ACCEPTED = 84, /* event: a PSM_PL_ACCEPT's answer */
    /* event {PSF_NODE_ID}: psid declared that node down; the library ends its connections to
     * processes there (ETIMEDOUT), which RDP alone notices only with data in flight */
    PSM_PL_NODE_LOST = 85,
    PSM_PMI_EVENT = 90, /* event: a PMI job's rank started PMI, aborts, or broke a rule */
    /* the last jobs whose client was on this node (psstat jobs --done): PSF_DONE records,
     * newest first; anyone may ask, and sees every user's */
    PSM_JOBS_DONE = 92,
    PSM_JOBS_DONE_REPLY = 93,
    /* the gang matrix as this node saw it in the last switch (psstat jobs): {PSF_QUANTUM_MS
     * (0: gang scheduling off; nothing else then), PSF_ROWS, PSF_ROW (the running row),
     * PSF_NODE_ID (the scheduler), PSF_GANG_JOB records, PSF_GANG_QUEUED records (this
     * node's queue)}; anyone may ask, and sees every user's */
    PSM_GANG = 94,
    PSM_GANG_REPLY = 95,
    PSM_BCAST = 100,       /* copy a file to node-local storage of nodes (above) */
    PSM_BCAST_REPLY = 101, /* PSF_BCAST_ID, PSF_BYTES: the broadcast is under way */
    PSM_BCAST_DONE = 102,  /* event: its outcome on every node */

    /* daemon to daemon (over RDP) */
    PSM_D_HELLO = 0x1000, /* PSF_NODE_ID, PSF_INCARNATION: sent when a connection comes up */
    PSM_D_SPAWN =
        0x1001, /* home -> target: start ranks (PSF_REQ, job, uid/gid, argv..., PSF_CRED) */
    PSM_D_RANK = 0x1002,      /* target -> home: one rank started or failed (PSF_REQ) */
    PSM_D_IO = 0x1003,        /* target -> home: output of a rank */
    PSM_D_IO_ACK = 0x1004,    /* home -> target: output consumed */
    PSM_D_INPUT = 0x1005,     /* home -> target: stdin for a rank */
    PSM_D_INPUT_ACK = 0x1006, /* target -> home: stdin written */
    PSM_D_EXIT = 0x1007,      /* target -> home: a rank ended */
    PSM_D_SIGNAL = 0x1008, /* any -> task's node: PSF_REQ, PSF_TID|PSF_JOB, PSF_SIGNAL, PSF_UID */
    PSM_D_SIGNAL_REPLY = 0x1009, /* PSF_REQ, PSF_ERRNO, PSF_COUNT */
    PSM_D_JOB_GONE = 0x100a,     /* home -> targets: the job's client is gone: end its tasks */
    PSM_D_TASKS = 0x100b,        /* PSF_REQ: list your tasks */
    PSM_D_TASKS_REPLY = 0x100c,  /* PSF_REQ, PSF_TASK records */
    PSM_D_NOTIFY =
        0x100d, /* watcher's node -> task's node: PSF_REQ, PSF_TID, PSF_WATCHER, PSF_UID */
    PSM_D_NOTIFY_REPLY = 0x100e, /* PSF_REQ, PSF_ERRNO */
    PSM_D_RELEASE = 0x100f,      /* PSF_TID, PSF_WATCHER */
    PSM_D_DEAD = 0x1010, /* task's node -> watcher's node: PSF_TID, PSF_WATCHER, PSF_STATUS */
    /* connector's node -> listener's node: PSF_REQ, PSF_PORT, PSF_SRC_PORT, PSF_CONN and the
     * connector's endpoint (PSF_ENDPOINT, PSF_INCARNATION, PSF_UID, PSF_UDP_PORT) */
    PSM_D_PL_CONNECT = 0x1011,
    /* PSF_REQ, PSF_ERRNO, [PSF_TEXT] */
    PSM_D_PL_CONNECT_REPLY = 0x1012,
    /* listener's node -> connector's node, on PSM_PL_ACCEPT: PSF_REQ, PSF_SRC_PORT (the
     * connector's port), PSF_PORT (the listener's), the acceptor's endpoint (PSF_ENDPOINT,
     * PSF_INCARNATION, PSF_UID, PSF_UDP_PORT). With {PSF_PROBE 1} (the acceptor's claim
     * came before the PSM_D_PL_CONNECT: the connector's SYN goes out before its request)
     * it only asks: EAGAIN, the connector's psid has the request and sent its
     * PSM_D_PL_CONNECT already (so it arrived first: claim again); ENOENT, it has none. */
    PSM_D_PL_CLAIM = 0x1013,
    PSM_D_PL_CLAIM_REPLY = 0x1014, /* PSF_REQ, PSF_ERRNO: 0 = the connector was told */
    /* listener's node -> connector's node: PSF_SRC_PORT, PSF_PORT: not accepted in time */
    PSM_D_PL_EXPIRED = 0x1015,
    /* a PMI fence (psid/pmifence.c): PSF_JOB, PSF_PMI_EPOCH, [PSF_MORE], (PSF_PMI_KEY,
     * PSF_PMI_VALUE)... or PSF_ERRNO, PSF_TEXT: child -> parent, its subtree's pairs */
    PSM_D_PMI_UP = 0x1016,
    PSM_D_PMI_DOWN = 0x1017, /* parent -> child: the fence's union, the same fields */
    /* rank's node -> home: PSF_JOB, PSF_RANK, PSF_PMI_EVENT, [PSF_STATUS], [PSF_TEXT] */
    PSM_D_PMI_EVENT = 0x1018,
    /* gang scheduling (docs/gang.md): scheduler -> every node that is up, {PSF_DATA: a gang
     * switch record, below}. No reply. */
    PSM_D_GANG_SWITCH = 0x1019,
    /* every node -> the scheduler: the jobs it has tasks of, (PSF_JOB, PSF_N tasks)... in
     * pairs; sent when its task table changed, the scheduler changed, and once a second */
    PSM_D_GANG_REPORT = 0x101a,
    /* the launch tree (psid/spawntree.c, docs/psid-design.md): parent -> child, the spawn
     * of the child's subtree: PSM_D_SPAWN's common fields once (PSF_REQ, PSF_JOB, PSF_UID,
     * PSF_GID, PSF_SIZE, argv..., [PSF_PMI, PSF_PMI_MAP]), PSF_TREE_WIDTH, and a PSF_PART
     * record per node of the subtree, the child's first, in increasing PSF_TREE_POS */
    PSM_D_SPAWN_TREE = 0x101b,
    /* child -> parent (or the home, its parent lost): {PSF_JOB, PSF_START records...} the
     * start answers of ranks of the child's subtree; one once all have answered, or more
     * when they would not fit one message */
    PSM_D_STARTED = 0x101c,
    /* child -> parent (or the home, its parent lost): {PSF_JOB, PSF_EXIT records...} the
     * ends of ranks of a launch tree's job in the sender's subtree (spawntree.c): sent when
     * the whole subtree has ended, at once for an end that ends the job (a status other
     * than 0, an MPI rank that did not finalize), or when they would not fit one message */
    PSM_D_EXITS = 0x1020,
    /* the home -> its children in the launch tree, each to its own: {PSF_JOB} the job has
     * ended; what the nodes kept of it goes */
    PSM_D_TREE_DONE = 0x1021,
    /* file broadcast (psid/bcast.c): parent -> child, the start of a broadcast to the
     * child's subtree: {PSF_BCAST_ID, PSF_UID, PSF_GID, PSF_BCAST_DEST, PSF_BYTES,
     * PSF_BCAST_MODE, PSF_BCAST_FLAGS, [PSF_BCAST_MTIME, PSF_BCAST_ATIME], PSF_BCAST_CHUNK,
     * PSF_TREE_WIDTH, a PSF_PART record per node of the subtree (PSF_NODE_ID, PSF_TREE_POS,
     * PSF_NODE_INDEX, [PSF_CRED: the node's broadcast credential; none: it only relays]),
     * the child's first, in increasing PSF_TREE_POS} */
    PSM_D_BCAST_OPEN = 0x1030,
    /* parent -> child: {PSF_BCAST_ID, PSF_N: the chunk's number from 0, PSF_DATA: its bytes
     * (PSF_BCAST_CHUNK of them, the last one the rest)}, in order, at most BCAST_WINDOW
     * (psid/bcastwire.h) beyond what the child acknowledged */
    PSM_D_BCAST_DATA = 0x1031,
    /* parent -> child, after the last chunk: {PSF_BCAST_ID, PSF_BCAST_SUM} */
    PSM_D_BCAST_END = 0x1032,
    /* child -> parent: {PSF_BCAST_ID, PSF_COUNT: chunks it passed on to every child of its
     * own (and wrote), so freed}; also once a second while the broadcast runs (it lives) */
    PSM_D_BCAST_ACK = 0x1033,
    /* child -> parent: the outcome in its subtree: {PSF_BCAST_ID, PSF_COUNT, PSF_N,
     * PSF_BCAST_FAIL records}, as PSM_BCAST_DONE */
    PSM_D_BCAST_DONE = 0x1034,
    /* parent -> child: {PSF_BCAST_ID}: the broadcast is over (its job ended: its client's
     * connection closed) or off (its source failed, the child was given up): remove the
     * copy, or drop the one being made, tell the children, forget it; no answer */
    PSM_D_BCAST_DROP = 0x1035,
};

/* The gang switch record (psid/gangwire.c), the PSF_DATA of PSM_D_GANG_SWITCH: fixed
 * layout, big-endian (network byte order), 40 + 12 x jobs bytes:
 *
 *   off size field
 *     0    1 version (GANG_WIRE_VERSION, 1)
 *     1    1 reserved (0)
 *     2    2 jobs: entries that follow, 0..GANG_WIRE_MAX_JOBS
 *     4    4 scheduler: the node id of the scheduler that sent it
 *     8    8 epoch: the scheduler's incarnation (CLOCK_REALTIME ns at its start); a record of
 *             an older epoch than the last one heard from that scheduler is dropped
 *    16    8 seq: switch number within the epoch, increasing
 *    24    8 at: CLOCK_REALTIME ns at which the switch takes effect on every node
 *    32    4 quantum_ms: how long the incoming row runs (1..3600000)
 *    36    2 row: the incoming (running) row, < rows
 *    38    2 rows: rows of the matrix, 1..GANG_WIRE_MAX_ROWS
 *    40 12xN entries, each:
 *          0    8 job id (psi_tid.h form: home node << 32 | number)
 *          8    2 row of the job, < rows; GANG_ROW_QUEUED (0xffff): queued, not started
 *         10    2 reserved (0)
 *
 * At `at` each node thaws the jobs of `row` and freezes every other listed job it has
 * tasks of; queued jobs have none yet. The length must be exactly 40 + 12 x jobs. */
#define GANG_WIRE_VERSION  1
#define GANG_WIRE_HEAD     40
#define GANG_WIRE_ENTRY    12
#define GANG_WIRE_MAX_JOBS 4096
#define GANG_WIRE_MAX_ROWS 64
#define GANG_ROW_QUEUED    0xffffu

enum psf_tag {
    PSF_ERRNO = 1,        /* u32 */
    PSF_TEXT = 2,         /* string */
    PSF_SELF = 3,         /* u32: the answering node's id */
    PSF_NODE_ID = 10,     /* u32 */
    PSF_NAME = 11,        /* string */
    PSF_ADDR = 12,        /* string: numeric address */
    PSF_STATE = 13,       /* u32: enum psnode_state, or enum pstask_state in a PSF_TASK */
    PSF_LOAD = 14,        /* u32: 1-minute load average x 1000 */
    PSF_TASKS = 15,       /* u32: a node's CPUs used (its tasks' -c added up) */
    PSF_CPUS = 16,        /* u32 */
    PSF_INCARNATION = 17, /* u64 */
    PSF_AGE_MS = 18,      /* u32: ms since the node was last heard from */
    PSF_ARG = 20,         /* string, repeated: argv in order */
    PSF_ENV = 21,         /* string "NAME=VALUE", repeated */
    PSF_CWD = 22,         /* string */
    PSF_UMASK = 23,       /* u32 */
    PSF_NP = 24,          /* u32: number of ranks */
    PSF_PPN = 25,         /* u32: at most this many ranks per node (0: no limit) */
    PSF_OVERBOOK = 26,    /* u32: 1 = more ranks than CPUs allowed */
    PSF_INPUT = 27,       /* u32: the rank that gets stdin, PSI_ALL_RANKS or PSI_NO_RANK */
    PSF_JOB = 28,         /* u64: job id: home node << 32 | psid's number for it */
    PSF_RANK = 29,        /* u32 */
    PSF_TID = 30,         /* u64 */
    PSF_STREAM = 31,      /* u32: 0 stdin, 1 stdout, 2 stderr */
    PSF_DATA = 32,        /* bytes */
    PSF_BYTES = 33,       /* u64: a byte count */
    PSF_STATUS = 34,      /* u32: wait(2) status */
    PSF_LOST = 35,        /* u32: 1 = the rank's node was lost */
    PSF_SIGNAL = 36,      /* u32 */
    PSF_COUNT = 37,       /* u32 */
    PSF_UID = 38,         /* u32 */
    PSF_GID = 39,         /* u32 */
    PSF_CMD = 40,         /* string: the task's program */
    PSF_REQ = 41,         /* u32: a daemon's request number, echoed in the answer */
    PSF_SIZE = 42,        /* u32: ranks in the job (PSI_SIZE) */
    PSF_HOME = 43,        /* u32: the node the job's client runs on */
    PSF_WATCHER = 44,     /* u64: the tid of a client waiting for a notification */
    PSF_EPOCH = 45,       /* u32: a node's task epoch (with PSF_TASKS) */
    /* RDP counters (PSM_RDP_REPLY; u64 unless said otherwise) */
    PSF_PKTS_SENT = 50,    /* datagrams, with ACKs and retransmissions */
    PSF_PKTS_RECV = 51,    /* datagrams */
    PSF_MSGS_SENT = 52,    /* whole messages */
    PSF_MSGS_RECV = 53,    /* whole messages */
    PSF_RETRANSMITS = 54,  /* data packets sent again */
    PSF_TIMEOUTS = 55,     /* retransmission timer expiries */
    PSF_CONNECTS = 56,     /* connections established */
    PSF_LOSSES = 57,       /* connections lost */
    PSF_OUT_OF_ORDER = 58, /* data packets that arrived ahead of a gap */
    PSF_N = 59,            /* a count (with PSF_TEXT in a PSF_DROP record) */
    PSF_SRTT_US = 60,      /* u32: smoothed RTT */
    PSF_RTTVAR_US = 61,    /* u32 */
    PSF_RTO_US = 62,       /* u32 */
    PSF_CWND = 63,         /* u32: packets */
    PSF_PEER_WND = 64,     /* u32: packets the peer lets us send */
    PSF_RCV_WND = 65,      /* u32: packets we let the peer send */
    PSF_INFLIGHT = 66,     /* u32: packets sent and not acknowledged */
    PSF_QUEUED = 67,       /* bytes accepted and not yet acknowledged */
    PSF_PAYLOAD = 68,      /* u32: message bytes per data packet */
    PSF_MAC = 69,          /* string: the MAC of the packets sent on the connection */
    PSF_MAC_IMPL = 70,     /* string: the library computing this endpoint's MACs */
    PSF_ENDPOINT = 80,     /* u32: an RDP endpoint id on its node (preload) */
    PSF_PORT = 81,         /* u32: a TCP port */
    PSF_SRC_PORT = 82,     /* u32: a TCP port: the connector's own */
    PSF_UDP_PORT = 83,     /* u32: an RDP endpoint's UDP port */
    PSF_KEY = 84,          /* bytes (32): a pair of endpoints' key */
    PSF_CONN = 85,         /* u32: a preload connection's id, chosen by its connector */
    PSF_MTU = 86,          /* u32: the link MTU the node's RDP uses (PSM_NODES_REPLY) */
    PSF_PID = 87,          /* u32: a process id */
    PSF_LOCAL = 88,        /* string: a socket's local address and port, "ADDR:PORT" */
    PSF_REMOTE = 89,       /* string: its peer's */
    PSF_PATH = 90,         /* string: what carries a connection: "rdp" or "shm" */
    PSF_TX_BYTES = 91,     /* u64: bytes sent */
    PSF_RX_BYTES = 92,     /* u64: bytes received */
    PSF_SAME_NODE = 93,    /* u32 1: PSM_PL_CONNECT to an address of this node */
    PSF_SHM_RING = 94,     /* u32: a same-node channel's ring bytes (include/psshm.h) */
    PSF_PROBE = 95,        /* u32 1: PSM_D_PL_CLAIM only asks whether the connection exists */
    PSF_TAG = 96,          /* u32: an acceptor's name for a connection it claims (PSM_PL_ACCEPT) */
    PSF_CRED = 97,      /* bytes: a spawn credential for the node (PSM_D_SPAWN; psid/spawncred.h) */
    PSF_PMI = 98,       /* u32: enum pspmi_mode (PSM_SPAWN, PSM_D_SPAWN) */
    PSF_PMI_STATE = 99, /* u32: enum pspmi_state (PSM_D_EXIT, PSM_EXIT) */
    PSF_PMI_PARENT = 100, /* u32: the node's parent in the job's fence tree (none: the root) */
    PSF_PMI_CHILD = 101,  /* u32, repeated: its children */
    PSF_PMI_MAP = 102,    /* string: PMI_process_mapping */
    PSF_PMI_EPOCH = 103,  /* u32: the number of a fence, from 0 */
    PSF_PMI_KEY = 104,    /* bytes: a key of the job's KVS */
    PSF_PMI_VALUE = 105,  /* bytes: its value (after its PSF_PMI_KEY) */
    PSF_MORE = 106,       /* u32 1: more messages of this part follow */
    PSF_PMI_EVENT = 107,  /* u32: enum pspmi_event */
    /* u32 1 (PSM_SPAWN): place the ranks and answer, but start nothing before PSM_SPAWN_GO
     * (psrun opens its output files in between: they may name the job and the nodes) */
    PSF_HOLD = 120,
    /* bytes (PSM_SPAWN_REPLY of a held spawn): each rank's node id, u32 big-endian, by rank */
    PSF_PLACEMENT = 121,
    PSF_DIST = 122,      /* u32 (PSM_SPAWN): enum psdist, how ranks are numbered over nodes */
    PSF_PLANE = 123,     /* u32: ranks per node in turn with PSDIST_PLANE (srun's plane=N) */
    PSF_NODES_MIN = 124, /* u32 (PSM_SPAWN): use at least this many nodes (srun's -N) */
    PSF_NODES_MAX = 125, /* u32: and at most this many */
    /* u32 1 (PSM_SPAWN, PSM_D_SPAWN): no other job's task on the job's nodes while it runs */
    PSF_EXCLUSIVE = 126,
    PSF_JOB_NAME = 127, /* string (PSM_SPAWN, PSM_D_SPAWN, PSF_TASK): the job's name (-J) */
    /* CPUs and memory (PSM_SPAWN, copied to PSM_D_SPAWN; include/pscpus.h) */
    PSF_CPUS_PER_TASK = 128, /* u32 >= 1: CPUs each rank counts for in placement (srun's -c) */
    PSF_CPU_BIND = 129,      /* u32: enum psbind, | PSBIND_VERBOSE (srun's --cpu-bind) */
    PSF_CPU_MAP = 130,       /* string: map_cpu's or mask_cpu's LIST */
    PSF_MEM = 131,           /* u64 > 0: bytes per node, the job's memory.max there (--mem) */
    PSF_MEM_PER_CPU = 132,   /* u64 > 0: bytes per CPU of the job's ranks on a node */
    /* string (PSM_RANK, PSM_D_RANK): the CPUs the rank is bound to, "" if it is not */
    PSF_CPU_LIST = 133,
    /* u64 (PSM_EXIT, PSM_D_EXIT): the OOM killer ended the rank; the node's limit in bytes */
    PSF_OOM = 134,
    /* usage (PSM_EXIT, PSM_D_EXIT of a rank, PSF_NODE_STATS, PSF_DONE records), u64 */
    PSF_ELAPSED_US = 135,  /* wall clock from the start */
    PSF_USER_US = 136,     /* user CPU time */
    PSF_SYS_US = 137,      /* system CPU time */
    PSF_MAXRSS = 138,      /* bytes: largest resident set (a node: its cgroup's memory.peak) */
    PSF_READ_BYTES = 139,  /* bytes read (a rank: rchar; a node: io.stat rbytes) */
    PSF_WRITE_BYTES = 140, /* bytes written (a rank: wchar; a node: io.stat wbytes) */
    PSF_START_S = 141,     /* u64: CLOCK_REALTIME seconds of a job's start (PSF_DONE) */
    PSF_END_S = 142,       /* u64: and of its end */
    /* --output-on-node (PSM_SPAWN, copied to PSM_D_SPAWN; in the spawn credential's digest
     * with PSF_JOB_NAME): -o's and -e's filename patterns (logger/outfile.h), opened by the
     * rank's node as the user; PSF_OPEN_APPEND u32 1: append, else the first rank of the
     * job on the node to open a file truncates it */
    PSF_OUT_PATTERN = 143,
    PSF_ERR_PATTERN = 144,
    PSF_OPEN_APPEND = 145,
    PSF_NODE_INDEX = 146, /* u32 (PSM_D_SPAWN): the node's index among the job's (%n) */
    PSF_QUANTUM_MS = 147, /* u32 (PSM_GANG_REPLY): gang.quantum_ms */
    PSF_ROWS = 148,       /* u32: rows of the matrix */
    PSF_ROW = 149,        /* u32: a row (the running one, or a job's) */
    PSF_QUANTA = 150,     /* u32: switches a job was in the matrix for */
    PSF_RAN = 151,        /* u32: of them, those its row ran */
    PSF_WAITED_MS = 152,  /* u32: a queued spawn waited so long */
    PSF_TREE_POS = 153,   /* u32 (PSF_PART): the node's place in the launch tree, 1.. */
    PSF_TREE_WIDTH = 154, /* u32 (PSM_D_SPAWN_TREE): children per node, psid.tree_width */
    /* file broadcast (PSM_BCAST, PSM_D_BCAST_*) */
    PSF_BCAST_ID = 170,    /* u64: home node << 32 | a number (a held job's when it has one) */
    PSF_BCAST_DEST = 171,  /* string: the destination pattern */
    PSF_BCAST_FLAGS = 172, /* u32: PSBCAST_F_* */
    PSF_BCAST_MODE = 173,  /* u32: the source's permission bits (& 0777) */
    PSF_BCAST_MTIME = 174, /* u64: the source's times, CLOCK_REALTIME ns (PSBCAST_F_PRESERVE) */
    PSF_BCAST_ATIME = 175,
    PSF_BCAST_SUM = 176,   /* bytes (32): BLAKE2b-256 of the whole file */
    PSF_BCAST_CHUNK = 177, /* u32: bytes per chunk, 4096..PSBCAST_CHUNK_MAX */
    /* u32 1 (PSM_SPAWN, PSM_D_SPAWN): the first PSF_ARG is a pattern like PSF_BCAST_DEST's,
     * expanded on each node (the copy psrun --bcast made there) */
    PSF_ARG0_PATTERN = 178,

    PSF_NODE = 0x8001,   /* record: PSF_NODE_ID, PSF_NAME, PSF_ADDR, PSF_STATE, ... */
    PSF_TASK = 0x8002,   /* record: PSF_TID, PSF_JOB, PSF_RANK, PSF_UID, PSF_STATE, PSF_CMD */
    PSF_PEER = 0x8003,   /* record: PSF_NODE_ID, PSF_STATE (enum psrdp_state), the counters
                          * and estimates above, PSF_DROP records */
    PSF_DROP = 0x8004,   /* record: PSF_TEXT (reason, e.g. "mac"), PSF_N (packets dropped) */
    PSF_SOCKET = 0x8005, /* record: an accelerated connection (PSM_PL_SOCKETS_REPLY) */
    /* record (PSM_D_EXIT, PSM_EXIT of a node's last rank of the job): PSF_NODE_ID and the
     * job's usage there from its cgroup (cpu.stat, memory.peak, io.stat), the fields it has */
    PSF_NODE_STATS = 0x8006,
    /* record (PSM_JOBS_DONE_REPLY): a job that ended: PSF_JOB, PSF_JOB_NAME, PSF_UID, PSF_NP,
     * PSF_STATUS (the first failed rank's wait status, else 0), PSF_START_S, PSF_END_S and its
     * usage totals */
    PSF_DONE = 0x8007,
    /* record (PSM_GANG_REPLY): a job of the matrix: PSF_JOB, PSF_ROW, PSF_QUANTA, PSF_RAN */
    PSF_GANG_JOB = 0x8008,
    /* record (PSM_GANG_REPLY): a spawn in this node's queue: PSF_N (its place), PSF_UID, PSF_NP,
     * PSF_WAITED_MS */
    PSF_GANG_QUEUED = 0x8009,
    /* record (PSM_D_SPAWN_TREE): one node's part of the spawn: PSF_NODE_ID, PSF_TREE_POS,
     * PSF_RANK..., PSF_NODE_INDEX, PSF_CRED, [PSF_PMI_PARENT, PSF_PMI_CHILD...] */
    PSF_PART = 0x800a,
    /* record (PSM_D_STARTED): a rank's start: PSF_RANK, PSF_NODE_ID and PSF_TID
     * [PSF_CPU_LIST], or PSF_ERRNO, PSF_TEXT */
    PSF_START = 0x800b,
    /* record (PSM_D_EXITS): a rank's end: the fields of its PSM_D_EXIT (PSF_JOB, PSF_RANK,
     * PSF_TID, PSF_STATUS, usage, ...) and PSF_NODE_ID, the node it ran on */
    PSF_EXIT = 0x8010,
    /* record (PSM_BCAST_DONE, PSM_D_BCAST_DONE): a node without its copy: PSF_NODE_ID,
     * PSF_ERRNO, PSF_TEXT */
    PSF_BCAST_FAIL = 0x8011,
};

/* File broadcast (PSM_BCAST) */
#define PSBCAST_F_FORCE    1u /* replace a file already there (sbcast -f) */
#define PSBCAST_F_PRESERVE 2u /* the source's modification and access times (sbcast -p) */
#define PSBCAST_F_KEEP     4u /* leave the copies when the connection closes (psbcast) */
#define PSBCAST_F_ALL      7u
#define PSBCAST_CHUNK_MAX  (512u << 10) /* bytes per chunk at most (a message: PSMSG_MAX) */
#define PSBCAST_FAILS      32u          /* PSF_BCAST_FAIL records at most per answer */
#define PSBCAST_DEST_MAX   1024u        /* bytes of a destination pattern, and of its expansion */

enum psdist { /* PSF_DIST: srun's -m */
              PSDIST_BLOCK = 0,
              PSDIST_CYCLIC = 1,
              PSDIST_PLANE = 2,
};

enum psrdp_state { /* PSF_STATE in a PSF_PEER record */
                   PSRDP_CLOSED = 0,
                   PSRDP_CONNECTING = 1, /* handshake sent, no answer yet */
                   PSRDP_ESTABLISHED = 2,
};

enum psnode_state {
    PSNODE_DOWN = 0, /* never heard from, declared dead, or left: its tasks are gone */
    PSNODE_UP = 1,
    PSNODE_UNREACHABLE = 2, /* silent (heartbeats or RDP) for less than heartbeat.down_grace_ms:
                             * no new work goes there, its tasks are still counted as running */
};

enum pstask_state {
    PSTASK_RUNNING = 1,
    PSTASK_EXITED = 2, /* exited, output still draining */
};

enum pspmi_mode { /* PSF_PMI: the PMI a job's ranks get */
                  PSPMI_MODE_NONE = 0,
                  PSPMI_MODE_PMI1 = 1, /* PMI_FD, PMI_RANK, PMI_SIZE, PMI_SPAWNED */
                  PSPMI_MODE_PMI2 = 2, /* the same and PMI_JOBID */
                  PSPMI_MODE_MAX = 2,
};

enum pspmi_state {                 /* PSF_PMI_STATE: a rank's PMI at its end */
                   PSPMI_NONE = 0, /* never spoke PMI */
                   PSPMI_INIT = 1, /* spoke PMI, did not finalize */
                   PSPMI_FINALIZED = 2,
};

enum pspmi_event { /* PSF_PMI_EVENT */
                   PSPMI_EV_INIT = 1,
                   PSPMI_EV_ABORT = 2,
                   PSPMI_EV_NOTE = 3,
                   PSPMI_EV_DEBUG = 4, /* PMI_DEBUG: "> request" or "< answer" in PSF_TEXT */
};

/* Messages psid sends on its own, not as the reply to a request (libpsi queues them as
 * events): a job's progress (with the SPAWN request's id) and death notifications (with the
 * NOTIFY request's id). Every other message to a client is the one reply to its request. */
static inline int psm_is_event(unsigned type)
{
    return type == PSM_RANK || type == PSM_IO || type == PSM_INPUT_ACK || type == PSM_EXIT ||
           type == PSM_DEAD || type == PSM_PL_OUTCOME || type == PSM_PL_QUERY ||
           type == PSM_PL_POKED || type == PSM_PL_ACCEPTED || type == PSM_PL_NODE_LOST ||
           type == PSM_PMI_EVENT || type == PSM_SPAWN_QUEUED || type == PSM_BCAST_DONE;
}

/* Task ids */
#define PSTID(node, pid) ((uint64_t)(node) << 32 | (uint32_t)(pid))
#define PSTID_NODE(tid)  ((uint32_t)((tid) >> 32))
#define PSTID_PID(tid)   ((int32_t)(uint32_t)(tid))

#endif
