/*
 * client.c - psid's UNIX socket for local clients (psrun, pskill, psstat, user programs).
 *
 * Any local user may connect (mode 0666); SO_PEERCRED at accept says who the caller is,
 * and that, never a field of a message, decides what it may do. Requests are psmsg
 * messages framed by their length field; each gets one reply with the request's id. A
 * malformed frame is answered with PSM_ERROR (EBADMSG) and the connection is closed after
 * the reply. Requests are not read while more than OUT_SOFT bytes wait for the client (the
 * back-pressure TCP gives); a client that does not read what it gets (job output, bounded
 * by the output window per rank) is dropped past OUT_BASE plus a window per rank. Request
 * buffers of all clients together stay within IN_BUDGET.
 *
 * Descriptors go both ways with SCM_RIGHTS on the first byte of their message, sent alone:
 * the kernel ends a read after a byte that carries descriptors, so the receiver gives them
 * to the message that starts at the last byte of that read. A client passes one with a
 * request (psi_call_fd, client_take_fd); psid passes up to CLIENT_OUT_FDS with a message
 * (client_send_fds), as duplicates kept with the stream offset of its first byte until
 * that byte is sent.
 *
 * Limits (psid.conf): max_clients connections in all, of which the last ROOT_RESERVE are
 * root's only, and max_clients_per_uid per uid but root; a connection over a limit gets
 * PSM_ERROR EUSERS with the limit and is closed, and the uid is logged once. A client that
 * sends nothing for client_idle_s and holds nothing is closed. Out of descriptors, accept
 * gives up a spare one to take and refuse the connection instead of spinning.
 *
 * A send never runs other work (Redis: writing to a client never runs that client's
 * input). client_send, client_send_fds and client_error only queue the message and put the
 * client on the list of those with output to write; nothing is written and no request is
 * read or handled inside them. The loop's before-wait hook (clients_before_wait), which runs
 * once per iteration when no callback is on the stack, writes what was queued, then resumes
 * the requests of clients that had been held back behind their unread replies and now take
 * them again (Redis resumes paused clients in beforeSleep), then frees the dead clients,
 * and goes round again while that made more to do (a bounded number of rounds; the rest in
 * the next iteration, which then does not sleep). A client's own callback (its socket
 * readable or writable) reads and handles its requests and writes its output, but never
 * handles requests it had held back while its replies were waiting.
 *
 * A client is never freed where its connection fails. client_kill() only marks it dead and
 * takes its socket out of the loop: a dead client is still valid memory, sends to it are
 * dropped, and its requests are no longer read. The other modules hear of it (jobs,
 * pending requests, notifications) and it is freed in clients_reap(), in the before-wait
 * hook (Redis's freeClientAsync). So a module may send to any client while it walks its own
 * lists: the send changes nothing but that client's queue, and the client stays valid
 * memory until the walk is over.
 */
#include "clientint.h"
#include "daemon.h"
#include "fdflight.h"
#include "module.h"
#include "log.h"
#include "psmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define ROOT_RESERVE 64 /* of max_clients: connections only root may take */
#define IDLE_SCAN_NS (5000000000ull)
/* Replies and job output waiting for a client. Output is flow-controlled per rank
 * (PSI_IO_WINDOW), so a job of N ranks needs up to N windows; beyond this the client is
 * not reading at all and is dropped. */
#define OUT_BASE (4u << 20) /* plus PSI_IO_WINDOW (and framing) per rank of its job */
/* Requests are not read while more than this waits for the client (the back-pressure TCP
 * gives): a client that asks and never reads costs at most this, not what it asks for. */
#define OUT_SOFT (256u << 10)
/* Request buffers of all clients together (a frame is read whole, up to PSMSG_MAX) */
#define IN_BUDGET (64u << 20)

#define HOOK_ROUNDS 16 /* of writes, resumed requests and reaping in one before-wait hook */

static void fl_arm(struct psid *d);
static struct fdflight *fl_of(const struct client *c);

/* Close the descriptors queued to be passed with the first k sets, and forget the sets:
 * sent (the client has them, or will when it reads), or not to be sent. */
static void drop_out_fds(struct client *c, unsigned k, bool sent)
{
    if (!k) return;
    unsigned n = 0;
    for (unsigned i = 0; i < k; i++) {
        n += c->ofds[i].n;
        for (unsigned j = 0; j < c->ofds[i].n; j++) close(c->ofds[i].fds[j]);
    }
    c->fl_queued -= n;
    if (sent)
        c->fl_sent += n;
    else
        fdflight_sub(fl_of(c), client_uid(c), n);
    c->nofds -= k;
    memmove(c->ofds, c->ofds + k, c->nofds * sizeof c->ofds[0]);
}

/* Nothing more is sent: what waits goes, with its descriptors. */
static void discard_out(struct client *c)
{
    c->out_pos += c->outlen;
    c->outlen = c->outoff = 0;
    drop_out_fds(c, c->nofds, false);
}

static void close_fds(struct client *c, uint64_t upto)
{
    unsigned k = 0;
    for (unsigned i = 0; i < c->nfds; i++) {
        if (c->fd_at[i] <= upto) {
            close(c->fds[i]);
        } else {
            c->fds[k] = c->fds[i];
            c->fd_at[k++] = c->fd_at[i];
        }
    }
    c->nfds = k;
}

int client_take_fd(struct client *c)
{
    for (unsigned i = 0; i < c->nfds; i++)
        if (c->fd_at[i] == c->msg_at) {
            int fd = c->fds[i];
            c->fds[i] = c->fds[--c->nfds];
            c->fd_at[i] = c->fd_at[c->nfds];
            return fd;
        }
    return -1;
}

static struct uid_count *uid_slot(struct clients *cs, uint32_t uid, bool add)
{
    for (size_t i = 0; i < cs->nuids; i++)
        if (cs->uids[i].uid == uid) return &cs->uids[i];
    if (!add) return NULL;
    if (cs->nuids == cs->capuids) {
        size_t n = cs->capuids ? cs->capuids * 2 : 16;
        struct uid_count *v = realloc(cs->uids, n * sizeof *v);
        if (!v) return NULL;
        cs->uids = v;
        cs->capuids = n;
    }
    cs->uids[cs->nuids] = (struct uid_count){.uid = uid};
    return &cs->uids[cs->nuids++];
}

static void uid_release(struct clients *cs, uint32_t uid)
{
    struct uid_count *u = uid ? uid_slot(cs, uid, false) : NULL;
    if (!u) return;
    if (--u->n == 0) *u = cs->uids[--cs->nuids];
}

/* The connection is over: no more reading or sending. Freed later by clients_reap. */
void client_kill(struct client *c)
{
    if (c->dead) return;
    c->dead = true;
    discard_out(c);
    loop_fd_del(c->d->loop, c->fd);
    c->next_dead = c->d->clients->dead;
    c->d->clients->dead = c;
}

/* Tell the other modules, then free. They may send to other clients, which may die too:
 * those join the list and are reaped in the same call. */
static void client_free(struct client *c)
{
    struct clients *cs = c->d->clients;
    modules_client_gone(c->d, c);
    for (struct client **pp = &cs->writes; c->want_write && *pp; pp = &(*pp)->next_write)
        if (*pp == c) {
            *pp = c->next_write;
            break;
        }
    for (struct client **pp = &cs->held; c->held && *pp; pp = &(*pp)->next_held)
        if (*pp == c) {
            *pp = c->next_held;
            break;
        }
    if (c->pidfd >= 0) close(c->pidfd);
    close_fds(c, UINT64_MAX);
    for (struct client **pp = &cs->list; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    cs->n--;
    cs->in_total -= c->incap;
    uid_release(cs, client_uid(c));
    if (c->fl_sent && fdflight_unread(c->fd)) { /* the kernel counts them until read */
        fdflight_linger(cs->fl, c->fd, client_uid(c), c->fl_sent);
        fl_arm(c->d);
    } else {
        fdflight_sub(cs->fl, client_uid(c), c->fl_sent);
        close(c->fd);
    }
    free(c->in);
    free(c->out);
    free(c->ofds);
    free(c);
}

void clients_reap(void *ctx)
{
    struct psid *d = ctx;
    struct clients *cs = d->clients;
    while (cs && cs->dead) {
        struct client *c = cs->dead;
        cs->dead = c->next_dead;
        client_free(c);
    }
}

/* Output was queued for c: the hook writes it. */
static void want_write(struct client *c)
{
    struct clients *cs = c->d->clients;
    if (c->dead || c->want_write) return;
    c->want_write = true;
    c->next_write = cs->writes;
    cs->writes = c;
}

/* c has whole requests it does not handle while its replies wait: the hook resumes them once
 * it takes its replies again. */
static void hold(struct client *c)
{
    struct clients *cs = c->d->clients;
    if (c->dead || c->held) return;
    c->held = true;
    c->next_held = cs->held;
    cs->held = c;
}

static void on_client(void *ctx, uint32_t events);

static size_t unsent(const struct client *c)
{
    return c->outlen - c->outoff;
}

/* Requests are read while the client takes its replies. */
static bool reading(const struct client *c)
{
    return !c->closing && unsent(c) <= OUT_SOFT;
}

static void set_events(struct client *c)
{
    uint32_t ev = (reading(c) ? EPOLLIN : 0) | (unsent(c) && !c->fl_blocked ? EPOLLOUT : 0);
    loop_fd(c->d->loop, c->fd, ev, on_client, c);
}

void client_drop(struct client *c)
{
    c->closing = true;
    want_write(c); /* closed once what is queued is written */
}

static void process_input(struct client *c);

/* Send the byte at out[outoff] with the descriptors of set o (sendmsg, SCM_RIGHTS). */
static ssize_t send_fds(struct client *c, const struct out_fds *o)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(CLIENT_OUT_FDS * sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {c->out + c->outoff, 1};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(o->n * sizeof(int))};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(o->n * sizeof(int));
    memcpy(CMSG_DATA(cm), o->fds, o->n * sizeof(int));
    return sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Write what waits, as far as the socket takes it; a closing client is closed once all is
 * written. Never handles a request: one held back behind the replies is left to the hook.
 * Returns false if the client was closed. */
bool client_flush_out(struct client *c)
{
    if (c->dead) return false;
    if (c->fl_blocked) { /* the timer tries again (fl_tick) */
        set_events(c);
        return true;
    }
    while (c->outoff < c->outlen) {
        /* plain bytes up to the next set's byte, which goes alone with its set */
        uint64_t pos = c->out_pos + c->outoff;
        size_t n = c->outlen - c->outoff;
        bool with_fds = c->nofds && c->ofds[0].at == pos;
        if (c->nofds && !with_fds && c->ofds[0].at - pos < n) n = c->ofds[0].at - pos;
        ssize_t w = with_fds ? send_fds(c, &c->ofds[0])
                             : send(c->fd, c->out + c->outoff, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            if (with_fds && (errno == ETOOMANYREFS || errno == ENOBUFS || errno == ENOMEM)) {
                /* psid's user has too many descriptors in flight (all clients', all psids'
                 * of that user), or the kernel is short of memory: back-pressure, not this
                 * client's doing. The set waits and is tried again (fl_tick). */
                c->fl_blocked = true;
                fl_arm(c->d);
                break;
            }
            client_kill(c);
            return false;
        }
        if (with_fds && w > 0) {
            drop_out_fds(c, 1, true); /* the client holds them now */
            if (c->sets_full && c->nofds <= CLIENT_OUT_SETS / 2) {
                c->sets_full = false;
                modules_client_room(c->d, c); /* (the preload only schedules its retry) */
            }
        }
        c->outoff += (size_t)w;
    }
    if (c->outoff == c->outlen) {
        c->out_pos += c->outlen;
        c->outoff = c->outlen = 0;
        if (c->closing) {
            client_kill(c);
            return false;
        }
    }
    set_events(c);
    return true;
}

/* The byte limit of what may wait for c (see queue_reply). */
static size_t out_limit(const struct client *c)
{
    return OUT_BASE + (size_t)jobs_client_ranks(c->d, c) * (PSI_IO_WINDOW + (64u << 10));
}

/* Queue finished message b for the client. 0, or -1 if it was not (the client is closed). */
static int queue_reply(struct client *c, struct psmsg_buf *b)
{
    if (psmsg_end(b) < 0) {
        log_err("reply to pid %d: %s", (int)c->cred.pid, strerror(errno));
        c->closing = true;
        return -1;
    }
    if (unsent(c) + b->len > out_limit(c)) {
        log_warn("client pid %d does not read what it gets (%zu bytes waiting); dropped",
                 (int)c->cred.pid, unsent(c));
        c->closing = true;
        discard_out(c);
        return -1;
    }
    if (c->outoff && c->outoff >= c->outlen / 2) { /* sent bytes make room */
        memmove(c->out, c->out + c->outoff, unsent(c));
        c->outlen -= c->outoff;
        c->out_pos += c->outoff;
        c->outoff = 0;
    }
    if (c->outlen + b->len > c->outcap) {
        size_t cap = c->outcap ? c->outcap : 4096;
        while (cap < c->outlen + b->len) cap *= 2;
        uint8_t *o = realloc(c->out, cap);
        if (!o) {
            c->closing = true;
            return -1;
        }
        c->out = o;
        c->outcap = cap;
    }
    memcpy(c->out + c->outlen, b->data, b->len);
    c->outlen += b->len;
    return 0;
}

static void reply_error(struct client *c, uint32_t id, int err, const char *text)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_ERROR, id);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    psmsg_put_str(&b, PSF_TEXT, text);
    queue_reply(c, &b);
    psmsg_buf_free(&b);
}

/* A message for the client (job events, answers that came from other nodes): queued, and
 * written by the loop's before-wait hook. Nothing else runs. */
void client_send(struct client *c, struct psmsg_buf *b)
{
    if (c->dead) return;
    queue_reply(c, b);
    want_write(c);
}

static struct fdflight *fl_of(const struct client *c)
{
    return c->d->clients->fl;
}

/* The client read everything sent to it: what it was sent is no longer in flight. */
static void fl_taken(struct client *c)
{
    fdflight_sub(c->d->clients->fl, client_uid(c), c->fl_sent);
    c->fl_sent = 0;
}

/* Whether n more descriptors may be queued for c (fdflight.h). When the count says no,
 * the clients of its uid that may have read what they were sent are looked at first; when
 * it still says no, the timer looks again (fl_tick) and tells the modules of room. */
static bool fl_room(struct client *c, unsigned n)
{
    struct clients *cs = c->d->clients;
    uint32_t uid = client_uid(c);
    if (fdflight_room(cs->fl, uid, c->fl_sent + c->fl_queued, n)) return true;
    for (struct client *o = cs->list; o; o = o->next)
        if (!o->dead && o->fl_sent && client_uid(o) == uid && !fdflight_unread(o->fd)) fl_taken(o);
    if (fdflight_room(cs->fl, uid, c->fl_sent + c->fl_queued, n)) return true;
    c->fl_waiting = true;
    fl_arm(c->d);
    return false;
}

/* Every 20 ms while a client waits for room or a send was refused, or a gone client's
 * socket holds descriptors: what was read is no longer counted; room is told; refused
 * sends are tried again. */
#define FL_TICK_NS 20000000ull
static void fl_tick(void *ctx)
{
    struct psid *d = ctx;
    struct clients *cs = d->clients;
    cs->fl_timer = 0;
    bool more = fdflight_poll(cs->fl);
    for (struct client *c = cs->list; c; c = c->next)
        if (!c->dead && c->fl_sent && !fdflight_unread(c->fd)) fl_taken(c);
    for (struct client *c = cs->list; c; c = c->next) {
        if (c->dead) continue;
        if (c->fl_blocked) {
            c->fl_blocked = false;
            want_write(c);
        }
        if (c->fl_waiting &&
            fdflight_room(cs->fl, client_uid(c), c->fl_sent + c->fl_queued, CLIENT_OUT_FDS)) {
            c->fl_waiting = false;
            if (c->sets_full && c->nofds < CLIENT_OUT_SETS) {
                c->sets_full = false;
                modules_client_room(d, c);
            }
        }
        more |= c->fl_waiting;
    }
    if (more) fl_arm(d);
}

static void fl_arm(struct psid *d)
{
    struct clients *cs = d->clients;
    if (!cs->fl_timer) cs->fl_timer = loop_timer(d->loop, loop_now() + FL_TICK_NS, fl_tick, d);
}

bool client_fds_room(struct client *c, size_t len)
{
    if (c->dead || c->closing) return false;
    if (c->nofds < CLIENT_OUT_SETS && unsent(c) + len + PSMSG_HDR <= out_limit(c) &&
        fl_room(c, CLIENT_OUT_FDS))
        return true;
    c->sets_full = true;
    return false;
}

/* A set queued with its message: counted in flight from now. */
static void out_fds_add(struct client *c, const struct out_fds *o)
{
    c->ofds[c->nofds++] = *o;
    c->fl_queued += o->n;
    fdflight_add(c->d->clients->fl, client_uid(c), o->n);
}

int client_send_fds_pair(struct client *a, struct psmsg_buf *ba, const int *fa, unsigned na,
                         struct client *b, struct psmsg_buf *bb, const int *fb, unsigned nb)
{
    if (na > CLIENT_OUT_FDS || nb > CLIENT_OUT_FDS) {
        errno = EINVAL;
        return -1;
    }
    /* (one process may be both ends: then it needs room for both) */
    if (a == b ? !client_fds_room(a, ba->len + bb->len) || a->nofds + 2 > CLIENT_OUT_SETS ||
                     !fl_room(a, na + nb)
               : !client_fds_room(a, ba->len) || !client_fds_room(b, bb->len)) {
        if (a == b) a->sets_full = true;
        errno = ENOBUFS;
        return -1;
    }
    if ((!a->ofds && !(a->ofds = malloc(CLIENT_OUT_SETS * sizeof *a->ofds))) ||
        (!b->ofds && !(b->ofds = malloc(CLIENT_OUT_SETS * sizeof *b->ofds))))
        return -1;
    /* every duplicate first: nothing is queued unless both can be */
    struct out_fds oa = {.at = 0, .n = 0}, ob = {.at = 0, .n = 0};
    for (; oa.n < na; oa.n++)
        if ((oa.fds[oa.n] = fcntl(fa[oa.n], F_DUPFD_CLOEXEC, 0)) < 0) break;
    for (; oa.n == na && ob.n < nb; ob.n++)
        if ((ob.fds[ob.n] = fcntl(fb[ob.n], F_DUPFD_CLOEXEC, 0)) < 0) break;
    if (oa.n < na || ob.n < nb) {
        int e = errno;
        for (unsigned i = 0; i < oa.n; i++) close(oa.fds[i]);
        for (unsigned i = 0; i < ob.n; i++) close(ob.fds[i]);
        errno = e;
        return -1;
    }
    /* the room was checked: queueing fails only out of memory, and then this client is
     * dropped (closing), which its peer sees as a peer gone. Each set's offset is its
     * message's first byte (a stream offset: it stays so through compaction), taken just
     * before it is queued (a and b may be one client) */
    oa.at = a->out_pos + a->outlen;
    if (queue_reply(a, ba) == 0)
        out_fds_add(a, &oa);
    else
        for (unsigned i = 0; i < oa.n; i++) close(oa.fds[i]);
    ob.at = b->out_pos + b->outlen;
    if (queue_reply(b, bb) == 0)
        out_fds_add(b, &ob);
    else
        for (unsigned i = 0; i < ob.n; i++) close(ob.fds[i]);
    want_write(a);
    want_write(b);
    return 0;
}

int client_send_fds(struct client *c, struct psmsg_buf *b, const int *fds, unsigned n)
{
    if (c->dead || c->closing) {
        errno = EPIPE;
        return -1;
    }
    if (n > CLIENT_OUT_FDS) {
        errno = EINVAL;
        return -1;
    }
    if (n && (c->nofds == CLIENT_OUT_SETS || !fl_room(c, n))) {
        errno = ENOBUFS;
        return -1;
    }
    if (n && !c->ofds && !(c->ofds = malloc(CLIENT_OUT_SETS * sizeof *c->ofds))) return -1;
    struct out_fds o = {.at = c->out_pos + c->outlen, .n = 0}; /* stays so through compaction */
    for (; o.n < n; o.n++)
        if ((o.fds[o.n] = fcntl(fds[o.n], F_DUPFD_CLOEXEC, 0)) < 0) break;
    int e = errno;
    if (o.n < n || queue_reply(c, b) < 0) {
        for (unsigned i = 0; i < o.n; i++) close(o.fds[i]);
        errno = o.n < n ? e : EPIPE;
        return -1;
    }
    if (n) out_fds_add(c, &o);
    want_write(c);
    return 0;
}

void client_error(struct client *c, uint32_t id, int err, const char *text)
{
    if (c->dead) return;
    reply_error(c, id, err, text);
    want_write(c);
}

uint32_t client_uid(const struct client *c)
{
    return (uint32_t)c->cred.uid;
}

pid_t client_pid(const struct client *c)
{
    return c->cred.pid;
}

int client_fd(const struct client *c)
{
    return c->fd;
}

uint32_t client_gid(const struct client *c)
{
    return (uint32_t)c->cred.gid;
}

void client_signal(struct client *c, int sig)
{
    /* psid's engine may not signal other users' processes: its privileged child does */
    if (!c->dead && c->pidfd >= 0) priv_signal_fd(c->d, c->pidfd, sig);
}

uint64_t client_tid(const struct client *c)
{
    return PSTID(c->d->self->id, c->cred.pid);
}

static void handle_nodes(struct client *c, const struct psmsg *m)
{
    struct psid *d = c->d;
    struct psmsg_buf b = {0};
    uint64_t now = loop_now();
    psmsg_begin(&b, PSM_NODES_REPLY, m->id);
    psmsg_put_u32(&b, PSF_SELF, d->self->id);
    psmsg_put_u32(&b, PSF_MTU, d->conf.mtu);
    for (size_t i = 0; i < d->conf.nnodes; i++) {
        const struct psid_node *n = &d->nodes[i];
        psmsg_record_begin(&b, PSF_NODE);
        psmsg_put_u32(&b, PSF_NODE_ID, n->conf->id);
        psmsg_put_str(&b, PSF_NAME, n->conf->name);
        psmsg_put_str(&b, PSF_ADDR, n->conf->addr_str);
        psmsg_put_u32(&b, PSF_STATE, n->state);
        psmsg_put_u32(&b, PSF_LOAD, n->load_milli);
        psmsg_put_u32(&b, PSF_TASKS, n->used);
        psmsg_put_u32(&b, PSF_CPUS, n->cpus);
        psmsg_put_u64(&b, PSF_INCARNATION, n->incarnation);
        if (n->conf != d->self && n->last_heard) {
            uint64_t age = (now - n->last_heard) / 1000000;
            psmsg_put_u32(&b, PSF_AGE_MS, age > UINT32_MAX ? UINT32_MAX : (uint32_t)age);
        }
        psmsg_record_end(&b);
    }
    queue_reply(c, &b);
    psmsg_buf_free(&b);
}

static void handle_rdp(struct client *c, const struct psmsg *m)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_RDP_REPLY, m->id);
    psmsg_put_u32(&b, PSF_SELF, c->d->self->id);
    rdplink_put_stats(c->d, &b);
    queue_reply(c, &b);
    psmsg_buf_free(&b);
}

static void dispatch(struct client *c, const uint8_t *frame, size_t len)
{
    struct psmsg m;
    if (psmsg_parse(frame, len, &m) < 0) {
        reply_error(c, 0, errno, "malformed request");
        c->closing = true;
        return;
    }
    const struct psid_module *mod = modules_request(c->d, m.type);
    if (m.type == PSM_NODES)
        handle_nodes(c, &m);
    else if (m.type == PSM_RDP)
        handle_rdp(c, &m);
    else if (mod)
        mod->request(c->d, c, &m);
    else
        reply_error(c, m.id, EOPNOTSUPP, "unknown request type");
}

/* Handle the whole requests in the buffer, while the client takes its replies; what is left
 * while too much waits for it is held back for the hook. */
static void process_input(struct client *c)
{
    if (c->in_dispatch) return;
    size_t off = 0;
    while (!c->closing && !c->dead && reading(c) && c->inlen - off >= PSMSG_HDR) {
        uint32_t flen = psmsg_frame_len(c->in + off, c->inlen - off);
        if (!flen) {
            reply_error(c, 0, EBADMSG, "malformed frame");
            c->closing = true;
            break;
        }
        if (c->inlen - off < flen) break;
        c->in_dispatch = true;
        c->msg_at = c->in_pos + off;
        dispatch(c, c->in + off, flen);
        c->in_dispatch = false;
        off += flen;
        close_fds(c, c->in_pos + off - 1); /* passed with it and not taken */
    }
    memmove(c->in, c->in + off, c->inlen - off);
    c->inlen -= off;
    c->in_pos += off;
    if (!c->dead && !c->closing && c->inlen >= PSMSG_HDR && !reading(c)) hold(c);
    want_write(c); /* its replies */
}

/* Room for the next read: the buffer grows to a whole frame, within the clients' budget.
 * false: the client was closed. */
static bool in_room(struct client *c)
{
    if (c->incap - c->inlen >= 4096) return true;
    struct clients *cs = c->d->clients;
    size_t cap = c->incap ? c->incap * 2 : 8192;
    if (cap > PSMSG_MAX + 8192) cap = PSMSG_MAX + 8192;
    if (cap <= c->incap || cs->in_total - c->incap + cap > IN_BUDGET) {
        log_warn("client pid %d: no room for its request (%zu bytes buffered, %zu in all); "
                 "closed",
                 (int)c->cred.pid, c->inlen, cs->in_total);
        client_kill(c);
        return false;
    }
    uint8_t *in = realloc(c->in, cap);
    if (!in) {
        client_kill(c);
        return false;
    }
    cs->in_total += cap - c->incap;
    c->in = in;
    c->incap = cap;
    return true;
}

/* Read what the client sent, with the descriptors passed along (at most CLIENT_FDS waiting:
 * more, or a truncated set, and the client is closed, the descriptors with it). */
static ssize_t recv_fds(struct client *c)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(CLIENT_FDS * sizeof(int))];
    } u;
    struct iovec iov = {c->in + c->inlen, c->incap - c->inlen};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    bool bad = mh.msg_flags & MSG_CTRUNC;
    for (struct cmsghdr *cm = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            if (r <= 0 || c->nfds == CLIENT_FDS) {
                close(fd);
                bad = true;
                continue;
            }
            c->fds[c->nfds] = fd;
            c->fd_at[c->nfds++] = c->in_pos + c->inlen + (size_t)r - 1;
        }
    }
    if (bad) {
        log_warn("client pid %d: passed more descriptors than allowed; closed", (int)c->cred.pid);
        errno = EPROTO;
        return -1;
    }
    return r;
}

static void on_client(void *ctx, uint32_t events)
{
    struct client *c = ctx;
    if (c->dead || (events & EPOLLOUT && !client_flush_out(c))) return;
    /* requests held back while it did not read its replies are resumed by the hook */
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || !reading(c)) return;
    for (;;) {
        if (!in_room(c)) return;
        ssize_t r = recv_fds(c);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            client_kill(c);
            return;
        }
        if (r < 0) break;
        c->inlen += (size_t)r;
        c->active = loop_now();
        process_input(c);
        if (c->closing || c->dead || !reading(c)) break;
    }
    client_flush_out(c);
}

static void again(void *ctx)
{
    struct psid *d = ctx;
    d->clients->again = 0; /* the hook runs after the timers */
}

/* Whether a held client takes its replies again (its requests can be resumed). */
static bool held_ready(const struct clients *cs)
{
    for (const struct client *c = cs->held; c; c = c->next_held)
        if (!c->dead && reading(c)) return true;
    return false;
}

/* The loop's before-wait hook: output queued since it last ran is written; requests held
 * back behind unread replies are resumed where the client takes its replies again; dead
 * clients are freed. Each step may give the others more to do: up to HOOK_ROUNDS rounds,
 * and if work is left the loop is kept from sleeping (a timer due at once). */
void clients_before_wait(void *ctx)
{
    struct psid *d = ctx;
    struct clients *cs = d->clients;
    for (int round = 0; cs && round < HOOK_ROUNDS; round++) {
        if (!cs->writes && !cs->dead && !held_ready(cs)) return;
        struct client *c = cs->writes, *next;
        cs->writes = NULL;
        for (; c; c = next) {
            next = c->next_write;
            c->want_write = false;
            client_flush_out(c);
        }
        c = cs->held;
        cs->held = NULL;
        for (; c; c = next) {
            next = c->next_held;
            c->held = false;
            if (c->dead) continue;
            if (reading(c))
                process_input(c); /* holds it again if its replies pile up again */
            else
                hold(c);
        }
        clients_reap(d);
    }
    if (cs && (cs->writes || cs->dead || held_ready(cs)) && !cs->again)
        cs->again = loop_timer(d->loop, loop_now(), again, d);
}

/* Answer a connection that may not stay with PSM_ERROR (why) and close it. */
static void refuse(int fd, int err, const char *why)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_ERROR, 0);
    psmsg_put_u32(&b, PSF_ERRNO, (uint32_t)err);
    psmsg_put_str(&b, PSF_TEXT, why);
    if (psmsg_end(&b) == 0) (void)!send(fd, b.data, b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
    psmsg_buf_free(&b);
    close(fd);
}

/* Out of descriptors: give up the spare one, take the connection, close it, take the spare
 * back. The queue drains instead of waking the loop forever (as libuv and nginx do). */
static void refuse_no_fd(struct psid *d)
{
    struct clients *cs = d->clients;
    if (cs->spare_fd >= 0) close(cs->spare_fd);
    int fd = accept4(cs->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) refuse(fd, EMFILE, "psid is out of file descriptors");
    cs->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    uint64_t now = loop_now();
    if (!cs->fd_warned || now - cs->fd_warned > 60000000000ull) {
        log_warn("out of file descriptors (%u clients): refusing clients", cs->n);
        cs->fd_warned = now;
    }
}

/* The limits: max_clients in all, the last ROOT_RESERVE for root; max_clients_per_uid per
 * uid but root's. 0, or -1 after refusing the connection. */
static int admit(struct psid *d, int fd, const struct ucred *cr)
{
    struct clients *cs = d->clients;
    unsigned all = d->conf.max_clients;
    unsigned cap = cr->uid == 0 || all <= ROOT_RESERVE ? all : all - ROOT_RESERVE;
    char why[160];
    if (cs->n >= cap) {
        snprintf(why, sizeof why, "too many clients of psid (limit %u%s)", cap,
                 cr->uid ? ", the rest kept for root" : "");
        refuse(fd, EUSERS, why);
        return -1;
    }
    if (cr->uid == 0) return 0;
    struct uid_count *u = uid_slot(cs, cr->uid, true);
    if (!u) {
        refuse(fd, ENOMEM, "out of memory");
        return -1;
    }
    if (u->n >= d->conf.max_clients_uid) {
        snprintf(why, sizeof why, "too many connections of uid %u (limit %u)", (unsigned)cr->uid,
                 d->conf.max_clients_uid);
        if (!u->warned) log_warn("%s; refusing more", why);
        u->warned = true;
        refuse(fd, EUSERS, why);
        return -1;
    }
    if (u->n < d->conf.max_clients_uid / 2) u->warned = false;
    u->n++;
    return 0;
}

void clients_on_accept(void *ctx, uint32_t events)
{
    struct psid *d = ctx;
    (void)events;
    for (;;) {
        int fd = accept4(d->clients->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) refuse_no_fd(d);
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        if (admit(d, fd, &cr) < 0) continue;
        struct client *c = calloc(1, sizeof *c);
        if (!c) {
            uid_release(d->clients, cr.uid);
            refuse(fd, ENOMEM, "out of memory");
            continue;
        }
        c->d = d;
        c->fd = fd;
        c->cred = cr;
        c->active = loop_now();
        c->pidfd = (int)syscall(SYS_pidfd_open, c->cred.pid, 0);
        c->next = d->clients->list;
        d->clients->list = c;
        d->clients->n++;
        if (loop_fd(d->loop, fd, EPOLLIN, on_client, c) < 0) client_kill(c);
        log_debug("client pid %d uid %d connected", (int)c->cred.pid, (int)c->cred.uid);
    }
}

static bool client_busy(struct client *c)
{
    struct psid *d = c->d;
    return c->outlen > c->outoff || modules_client_busy(d, c);
}

/* Close clients that sent nothing for client_idle_s and hold nothing. */
static void idle_scan(void *ctx)
{
    struct psid *d = ctx;
    struct clients *cs = d->clients;
    uint64_t now = loop_now(), idle = (uint64_t)d->conf.client_idle_s * 1000000000ull;
    for (struct client *c = cs->list; c; c = c->next)
        if (!c->dead && now - c->active >= idle && !client_busy(c)) {
            log_info("client pid %d uid %d idle for %u s: closed", (int)c->cred.pid,
                     (int)c->cred.uid, d->conf.client_idle_s);
            client_kill(c);
        }
    uint64_t every = idle / 4 < IDLE_SCAN_NS ? idle / 4 : IDLE_SCAN_NS;
    cs->idle_timer = loop_timer(d->loop, now + (every ? every : 1), idle_scan, d);
}

/* A leftover socket from a daemon that died is removed; a live one is an error. */
static int claim_path(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISSOCK(st.st_mode)) {
        errno = EEXIST;
        return -1;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int r = fd >= 0 ? connect(fd, (struct sockaddr *)&a, sizeof a) : -1;
    int e = errno;
    if (fd >= 0) close(fd);
    if (r == 0) {
        errno = EADDRINUSE;
        return -1;
    }
    if (e != ECONNREFUSED) {
        errno = e;
        return -1;
    }
    return unlink(path);
}

int clients_start(struct psid *d)
{
    if (modules_start(d) < 0) { /* what each request type goes to */
        errno = EINVAL;
        return -1;
    }
    struct clients *cs = calloc(1, sizeof *cs);
    if (!cs) return -1;
    d->clients = cs;
    cs->lfd = -1;
    cs->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!(cs->fl = fdflight_new())) return -1;
    char rel[sizeof cs->path], cwd[sizeof cs->path];
    if (psconf_socket_path(&d->conf, d->self->id, rel, sizeof rel) < 0) {
        log_err("client socket path: %s", strerror(errno));
        return -1;
    }
    /* absolute: the daemon changes to / when it detaches, and removes the socket at exit */
    if (rel[0] != '/') {
        if (!getcwd(cwd, sizeof cwd)) {
            log_err("client socket path %s: %s", rel, strerror(errno));
            return -1;
        }
        if (snprintf(cs->path, sizeof cs->path, "%s/%s", cwd, rel) >= (int)sizeof cs->path) {
            log_err("client socket path %s/%s: %s", cwd, rel, strerror(ENAMETOOLONG));
            return -1;
        }
    }
    if (rel[0] == '/') strcpy(cs->path, rel);
    char dir[sizeof cs->path];
    strcpy(dir, cs->path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            log_err("%s: %s", dir, strerror(errno));
            return -1;
        }
    }
    if (claim_path(cs->path) < 0) {
        log_err("%s: %s%s", cs->path, strerror(errno),
                errno == EADDRINUSE ? " (another psid runs here)" : "");
        return -1;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, cs->path);
    cs->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (cs->lfd < 0 || bind(cs->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
        chmod(cs->path, 0666) < 0 || listen(cs->lfd, 128) < 0 ||
        loop_fd(d->loop, cs->lfd, EPOLLIN, clients_on_accept, d) < 0) {
        log_err("client socket %s: %s", cs->path, strerror(errno));
        return -1;
    }
    loop_set_before_wait(d->loop, clients_before_wait, d);
    if (d->conf.client_idle_s) cs->idle_timer = loop_timer(d->loop, loop_now(), idle_scan, d);
    log_info("clients: %s (at most %u, %u per uid)", cs->path, d->conf.max_clients,
             d->conf.max_clients_uid);
    return 0;
}

const char *clients_socket_path(const struct psid *d)
{
    return d->clients ? d->clients->path : "";
}

void clients_stop(struct psid *d)
{
    struct clients *cs = d->clients;
    if (!cs) return;
    loop_set_before_wait(d->loop, NULL, NULL);
    loop_timer_cancel(d->loop, cs->idle_timer);
    loop_timer_cancel(d->loop, cs->again);
    loop_timer_cancel(d->loop, cs->fl_timer);
    for (struct client *c = cs->list; c; c = c->next) client_kill(c);
    clients_reap(d);
    fdflight_free(cs->fl);
    free(cs->uids);
    if (cs->spare_fd >= 0) close(cs->spare_fd);
    if (cs->lfd >= 0) {
        loop_fd_del(d->loop, cs->lfd);
        close(cs->lfd);
        unlink(cs->path);
    }
    free(cs);
    d->clients = NULL;
}
