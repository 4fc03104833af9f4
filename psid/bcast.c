/*
 * bcast.c - file broadcast (docs/psid-design.md, "File broadcast"; psproto.h): a file a
 * client passes (psbcast, psrun --bcast) copied to node-local storage of many nodes down a
 * tree of their psids (the launch tree's shape, bcastwire.h), pipelined in chunks: each node
 * writes a chunk and forwards it to its children as soon as it has it.
 *
 * Every node of a broadcast, the home too, runs one state machine (struct bx):
 *   - chunks come in order: from the client's file at the home (pread), from the parent
 *     elsewhere (PSM_D_BCAST_DATA); each is written to the node's copy (a temporary file its
 *     privileged child opened as the user, privbcast.c), hashed, and held in a ring of
 *     BCAST_WINDOW slots until it has been sent to every child;
 *   - flow control per child: a child is sent at most BCAST_WINDOW chunks beyond those it
 *     acknowledged (PSM_D_BCAST_ACK: the chunks it passed on to all its own children), so a
 *     node never holds more than BCAST_WINDOW chunks of a broadcast, nor has more than that
 *     unacknowledged toward each child: memory per broadcast and node is bounded by
 *     BCAST_WINDOW x chunk x (1 + children), whatever the file's size or a child's speed;
 *   - after the last chunk the parent's PSM_D_BCAST_END brings the whole file's BLAKE2b,
 *     which the home computed as it read; a node whose copy has that sum has its child
 *     rename it into place (mode, times, no replacement without PSBCAST_F_FORCE), else the
 *     copy is dropped and the node fails with the reason;
 *   - outcomes go up: a node answers its parent (PSM_D_BCAST_DONE: nodes with the copy,
 *     nodes without and why) once its own copy and all its children's subtrees are settled;
 *     the home then tells the client (PSM_BCAST_DONE).
 * A node's failure (cannot create, write, checksum) fails that node only: it still relays.
 * A child lost (membership's node-lost hook), or silent for BCAST_STALL_NS (a running node
 * says it lives every BCAST_ALIVE_NS), is given up: its subtree's nodes fail, naming it, and
 * the broadcast goes on without it; so a broadcast always ends. A node whose parent or home
 * is lost drops its copy and tells its children.
 * After the broadcast the nodes keep a record of it until the client's connection closes
 * (the job is over): then the home sends PSM_D_BCAST_DROP down the tree and every node has
 * its copy removed, as the user (not with PSBCAST_F_KEEP: then nothing is kept). A client
 * that goes while its broadcast runs has it dropped the same way.
 * Limits: BCAST_PER_UID broadcasts of a user and BCAST_MAX in all under way on a node (the
 * home refuses with EAGAIN, another node fails its subtree with the reason), and
 * BCAST_KEPT_MAX finished ones waiting for their removal. Malformed or out-of-place
 * messages are dropped and counted (d->bcast_dropped).
 */
#include "bcastwire.h"
#include "daemon.h"
#include "log.h"
#include "module.h"
#include "psi_bcast.h"
#include "treewire.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_NODE UINT32_MAX
#define PUMP_NS 2000000ull /* the most of the daemon's time one pump of a broadcast takes */

enum kid_state { KID_RUN, KID_DONE, KID_FAILED };

/* One node of a subtree. */
struct bsub {
    uint32_t node;
    bool target; /* has a copy made (a credential came for it) */
};

struct bkid {
    uint32_t node;
    struct bsub *sub; /* its subtree, itself first (into bx->sub) */
    size_t nsub;
    uint32_t sent, acked; /* chunks sent to it; of them, passed on by it */
    bool end_sent;
    uint8_t state;
    uint64_t heard; /* loop_now() of its last message, or of the open */
};

struct bfail {
    uint32_t node;
    int err;
    char text[300];
};

struct bx {
    uint64_t id;
    uint32_t home, parent; /* parent NO_NODE: this is the home, the source is the client's file */
    uint32_t uid, gid, flags, mode, chunk, nchunks, width;
    uint64_t size, mtime, atime;
    char dest[PSBCAST_DEST_MAX];
    bool running; /* false: settled here, kept until its job is over */
    /* the copy here */
    bool target, local_done, placed;
    int fd; /* the temporary file, -1 */
    int err;
    char why[300];
    crypto_generichash_state hash;
    bool hashing;
    /* chunks [freed, got) are held, chunk i in ring[i % BCAST_WINDOW] as the
     * PSM_D_BCAST_DATA every child gets (built once, its buffer reused) */
    struct psmsg_buf ring[BCAST_WINDOW];
    uint8_t *scratch;          /* the home: a chunk as read */
    uint32_t freed, got, told; /* told: the count last acknowledged to the parent */
    bool end_in, more;         /* more: its last pump ran out of time with chunks left to send */
    uint8_t sum[32];
    uint64_t parent_heard, said;
    struct bkid *kids;
    size_t nkids;
    struct bsub *sub; /* every node below, by child */
    size_t nsub;
    /* the outcome so far */
    uint32_t ok, nfail;
    struct bfail fails[PSBCAST_FAILS];
    size_t nfails;
    /* the home's */
    struct client *client;
    uint32_t cid;
    int src;
    struct stat src_st;
    uint64_t t0;
    uint64_t n_sent, n_recv; /* messages with other nodes (the log line) */
    struct bx *next;
};

struct bcast {
    struct bx *head;
    uint64_t timer;  /* tick: lives, silent children */
    uint64_t resume; /* the pumps cut short go on, after the loop served what came meanwhile */
};

static struct bcast *state(struct psid *d)
{
    if (!d->bcast) d->bcast = calloc(1, sizeof *d->bcast);
    return d->bcast;
}

static struct bx *bx_find(struct psid *d, uint64_t id)
{
    for (struct bx *x = d->bcast ? d->bcast->head : NULL; x; x = x->next)
        if (x->id == id) return x;
    return NULL;
}

static const char *node_name(struct psid *d, uint32_t node)
{
    struct psid_node *pn = psid_node(d, node);
    return pn ? pn->conf->name : "?";
}

static void dropped(struct psid *d, uint32_t from, const char *what, const char *why)
{
    d->bcast_dropped++;
    log_warn("broadcast: %s from node %u dropped: %s (%llu dropped so far)", what, from, why,
             (unsigned long long)d->bcast_dropped);
}

static void ring_free(struct bx *x)
{
    for (unsigned i = 0; i < BCAST_WINDOW; i++) psmsg_buf_free(&x->ring[i]);
    free(x->scratch);
    x->scratch = NULL;
}

static void bx_free(struct psid *d, struct bx *x)
{
    for (struct bx **pp = &d->bcast->head; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    if (x->fd >= 0) close(x->fd);
    if (x->src >= 0) close(x->src);
    ring_free(x);
    free(x->kids);
    free(x->sub);
    free(x);
}

/* broadcasts under way here: of uid (or all, uid NO_NODE), and those kept after their end */
static size_t count(struct psid *d, uint32_t uid, bool running)
{
    size_t n = 0;
    for (struct bx *x = d->bcast ? d->bcast->head : NULL; x; x = x->next)
        n += x->running == running && (uid == NO_NODE || x->uid == uid);
    return n;
}

static int over_limit(struct psid *d, uint32_t uid, char *why, size_t whylen)
{
    if (count(d, NO_NODE, true) >= BCAST_MAX) {
        snprintf(why, whylen, "node %u (%s) has %u broadcasts under way, its limit", d->self->id,
                 d->self->name, BCAST_MAX);
        return -1;
    }
    if (uid != 0 && count(d, uid, true) >= BCAST_PER_UID) {
        snprintf(why, whylen, "user %u has %u broadcasts under way on node %u (%s), the limit", uid,
                 BCAST_PER_UID, d->self->id, d->self->name);
        return -1;
    }
    if (count(d, NO_NODE, false) >= BCAST_KEPT_MAX) {
        snprintf(why, whylen, "node %u (%s) keeps %u copies of jobs still running, its limit",
                 d->self->id, d->self->name, BCAST_KEPT_MAX);
        return -1;
    }
    return 0;
}

/* Copy a text, cut to fit (a path in it may be long). */
static void set_text(char *dst, size_t n, const char *src)
{
    size_t l = strnlen(src, n - 1);
    memcpy(dst, src, l);
    dst[l] = 0;
}

static void add_fail(struct bx *x, uint32_t node, int err, const char *text)
{
    x->nfail++;
    if (x->nfails == PSBCAST_FAILS) return;
    struct bfail *f = &x->fails[x->nfails++];
    f->node = node;
    f->err = err;
    set_text(f->text, sizeof f->text, text);
}

static void send_to(struct psid *d, struct bx *x, uint32_t node, struct psmsg_buf *b)
{
    if (node != d->self->id) x->n_sent++;
    if (psid_send(d, node, b) < 0)
        log_info("broadcast %u:%d: a message to node %u: %s", PSTID_NODE(x->id), PSTID_PID(x->id),
                 node, strerror(errno));
}

static void send_id(struct psid *d, struct bx *x, uint32_t node, uint16_t type)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, type, 0);
    psmsg_put_u64(&b, PSF_BCAST_ID, x->id);
    send_to(d, x, node, &b);
    psmsg_buf_free(&b);
}

/* ---- the copy on this node ---- */

/* This node's copy failed: dropped (its temporary file removed by the child). */
static void local_fail(struct psid *d, struct bx *x, int err, const char *why)
{
    if (!x->target || x->err) return;
    x->err = err ? err : EIO;
    set_text(x->why, sizeof x->why, why);
    log_info("broadcast %u:%d: the copy on this node failed: %s", PSTID_NODE(x->id),
             PSTID_PID(x->id), why);
    if (x->fd >= 0) {
        close(x->fd);
        x->fd = -1;
        priv_bcast_drop(d, x->id, 0);
    }
}

static void local_open(struct psid *d, struct bx *x, uint32_t nodeidx, const uint8_t *cred,
                       size_t credlen)
{
    struct priv_bcast_req r = {.id = x->id,
                               .size = x->size,
                               .uid = x->uid,
                               .gid = x->gid,
                               .nodeidx = nodeidx,
                               .flags = x->flags,
                               .mode = x->mode,
                               .dest = x->dest,
                               .cred = cred,
                               .credlen = credlen};
    char why[400];
    x->target = true;
    if (!x->hashing) crypto_generichash_init(&x->hash, NULL, 0, 32);
    x->hashing = true;
    if (priv_bcast_open(d, &r, &x->fd, why, sizeof why) < 0) {
        x->fd = -1;
        local_fail(d, x, errno, why);
    }
}

/* The next chunk arrived (or was read, the home): held as the message for the children,
 * written here, hashed. -1 out of memory. */
static int take(struct psid *d, struct bx *x, const uint8_t *data, size_t len)
{
    struct psmsg_buf *b = &x->ring[x->got % BCAST_WINDOW];
    psmsg_begin(b, PSM_D_BCAST_DATA, 0);
    psmsg_put_u64(b, PSF_BCAST_ID, x->id);
    psmsg_put_u32(b, PSF_N, x->got);
    psmsg_put_bytes(b, PSF_DATA, data, len);
    if (psmsg_end(b) < 0) return -1;
    if (x->hashing) crypto_generichash_update(&x->hash, data, len);
    if (x->fd >= 0) {
        off_t at = (off_t)x->got * x->chunk;
        for (size_t done = 0; done < len;) {
            ssize_t w = pwrite(x->fd, data + done, len - done, at + (off_t)done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = w < 0 ? errno : ENOSPC;
                char why[PSBCAST_DEST_MAX + 100];
                snprintf(why, sizeof why, "cannot write the copy of %s: %s", x->dest, strerror(e));
                local_fail(d, x, e, why);
                break;
            }
            done += (size_t)w;
        }
    }
    x->got++;
    return 0;
}

/* The last chunk and the sum are here: the copy checked and put in place. */
static void local_finish(struct psid *d, struct bx *x)
{
    if (x->local_done) return;
    x->local_done = true;
    if (!x->target || x->err) return;
    uint8_t h[32];
    if (x->parent != NO_NODE) { /* the home's hash made the sum itself */
        crypto_generichash_final(&x->hash, h, sizeof h);
        x->hashing = false;
        if (memcmp(h, x->sum, sizeof h) != 0) {
            local_fail(d, x, EIO, "the copy's checksum differs from the source's (BLAKE2b)");
            return;
        }
    }
    close(x->fd);
    x->fd = -1;
    char why[PSBCAST_DEST_MAX + 200];
    bool times = x->flags & PSBCAST_F_PRESERVE;
    if (priv_bcast_commit(d, x->id, times ? x->mtime : 0, times ? x->atime : 0, why, sizeof why) <
        0) {
        x->err = errno ? errno : EIO; /* the child removed the temporary file */
        set_text(x->why, sizeof x->why, why);
        log_info("broadcast %u:%d: the copy on this node failed: %s", PSTID_NODE(x->id),
                 PSTID_PID(x->id), why);
        return;
    }
    x->placed = true;
}

/* ---- the outcome ---- */

static void put_outcome(struct psmsg_buf *b, const struct bx *x)
{
    psmsg_put_u64(b, PSF_BCAST_ID, x->id);
    psmsg_put_u32(b, PSF_COUNT, x->ok);
    psmsg_put_u32(b, PSF_N, x->nfail);
    for (size_t i = 0; i < x->nfails; i++)
        psi_bcast_fail_put(b, x->fails[i].node, x->fails[i].err, x->fails[i].text);
}

/* Settled here and below: the outcome goes up, and the broadcast is kept for its removal
 * (freed when there is nothing to remove). true if x was freed. */
static bool maybe_done(struct psid *d, struct bx *x)
{
    if (!x->running || !x->local_done) return false;
    for (size_t c = 0; c < x->nkids; c++)
        if (x->kids[c].state == KID_RUN) return false;
    if (x->target && !x->err) x->ok++;
    if (x->target && x->err) add_fail(x, d->self->id, x->err, x->why);
    x->running = false;
    ring_free(x);
    struct psmsg_buf b = {0};
    if (x->parent == NO_NODE) {
        uint64_t us = (loop_now() - x->t0) / 1000;
        psmsg_begin(&b, PSM_BCAST_DONE, x->cid);
        put_outcome(&b, x);
        psmsg_put_u64(&b, PSF_ELAPSED_US, us);
        if (x->client) client_send(x->client, &b);
        log_info("broadcast %u:%d of %s (%llu bytes, %u chunks) to %zu nodes: %u have the copy, %u "
                 "failed, in %llu us; home messages: %llu sent, %llu received (width %u)",
                 PSTID_NODE(x->id), PSTID_PID(x->id), x->dest, (unsigned long long)x->size,
                 x->nchunks, x->nsub + x->target, x->ok, x->nfail, (unsigned long long)us,
                 (unsigned long long)x->n_sent, (unsigned long long)x->n_recv, x->width);
        if (x->src >= 0) close(x->src);
        x->src = -1;
    } else {
        psmsg_begin(&b, PSM_D_BCAST_DONE, 0);
        put_outcome(&b, x);
        send_to(d, x, x->parent, &b);
    }
    psmsg_buf_free(&b);
    bool reached = false; /* a child with a record to drop later */
    for (size_t c = 0; c < x->nkids; c++) reached |= x->kids[c].state == KID_DONE;
    if ((x->flags & PSBCAST_F_KEEP || (!x->placed && !reached)) && x->parent != NO_NODE) {
        bx_free(d, x);
        return true;
    }
    return false; /* the home keeps it until its client goes */
}

/* Child c's subtree fails (lost, silent, broke the protocol): its nodes are named, it is
 * told to drop what it has (tell), and the broadcast goes on without it. The caller pumps. */
static void fail_kid(struct psid *d, struct bx *x, size_t c, int err, const char *why, bool tell);

/* ---- moving chunks ---- */

static void send_data(struct psid *d, struct bx *x, size_t c)
{
    struct bkid *k = &x->kids[c];
    x->n_sent++;
    int rc = psid_send(d, k->node, &x->ring[k->sent % BCAST_WINDOW]); /* RDP copies it */
    k->sent++;
    if (rc < 0) {
        char why[200];
        snprintf(why, sizeof why, "cannot be sent to: %s", strerror(errno));
        fail_kid(d, x, c, EHOSTUNREACH, why, false);
    }
}

static void send_end(struct psid *d, struct bx *x, size_t c)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_BCAST_END, 0);
    psmsg_put_u64(&b, PSF_BCAST_ID, x->id);
    psmsg_put_bytes(&b, PSF_BCAST_SUM, x->sum, sizeof x->sum);
    send_to(d, x, x->kids[c].node, &b);
    psmsg_buf_free(&b);
    x->kids[c].end_sent = true;
}

/* The home's source failed (read error, changed): the broadcast is off for every node. */
static void source_failed(struct psid *d, struct bx *x, int err, const char *why);

/* The home: read the next chunks of the source while the ring has room. */
static bool read_source(struct psid *d, struct bx *x)
{
    bool moved = false;
    while (x->running && x->got < x->nchunks && x->got - x->freed < BCAST_WINDOW) {
        size_t len = bcast_chunk_len(x->size, x->chunk, x->got);
        if (!x->scratch && !(x->scratch = malloc(x->chunk))) {
            source_failed(d, x, ENOMEM, "out of memory for a chunk");
            return false;
        }
        uint8_t *p = x->scratch;
        off_t at = (off_t)x->got * x->chunk;
        for (size_t done = 0; done < len;) {
            ssize_t r = pread(x->src, p + done, len - done, at + (off_t)done);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                char why[200];
                snprintf(why, sizeof why, "the source cannot be read: %s",
                         r < 0 ? strerror(errno) : "it became shorter while it was read");
                source_failed(d, x, r < 0 ? errno : EIO, why);
                return false;
            }
            done += (size_t)r;
        }
        if (take(d, x, p, len) < 0) {
            source_failed(d, x, ENOMEM, "out of memory for a chunk");
            return false;
        }
        moved = true;
    }
    if (x->running && x->got == x->nchunks && !x->end_in) {
        struct stat st;
        if (fstat(x->src, &st) < 0 || st.st_size != x->src_st.st_size ||
            st.st_mtim.tv_sec != x->src_st.st_mtim.tv_sec ||
            st.st_mtim.tv_nsec != x->src_st.st_mtim.tv_nsec) {
            source_failed(d, x, EIO, "the source changed while it was read");
            return false;
        }
        crypto_generichash_final(&x->hash, x->sum, sizeof x->sum);
        x->hashing = false;
        x->end_in = true; /* pump puts the copy here in place, after the children's ends */
        moved = true;
    }
    return moved;
}

static void resume_soon(struct psid *d);

/* Send what each child may take, free what all have, read more (the home), acknowledge
 * (elsewhere), until loop_now() passes end (then the rest is resumed); then see whether the
 * broadcast is settled. true if x was freed. */
static bool pump_until(struct psid *d, struct bx *x, uint64_t end)
{
    x->more = false;
    for (bool moved = true; moved && x->running && !x->more;) {
        moved = x->parent == NO_NODE && read_source(d, x);
        if (!x->running) break;
        for (size_t c = 0; c < x->nkids && !x->more; c++) {
            struct bkid *k = &x->kids[c];
            while (k->state == KID_RUN && k->sent < x->got && k->sent < k->acked + BCAST_WINDOW) {
                if (moved && loop_now() > end) { /* the loop's other work first */
                    x->more = true;
                    break;
                }
                send_data(d, x, c);
                moved = true;
            }
            if (k->state == KID_RUN && x->end_in && k->sent == x->nchunks && !k->end_sent)
                send_end(d, x, c);
        }
        uint32_t low = x->got;
        for (size_t c = 0; c < x->nkids; c++)
            if (x->kids[c].state == KID_RUN && x->kids[c].sent < low) low = x->kids[c].sent;
        if (low > x->freed) {
            x->freed = low;
            moved = true;
        }
    }
    if (x->more) resume_soon(d);
    /* the copy here is put in place once the children that have every chunk have their
     * end: their checks and renames run beside this one, not one after the other */
    if (x->running && x->end_in && !x->more) local_finish(d, x);
    if (x->running && x->parent != NO_NODE && x->freed > x->told) {
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_BCAST_ACK, 0);
        psmsg_put_u64(&b, PSF_BCAST_ID, x->id);
        psmsg_put_u32(&b, PSF_COUNT, x->freed);
        send_to(d, x, x->parent, &b);
        psmsg_buf_free(&b);
        x->told = x->freed;
        x->said = loop_now();
    }
    return maybe_done(d, x);
}

static bool pump(struct psid *d, struct bx *x)
{
    return pump_until(d, x, loop_now() + PUMP_NS);
}

/* Chunks arrived or were acknowledged: the sending they allow waits for the resume timer,
 * once per round of the loop whatever came in it (an acknowledgement of each of 63
 * children, pumped at once, held a flat broadcast's home for seconds). */
static void pump_soon(struct psid *d, struct bx *x)
{
    x->more = true;
    resume_soon(d);
}

static void fail_kid(struct psid *d, struct bx *x, size_t c, int err, const char *why, bool tell)
{
    struct bkid *k = &x->kids[c];
    if (k->state != KID_RUN) return;
    k->state = KID_FAILED;
    log_notice("broadcast %u:%d: node %u (%s) given up: %s", PSTID_NODE(x->id), PSTID_PID(x->id),
               k->node, node_name(d, k->node), why);
    for (size_t i = 0; i < k->nsub; i++) {
        if (!k->sub[i].target) continue;
        char text[400];
        if (i == 0)
            set_text(text, sizeof text, why);
        else
            snprintf(text, sizeof text, "not reached: node %u (%s) above it in the tree %s",
                     k->node, node_name(d, k->node), why);
        add_fail(x, k->sub[i].node, err, text);
    }
    if (tell) send_id(d, x, k->node, PSM_D_BCAST_DROP);
}

static void source_failed(struct psid *d, struct bx *x, int err, const char *why)
{
    log_notice("broadcast %u:%d: %s", PSTID_NODE(x->id), PSTID_PID(x->id), why);
    for (size_t c = 0; c < x->nkids; c++)
        if (x->kids[c].state == KID_RUN) {
            x->kids[c].state = KID_FAILED;
            send_id(d, x, x->kids[c].node, PSM_D_BCAST_DROP);
            for (size_t i = 0; i < x->kids[c].nsub; i++)
                if (x->kids[c].sub[i].target) add_fail(x, x->kids[c].sub[i].node, err, why);
        }
    local_fail(d, x, err, why);
    x->local_done = true;
    x->end_in = true;
}

/* ---- the tree ---- */

/* x's children and subtree from parts[1..n) (place order) and each one's child: subs grouped
 * by child, each child's own part first. 0, or -1 out of memory. */
static int make_kids(struct bx *x, size_t n, const uint32_t *kid_of, const uint32_t *kid_part,
                     size_t nkids, uint32_t (*node_at)(const void *, size_t),
                     bool (*target_at)(const void *, size_t), const void *ctx, size_t *order)
{
    x->nkids = nkids;
    x->nsub = n ? n - 1 : 0;
    x->kids = calloc(nkids ? nkids : 1, sizeof *x->kids);
    x->sub = calloc(x->nsub ? x->nsub : 1, sizeof *x->sub);
    size_t *first = calloc(nkids + 1, sizeof *first);
    if (!x->kids || !x->sub || !first) {
        free(first);
        return -1;
    }
    for (size_t i = 1; i < n; i++) first[kid_of[i] + 1]++;
    for (size_t c = 1; c <= nkids; c++) first[c] += first[c - 1];
    for (size_t c = 0; c < nkids; c++) {
        x->kids[c] = (struct bkid){.node = node_at(ctx, kid_part[c]),
                                   .sub = x->sub + first[c],
                                   .state = KID_RUN,
                                   .heard = loop_now()};
        x->kids[c].nsub = 0;
    }
    /* the child's own part is the first of its subtree in place order */
    for (size_t i = 1; i < n; i++) {
        struct bkid *k = &x->kids[kid_of[i]];
        if (order) order[first[kid_of[i]] + k->nsub] = i;
        k->sub[k->nsub++] = (struct bsub){.node = node_at(ctx, i), .target = target_at(ctx, i)};
    }
    free(first);
    return 0;
}

static uint32_t open_node(const void *ctx, size_t i)
{
    return ((const struct bcast_open *)ctx)->parts[i].node;
}

static bool open_target(const void *ctx, size_t i)
{
    return ((const struct bcast_open *)ctx)->parts[i].cred != NULL;
}

/* The fields every node of the subtree gets, as the open that came has them. */
static void put_common(struct psmsg_buf *b, const struct bx *x)
{
    psmsg_put_u64(b, PSF_BCAST_ID, x->id);
    psmsg_put_u32(b, PSF_UID, x->uid);
    psmsg_put_u32(b, PSF_GID, x->gid);
    psmsg_put_str(b, PSF_BCAST_DEST, x->dest);
    psmsg_put_u64(b, PSF_BYTES, x->size);
    psmsg_put_u32(b, PSF_BCAST_MODE, x->mode);
    psmsg_put_u32(b, PSF_BCAST_FLAGS, x->flags);
    if (x->flags & PSBCAST_F_PRESERVE) {
        psmsg_put_u64(b, PSF_BCAST_MTIME, x->mtime);
        psmsg_put_u64(b, PSF_BCAST_ATIME, x->atime);
    }
    psmsg_put_u32(b, PSF_BCAST_CHUNK, x->chunk);
    psmsg_put_u32(b, PSF_TREE_WIDTH, x->width);
}

/* Child c's open (b, built), or c given up: its open does not fit, or it is down. */
static void send_open(struct psid *d, struct bx *x, size_t c, struct psmsg_buf *b)
{
    struct psid_node *pn = psid_node(d, x->kids[c].node);
    if (b->err)
        fail_kid(d, x, c, E2BIG, "its subtree's open does not fit a message", false);
    else if (!pn || pn->state == PSNODE_DOWN)
        fail_kid(d, x, c, EHOSTDOWN, "is down", false);
    else
        send_to(d, x, x->kids[c].node, b);
    psmsg_buf_free(b);
}

static struct bx *bx_new(struct psid *d)
{
    struct bx *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->fd = -1;
    x->src = -1;
    x->running = true;
    x->parent_heard = x->said = loop_now();
    x->next = d->bcast->head;
    d->bcast->head = x;
    return x;
}

static void tick(void *ctx);

/* The broadcasts with sending to do go on, for PUMP_NS of the daemon's time together (a
 * timer due at once: the loop serves heartbeats, RDP and clients between, as between the
 * spawn queue's batches). */
static void resume(void *ctx)
{
    struct psid *d = ctx;
    uint64_t end = loop_now() + PUMP_NS;
    d->bcast->resume = 0;
    for (struct bx *x = d->bcast->head, *nx; x; x = nx) {
        nx = x->next;
        if (x->running && x->more) pump_until(d, x, end);
    }
}

static void resume_soon(struct psid *d)
{
    if (!d->bcast->resume) d->bcast->resume = loop_timer(d->loop, loop_now(), resume, d);
}

static void arm(struct psid *d)
{
    if (!d->bcast->timer)
        d->bcast->timer = loop_timer(d->loop, loop_now() + BCAST_ALIVE_NS, tick, d);
}

/* ---- a node's part: PSM_D_BCAST_OPEN ---- */

/* A node that cannot take a broadcast answers for its whole subtree at once. */
static void refuse_open(struct psid *d, uint32_t from, const struct bcast_open *o, int err,
                        const char *why)
{
    struct bx x = {.id = o->id};
    for (size_t i = 0; i < o->n; i++)
        if (o->parts[i].cred) {
            char text[400];
            if (i == 0)
                set_text(text, sizeof text, why);
            else
                snprintf(text, sizeof text, "not reached: node %u (%s) above it in the tree: %s",
                         d->self->id, d->self->name, why);
            add_fail(&x, o->parts[i].node, err, text);
        }
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_BCAST_DONE, 0);
    put_outcome(&b, &x);
    psid_send(d, from, &b);
    psmsg_buf_free(&b);
}

static void on_open(struct psid *d, uint32_t from, const struct psmsg *m)
{
    struct bcast_open o;
    const char *bad;
    char why[300];
    if (bcast_open_decode(&m->body, d->self->id, &o, &bad) < 0) {
        dropped(d, from, "an open", bad);
        return;
    }
    if (PSTID_NODE(o.id) == d->self->id || bx_find(d, o.id)) {
        dropped(d, from, "an open", "for a broadcast of this node's, or one it has already");
        goto out;
    }
    uint32_t *kid_of = calloc(o.n, sizeof *kid_of), *kid_part = calloc(o.n, sizeof *kid_part);
    size_t *order = calloc(o.n, sizeof *order);
    struct bx *x = NULL;
    if (over_limit(d, o.uid, why, sizeof why) < 0) {
        refuse_open(d, from, &o, EAGAIN, why);
    } else if (!kid_of || !kid_part || !order || !(x = bx_new(d))) {
        refuse_open(d, from, &o, ENOMEM, "out of memory");
    } else {
        x->id = o.id;
        x->home = PSTID_NODE(o.id);
        x->parent = from;
        x->uid = o.uid;
        x->gid = o.gid;
        x->flags = o.flags;
        x->mode = o.mode;
        x->chunk = o.chunk;
        x->nchunks = o.nchunks;
        x->width = o.width;
        x->size = o.size;
        x->mtime = o.mtime;
        x->atime = o.atime;
        snprintf(x->dest, sizeof x->dest, "%s", o.dest);
        size_t nkids = bcast_kids(&o, kid_of, kid_part);
        if (make_kids(x, o.n, kid_of, kid_part, nkids, open_node, open_target, &o, order) < 0) {
            bx_free(d, x);
            refuse_open(d, from, &o, ENOMEM, "out of memory");
            goto done;
        }
        /* each child's subtree first (the pipeline's depth), then the copy here */
        for (size_t c = 0, at = 0; c < nkids; c++) {
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_D_BCAST_OPEN, 0);
            put_common(&b, x);
            for (size_t i = 0; i < x->kids[c].nsub; i++) {
                const struct bcast_part *p = &o.parts[order[at + i]];
                psmsg_put_bytes(&b, PSF_PART, p->rec.p, p->rec.len);
            }
            at += x->kids[c].nsub;
            send_open(d, x, c, &b);
        }
        if (o.parts[0].cred)
            local_open(d, x, o.parts[0].nodeidx, o.parts[0].cred, o.parts[0].credlen);
        arm(d);
    }
done:
    free(kid_of);
    free(kid_part);
    free(order);
out:
    bcast_open_free(&o);
}

/* A message from the parent for a running broadcast, or NULL (dropped). */
static struct bx *from_parent(struct psid *d, uint32_t from, uint64_t id, const char *what)
{
    struct bx *x = bx_find(d, id);
    if (!x || !x->running || x->parent != from || x->parent == NO_NODE) {
        log_debug("broadcast: %s from node %u for no broadcast running here from it", what, from);
        return NULL;
    }
    x->parent_heard = loop_now();
    return x;
}

/* The parent broke the stream: this subtree fails, and it is given up here. */
static void broken_stream(struct psid *d, struct bx *x, const char *why)
{
    dropped(d, x->parent, "a chunk", why);
    char text[200];
    snprintf(text, sizeof text, "a broken stream from node %u: %s", x->parent, why);
    for (size_t c = 0; c < x->nkids; c++)
        if (x->kids[c].state == KID_RUN) fail_kid(d, x, c, EPROTO, text, true);
    local_fail(d, x, EPROTO, text);
    x->local_done = true;
    x->end_in = true;
    pump(d, x);
}

static void on_data(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    uint32_t idx;
    struct psmsg_field data;
    if (bcast_data_decode(&m->body, &id, &idx, &data) < 0) {
        dropped(d, from, "a chunk", "no id, number or data");
        return;
    }
    struct bx *x = from_parent(d, from, id, "a chunk");
    if (!x || x->end_in) return;
    x->n_recv++;
    if (idx != x->got || x->got - x->freed >= BCAST_WINDOW || idx >= x->nchunks ||
        data.len != bcast_chunk_len(x->size, x->chunk, idx)) {
        broken_stream(d, x, "a chunk out of order, beyond the window or of the wrong size");
        return;
    }
    if (take(d, x, data.val, data.len) < 0) { /* nothing can be relayed: the subtree fails */
        broken_stream(d, x, "out of memory for a chunk");
        return;
    }
    pump_soon(d, x);
}

static void on_end(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    uint8_t sum[32];
    if (bcast_end_decode(&m->body, &id, sum) < 0) {
        dropped(d, from, "an end", "no id or sum");
        return;
    }
    struct bx *x = from_parent(d, from, id, "an end");
    if (!x || x->end_in) return;
    x->n_recv++;
    if (x->got != x->nchunks) {
        broken_stream(d, x, "the end before the last chunk");
        return;
    }
    memcpy(x->sum, sum, sizeof sum);
    x->end_in = true;
    pump(d, x); /* the children's ends first, then the copy here (local_finish) */
}

/* A message from child `from` of a running broadcast: its index, or -1 (dropped). */
static long from_kid(struct psid *d, uint32_t from, uint64_t id, struct bx **xp)
{
    struct bx *x = bx_find(d, id);
    *xp = x;
    for (size_t c = 0; x && x->running && c < x->nkids; c++)
        if (x->kids[c].node == from) {
            if (x->kids[c].state != KID_RUN) return -1;
            x->kids[c].heard = loop_now();
            x->n_recv++;
            return (long)c;
        }
    return -1;
}

static void on_ack(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    uint32_t n;
    struct bx *x;
    if (psmsg_get_u64(&m->body, PSF_BCAST_ID, &id) < 0 ||
        psmsg_get_u32(&m->body, PSF_COUNT, &n) < 0) {
        dropped(d, from, "an acknowledgement", "no id or count");
        return;
    }
    long c = from_kid(d, from, id, &x);
    if (c < 0) return;
    struct bkid *k = &x->kids[c];
    if (n < k->acked || n > k->sent) {
        dropped(d, from, "an acknowledgement", "of chunks not sent to it");
        fail_kid(d, x, (size_t)c, EPROTO, "acknowledged chunks it was not sent", true);
        pump(d, x);
        return;
    }
    k->acked = n;
    pump_soon(d, x);
}

static void on_done(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    struct bx *x;
    struct psi_bcast_result r;
    const char *why;
    if (psmsg_get_u64(&m->body, PSF_BCAST_ID, &id) < 0) {
        dropped(d, from, "an outcome", "no id");
        return;
    }
    long c = from_kid(d, from, id, &x);
    if (c < 0) return;
    struct bkid *k = &x->kids[c];
    size_t targets = 0;
    for (size_t i = 0; i < k->nsub; i++) targets += k->sub[i].target;
    if (psi_bcast_result_parse(&m->body, &r, &why) < 0 || (uint64_t)r.ok + r.failed != targets) {
        dropped(d, from, "an outcome", r.ok + r.failed != targets ? "not its subtree's" : why);
        fail_kid(d, x, (size_t)c, EPROTO, "answered with a malformed outcome", true);
        pump(d, x);
        return;
    }
    k->state = KID_DONE;
    x->ok += r.ok;
    x->nfail += r.failed - (uint32_t)r.nfails;
    for (size_t i = 0; i < r.nfails; i++)
        add_fail(x, r.fails[i].node, r.fails[i].err, r.fails[i].text);
    pump(d, x);
}

/* Drop a broadcast here: the copy (or temporary file) removed, the children told. */
static void drop_here(struct psid *d, struct bx *x)
{
    for (size_t c = 0; c < x->nkids; c++)
        if (x->kids[c].state != KID_FAILED) send_id(d, x, x->kids[c].node, PSM_D_BCAST_DROP);
    if (x->fd >= 0) {
        close(x->fd);
        x->fd = -1;
    }
    if (x->target && (x->placed || (x->running && !x->err))) priv_bcast_drop(d, x->id, 0);
    bx_free(d, x);
}

static void on_drop(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    if (psmsg_get_u64(&m->body, PSF_BCAST_ID, &id) < 0) {
        dropped(d, from, "a drop", "no id");
        return;
    }
    struct bx *x = bx_find(d, id);
    if (!x || x->parent != from || x->parent == NO_NODE) return; /* settled and forgotten */
    drop_here(d, x);
}

static void bcast_message(struct psid *d, uint32_t from, const struct psmsg *m)
{
    if (!state(d)) return;
    switch (m->type) {
    case PSM_D_BCAST_OPEN:
        on_open(d, from, m);
        break;
    case PSM_D_BCAST_DATA:
        on_data(d, from, m);
        break;
    case PSM_D_BCAST_END:
        on_end(d, from, m);
        break;
    case PSM_D_BCAST_ACK:
        on_ack(d, from, m);
        break;
    case PSM_D_BCAST_DONE:
        on_done(d, from, m);
        break;
    default:
        on_drop(d, from, m);
    }
}

/* ---- the home: PSM_BCAST ---- */

struct home_parts {
    const uint32_t *node; /* by place; place 0 the home */
    const bool *target;   /* by place */
};

static uint32_t home_node(const void *ctx, size_t i)
{
    return ((const struct home_parts *)ctx)->node[i];
}

static bool home_target(const void *ctx, size_t i)
{
    return ((const struct home_parts *)ctx)->target[i];
}

/* The home's tree over places 0..n-1: each place's child of the home (kid_of), the
 * children's places (kid_part). */
static size_t home_kids(size_t n, uint32_t k, uint32_t *kid_of, uint32_t *kid_part)
{
    size_t nkids = n - 1 < k ? n - 1 : k;
    for (size_t c = 0; c < nkids; c++) kid_part[c] = (uint32_t)(c + 1);
    for (size_t i = 1; i < n; i++) {
        uint64_t q = i;
        while (q > k) q = (q - 1) / k;
        kid_of[i] = (uint32_t)(q - 1);
    }
    return nkids;
}

static void request_error(struct client *c, uint32_t id, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void request_error(struct client *c, uint32_t id, int err, const char *fmt, ...)
{
    char text[PSBCAST_DEST_MAX + 300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    client_error(c, id, err, text);
}

static void bcast_request(struct psid *d, struct client *c, const struct psmsg *m)
{
    int src = client_take_fd(c);
    uint32_t *nodes = NULL, *kid_of = NULL, *kid_part = NULL, *place_node = NULL, *ranks = NULL;
    bool *target = NULL;
    uint8_t(*creds)[SPAWNCRED_LEN] = NULL;
    size_t n = 0;
    char dest[PSBCAST_DEST_MAX], why[400];
    uint32_t flags = 0, width = d->conf.bcast_width, uid = client_uid(c);
    uint64_t job = 0;
    struct psmsg_field f;
    struct stat st;
    struct bx *x = NULL;
    if (!state(d)) {
        request_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    if (!psmsg_find(&m->body, PSF_BCAST_DEST, &f) || psmsg_field_str(&f, dest, sizeof dest) < 0 ||
        bcast_dest_check(dest, why, sizeof why) < 0) {
        request_error(c, m->id, EINVAL, "%s",
                      psmsg_find(&m->body, PSF_BCAST_DEST, &f) ? why : "no destination");
        goto out;
    }
    psmsg_get_u32(&m->body, PSF_BCAST_FLAGS, &flags);
    psmsg_get_u32(&m->body, PSF_TREE_WIDTH, &width);
    psmsg_get_u64(&m->body, PSF_JOB, &job);
    if (flags & ~PSBCAST_F_ALL || width < 1 || width > TREE_WIDTH_MAX) {
        request_error(c, m->id, EINVAL, "bad flags or tree width");
        goto out;
    }
    int acc = src >= 0 ? fcntl(src, F_GETFL) : -1;
    if (src < 0 || acc < 0 || (acc & O_ACCMODE) == O_WRONLY || fstat(src, &st) < 0 ||
        !S_ISREG(st.st_mode)) {
        request_error(c, m->id, EBADF, "no regular file open for reading came with the request");
        goto out;
    }
    if ((uint64_t)st.st_size > BCAST_SIZE_MAX) {
        request_error(c, m->id, EFBIG, "the file is larger than %llu bytes",
                      (unsigned long long)BCAST_SIZE_MAX);
        goto out;
    }
    /* the nodes: each configured, up and named once; none: every node that is up */
    nodes = calloc(d->conf.nnodes + 1, sizeof *nodes);
    if (!nodes) {
        request_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    bool given = false;
    for (size_t pos = 0; psmsg_next(&m->body, &pos, &f);) {
        uint32_t id;
        if (f.tag != PSF_NODE_ID || psmsg_field_u32(&f, &id) < 0) continue;
        given = true;
        struct psid_node *pn = psid_node(d, id);
        if (!pn) {
            request_error(c, m->id, EINVAL, "node %u is not in the cluster", id);
            goto out;
        }
        if (pn->state != PSNODE_UP) {
            request_error(c, m->id, EHOSTDOWN, "node %u (%s) is %s", id, pn->conf->name,
                          pn->state == PSNODE_UNREACHABLE ? "unreachable" : "down");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            if (nodes[i] == id) {
                request_error(c, m->id, EINVAL, "node %u is named twice", id);
                goto out;
            }
        if (n == d->conf.nnodes) break;
        nodes[n++] = id;
    }
    for (size_t i = 0; !given && i < d->conf.nnodes; i++)
        if (d->nodes[i].state == PSNODE_UP) nodes[n++] = d->nodes[i].conf->id;
    if (!n) {
        request_error(c, m->id, EHOSTDOWN, "no node to broadcast to");
        goto out;
    }
    if (job && !jobs_client_held(d, c, job)) {
        request_error(c, m->id, ESRCH, "no held spawn %u:%d of this connection's", PSTID_NODE(job),
                      PSTID_PID(job));
        goto out;
    }
    if (job && bx_find(d, job)) {
        request_error(c, m->id, EEXIST, "the job has a broadcast already");
        goto out;
    }
    if (over_limit(d, uid, why, sizeof why) < 0) {
        request_error(c, m->id, EAGAIN, "%s", why);
        goto out;
    }
    /* the tree: the home at place 0 (a target or not), the others in the client's order */
    place_node = calloc(n + 1, sizeof *place_node);
    target = calloc(n + 1, sizeof *target);
    kid_of = calloc(n + 1, sizeof *kid_of);
    kid_part = calloc(n + 1, sizeof *kid_part);
    ranks = calloc(n, sizeof *ranks);
    creds = calloc(n, SPAWNCRED_LEN);
    uint32_t *nodeidx = calloc(n + 1, sizeof *nodeidx);
    if (!place_node || !target || !kid_of || !kid_part || !ranks || !creds || !nodeidx ||
        !(x = bx_new(d))) {
        free(nodeidx);
        request_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    size_t places = 1, home_at = n;
    place_node[0] = d->self->id;
    for (size_t i = 0; i < n; i++) {
        ranks[i] = 1;
        if (nodes[i] == d->self->id) {
            home_at = i;
            target[0] = true;
            nodeidx[0] = (uint32_t)i;
            continue;
        }
        place_node[places] = nodes[i];
        target[places] = true;
        nodeidx[places++] = (uint32_t)i;
    }
    x->id = job ? job : jobs_new_id(d);
    x->home = d->self->id;
    x->parent = NO_NODE;
    x->uid = uid;
    x->gid = client_gid(c);
    x->flags = flags;
    x->mode = (uint32_t)st.st_mode & 0777;
    x->chunk = BCAST_CHUNK;
    x->size = (uint64_t)st.st_size;
    x->nchunks = bcast_nchunks(x->size, x->chunk);
    x->width = width;
    x->mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    x->atime = (uint64_t)st.st_atim.tv_sec * 1000000000ull + (uint64_t)st.st_atim.tv_nsec;
    x->src_st = st;
    x->client = c;
    x->cid = m->id;
    x->t0 = loop_now();
    snprintf(x->dest, sizeof x->dest, "%s", dest);
    /* the credentials: the privileged child checks the client's connection itself */
    struct priv_cred_req q = {
        .job = x->id, .uid = x->uid, .gid = x->gid, .nodes = nodes, .nranks = ranks, .n = n};
    bcast_digest(x->dest, x->flags, x->mode, x->size, q.digest);
    if (priv_cred(d, client_fd(c), &q, creds, why, sizeof why) < 0) {
        int e = errno ? errno : EPERM;
        free(nodeidx);
        bx_free(d, x);
        request_error(c, m->id, e, "psid's privileged child does not vouch for the broadcast: %s",
                      why);
        goto out;
    }
    struct home_parts hp = {place_node, target};
    size_t nkids = home_kids(places, width, kid_of, kid_part);
    size_t *order = calloc(places, sizeof *order);
    if (!order ||
        make_kids(x, places, kid_of, kid_part, nkids, home_node, home_target, &hp, order) < 0) {
        free(order);
        free(nodeidx);
        bx_free(d, x);
        request_error(c, m->id, ENOMEM, "out of memory");
        goto out;
    }
    x->src = src;
    src = -1;
    crypto_generichash_init(&x->hash, NULL, 0, 32);
    x->hashing = true;
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_BCAST_REPLY, m->id);
    psmsg_put_u64(&b, PSF_BCAST_ID, x->id);
    psmsg_put_u64(&b, PSF_BYTES, x->size);
    client_send(c, &b);
    psmsg_buf_free(&b);
    /* each child's open: its subtree's parts, the credentials made for them */
    for (size_t kc = 0, at = 0; kc < nkids; kc++) {
        psmsg_begin(&b, PSM_D_BCAST_OPEN, 0);
        put_common(&b, x);
        for (size_t i = 0; i < x->kids[kc].nsub; i++) {
            size_t p = order[at + i];
            psmsg_record_begin(&b, PSF_PART);
            psmsg_put_u32(&b, PSF_NODE_ID, place_node[p]);
            psmsg_put_u32(&b, PSF_TREE_POS, (uint32_t)p);
            psmsg_put_u32(&b, PSF_NODE_INDEX, nodeidx[p]);
            psmsg_put_bytes(&b, PSF_CRED, creds[nodeidx[p]], SPAWNCRED_LEN);
            psmsg_record_end(&b);
        }
        at += x->kids[kc].nsub;
        send_open(d, x, kc, &b);
    }
    if (home_at < n) local_open(d, x, (uint32_t)home_at, creds[home_at], SPAWNCRED_LEN);
    log_info("broadcast %u:%d of %s (%llu bytes) to %zu nodes over a tree of width %u: %zu opens "
             "sent",
             PSTID_NODE(x->id), PSTID_PID(x->id), x->dest, (unsigned long long)x->size, n, width,
             nkids);
    free(order);
    free(nodeidx);
    arm(d);
    pump(d, x);
out:
    if (src >= 0) close(src);
    free(nodes);
    free(place_node);
    free(target);
    free(kid_of);
    free(kid_part);
    free(ranks);
    free(creds);
}

/* ---- clients, nodes, time ---- */

static void bcast_client_gone(struct psid *d, struct client *c)
{
    if (!d->bcast) return;
    for (struct bx *x = d->bcast->head, *nx; x; x = nx) {
        nx = x->next;
        if (x->parent != NO_NODE || x->client != c) continue;
        x->client = NULL;
        if (x->running || !(x->flags & PSBCAST_F_KEEP)) {
            log_info("broadcast %u:%d: its client is gone: %s", PSTID_NODE(x->id), PSTID_PID(x->id),
                     x->running ? "dropped" : "the copies are removed");
            drop_here(d, x);
        } else {
            bx_free(d, x);
        }
    }
}

static bool bcast_client_busy(struct psid *d, const struct client *c)
{
    for (struct bx *x = d->bcast ? d->bcast->head : NULL; x; x = x->next)
        if (x->parent == NO_NODE && x->client == c) return true;
    return false;
}

static void bcast_node_lost(struct psid *d, uint32_t node)
{
    if (!d->bcast) return;
    bool home_gone = false;
    for (struct bx *x = d->bcast->head, *nx; x; x = nx) {
        nx = x->next;
        if (x->parent != NO_NODE && (node == x->parent || node == x->home)) {
            log_info("broadcast %u:%d: node %u (%s) above this one is lost: its copy here is "
                     "dropped",
                     PSTID_NODE(x->id), PSTID_PID(x->id), node, node_name(d, node));
            home_gone |= node == x->home;
            drop_here(d, x);
            continue;
        }
        bool lost = false;
        for (size_t c = 0; x->running && c < x->nkids; c++)
            if (x->kids[c].node == node && x->kids[c].state == KID_RUN) {
                fail_kid(d, x, c, EHOSTDOWN, "was lost during the broadcast", false);
                lost = true;
            }
        if (lost) pump(d, x);
    }
    if (home_gone) priv_bcast_drop(d, 0, node); /* whatever else of that home's is left */
}

/* Once a second while broadcasts run: a running node tells its parent it lives; a child
 * silent for BCAST_STALL_NS is given up; a parent silent for twice that, too. */
static void tick(void *ctx)
{
    struct psid *d = ctx;
    uint64_t now = loop_now();
    d->bcast->timer = 0;
    bool any = false;
    for (struct bx *x = d->bcast->head, *nx; x; x = nx) {
        nx = x->next;
        if (!x->running) continue;
        any = true;
        if (x->parent != NO_NODE && now - x->parent_heard > 2 * BCAST_STALL_NS) {
            log_notice("broadcast %u:%d: node %u above this one silent for %llu s: dropped",
                       PSTID_NODE(x->id), PSTID_PID(x->id), x->parent,
                       (unsigned long long)(2 * BCAST_STALL_NS / 1000000000ull));
            drop_here(d, x);
            continue;
        }
        bool silent = false;
        for (size_t c = 0; c < x->nkids; c++)
            if (x->kids[c].state == KID_RUN && now - x->kids[c].heard > BCAST_STALL_NS) {
                char why[100];
                snprintf(why, sizeof why, "was silent for %llu s during the broadcast",
                         (unsigned long long)(BCAST_STALL_NS / 1000000000ull));
                fail_kid(d, x, c, ETIMEDOUT, why, true);
                silent = true;
            }
        if ((silent && pump(d, x)) || !x->running || x->parent == NO_NODE ||
            now - x->said < BCAST_ALIVE_NS)
            continue;
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_BCAST_ACK, 0);
        psmsg_put_u64(&b, PSF_BCAST_ID, x->id);
        psmsg_put_u32(&b, PSF_COUNT, x->told);
        send_to(d, x, x->parent, &b);
        psmsg_buf_free(&b);
        x->said = now;
    }
    if (any) arm(d);
}

static void bcast_stop(struct psid *d)
{
    if (!d->bcast) return;
    while (d->bcast->head) bx_free(d, d->bcast->head); /* the child removes the copies */
    if (d->bcast->timer) loop_timer_cancel(d->loop, d->bcast->timer);
    if (d->bcast->resume) loop_timer_cancel(d->loop, d->bcast->resume);
    free(d->bcast);
    d->bcast = NULL;
}

static const uint16_t bcast_requests[] = {PSM_BCAST, 0};
static const uint16_t bcast_messages[] = {PSM_D_BCAST_OPEN,
                                          PSM_D_BCAST_DATA,
                                          PSM_D_BCAST_END,
                                          PSM_D_BCAST_ACK,
                                          PSM_D_BCAST_DONE,
                                          PSM_D_BCAST_DROP,
                                          0};
const struct psid_module bcast_module = {.name = "bcast",
                                         .requests = bcast_requests,
                                         .request = bcast_request,
                                         .messages = bcast_messages,
                                         .message = bcast_message,
                                         .client_gone = bcast_client_gone,
                                         .client_busy = bcast_client_busy,
                                         .node_lost = bcast_node_lost,
                                         .stop = bcast_stop};
