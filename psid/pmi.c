/*
 * pmi.c - psid's PMI server on one node: each rank of a job started with a PMI mode gets a
 * socket made by psid's privileged child (PMI_FD in its environment, the only channel: no
 * TCP port is opened), and this module serves the PMI-1 and PMI-2 wires on psid's ends
 * (pmiwire.h): init, the job's facts (rank, size, appnum, the KVS name, the universe),
 * put and get against this node's copy of the job's key-value store, fences (barrier_in,
 * kvs-fence: pmifence.c gathers and spreads the pairs over the tree of the job's nodes),
 * PMI-2 node attributes, finalize and abort. Docs: docs/pmi.md.
 *
 * Every line or frame comes from a user program and is bounded: PMI-1 lines of at most
 * PMI1_LINE_MAX bytes (a longer one is answered with an error and skipped to its newline),
 * PMI-2 frames of at most PMI2_FRAME_MAX, at most PMI_OUT_MAX bytes of answers waiting
 * for a rank that does not read them (then its input waits), keys and values of at most
 * PMI_KEY_MAX and PMI_VAL_MAX bytes, and a job's store within pmi.max_kvs_bytes and
 * pmi.max_kvs_keys (the pairs it holds and those of the fence under way). A request that
 * breaks a rule gets an error answer with the reason (spaces written as '_' on the PMI-1
 * wire, which has no quoting), and the job's psrun hears it once per kind (PSM_PMI_EVENT,
 * a note), never more than PMI_NOTES per job and node.
 *
 * What the job's home hears (PSM_D_PMI_EVENT): that a rank here started to use PMI (once
 * per job and node: the job is an MPI job, psrun then ends it when a rank fails), a rank's
 * abort (its exit code and message: psrun ends the job and exits with that code), the
 * notes, and for a job whose environment has PMI_DEBUG (not empty, not 0) the transcript:
 * every request and answer of every rank here, as psid read and wrote it (what hydra's
 * mpiexec -v shows; MPICH's own client prints none), at most PMI_DEBUG_MAX bytes per job
 * and node, then a note that it is cut. A rank's exit report carries its PMI state (PSF_PMI_STATE:
 * initialized and not finalized is what psrun reports as a rank that left without MPI_Finalize).
 *
 * A job's state here lives from its PSM_D_SPAWN (or the first fence message of a child that
 * came before it: kept PMI_EARLY_NS, then dropped) until every rank queued here has ended
 * or failed to start, or the job is gone.
 */
#include "pmi.h"

#include "log.h"
#include "module.h"
#include "pmiwire.h"
#include "psproto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define PMI_OUT_MAX    (64u << 10) /* answers waiting for a rank: beyond, its input waits */
#define PMI_IN_MAX     (PMI2_LEN_DIGITS + PMI2_FRAME_MAX)
#define PMI_NOTES      16   /* notes to psrun per job and node */
#define PMI_MCMD_MAX   4096 /* lines of one mcmd=spawn block */
#define PMI_EARLY_NS   (60ull * 1000000000ull)
#define PMI_EARLY_MAX  64           /* fence messages kept for a job whose spawn has not come */
#define PMI_DEBUG_MAX  (256u << 10) /* PMI_DEBUG: transcript bytes per job and node */
#define PMI_DEBUG_SHOW 1024u        /* ... of one line or frame (the rest is counted) */

enum rank_wire { W_NEW, W_V1, W_V2 };

struct pmirank {
    struct pmijob *j;
    uint32_t rank;
    int fd; /* -1 once closed */
    uint8_t wire;
    uint8_t life; /* enum pspmi_state */
    bool in_fence;
    bool skipping; /* PMI-1: a line over the maximum, skipped up to its newline */
    bool mcmd;     /* PMI-1: in an mcmd=spawn block */
    unsigned mcmd_lines;
    uint32_t spawn_tot, spawn_sofar; /* of the blocks of one spawn request */
    bool reading;                    /* EPOLLIN is wanted */
    bool waiting;                    /* PMI-2 info-getnodeattr with wait=TRUE: waitkey */
    char waitkey[PMI_KEY_MAX + 1];
    char wait_thrid[64], fence_thrid[64]; /* PMI-2: echoed in the answer */
    char *in;
    size_t inlen, incap;
    char *out;
    size_t outoff, outlen, outcap;
    uint32_t notes; /* kinds of notes sent for this rank (bits) */
    struct pmirank *next;
};

struct early {
    uint32_t from;
    uint8_t *data;
    size_t len;
    struct early *next;
};

struct pmijob {
    struct psid *d;
    uint64_t id;
    uint32_t home, uid, size, mode;
    bool placeholder; /* fence messages came before the spawn */
    uint64_t early_timer;
    struct early *early;
    unsigned nearly;
    bool has_parent;
    uint32_t parent;
    uint32_t *children;
    size_t nchildren;
    char *map;
    char kvsname[48];
    uint32_t expected; /* local ranks queued here */
    uint32_t failed;   /* of those, ranks that did not start */
    uint32_t left;     /* ranks whose end was reported */
    struct pmirank *ranks;
    struct pmikvs kvs;      /* the job's pairs as of the last fence, and its attributes */
    struct pmikvs nodeattr; /* PMI-2 node attributes of this node */
    struct pmifence f;
    bool told_init;
    unsigned notes;
    bool debug;         /* PMI_DEBUG: the transcript goes to psrun */
    size_t debug_bytes; /* of it, sent */
    struct pmijob *next;
};

/* ---- accessors for pmifence.c ---- */

struct pmifence *pmi_fence_of(struct pmijob *j)
{
    return &j->f;
}

struct pmikvs *pmi_kvs_of(struct pmijob *j)
{
    return &j->kvs;
}

struct psid *pmi_daemon_of(struct pmijob *j)
{
    return j->d;
}

uint64_t pmi_job_id(const struct pmijob *j)
{
    return j->id;
}

bool pmi_parent(const struct pmijob *j, uint32_t *node)
{
    if (j->has_parent) *node = j->parent;
    return j->has_parent;
}

size_t pmi_children(const struct pmijob *j, const uint32_t **nodes)
{
    *nodes = j->children;
    return j->nchildren;
}

uint32_t pmi_local_ranks(const struct pmijob *j)
{
    return j->expected - j->failed;
}

int pmi_bounds_ok(struct pmijob *j, size_t klen, size_t vlen, char *why, size_t whylen)
{
    const struct psconf *c = &j->d->conf;
    size_t bytes = j->kvs.bytes + j->f.acc.bytes + klen + vlen, keys = j->kvs.n + j->f.acc.n + 1;
    if (bytes > c->pmi_max_kvs_bytes) {
        snprintf(why, whylen,
                 "the job's key-value store is over its bound of %zu bytes "
                 "(pmi.max_kvs_bytes)",
                 c->pmi_max_kvs_bytes);
        return -1;
    }
    if (keys > c->pmi_max_kvs_keys) {
        snprintf(why, whylen,
                 "the job's key-value store is over its bound of %u keys "
                 "(pmi.max_kvs_keys)",
                 c->pmi_max_kvs_keys);
        return -1;
    }
    return 0;
}

/* ---- finding jobs ---- */

static struct pmijob *find_job(struct psid *d, uint64_t id)
{
    for (struct pmijob *j = d->pmi; j; j = j->next)
        if (j->id == id) return j;
    return NULL;
}

static struct pmirank *find_rank(struct pmijob *j, uint32_t rank)
{
    for (struct pmirank *r = j->ranks; r; r = r->next)
        if (r->rank == rank) return r;
    return NULL;
}

/* ---- events to the home ---- */

static void send_event(struct pmijob *j, uint32_t rank, uint32_t kind, int has_code, uint32_t code,
                       const char *text)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_PMI_EVENT, 0);
    psmsg_put_u64(&b, PSF_JOB, j->id);
    psmsg_put_u32(&b, PSF_RANK, rank);
    psmsg_put_u32(&b, PSF_PMI_EVENT, kind);
    if (has_code) psmsg_put_u32(&b, PSF_STATUS, code);
    if (text) psmsg_put_str(&b, PSF_TEXT, text);
    if (psid_send(j->d, j->home, &b) < 0)
        log_info("pmi: job %u:%d: cannot tell the home (node %u): %s", PSTID_NODE(j->id),
                 PSTID_PID(j->id), j->home, strerror(errno));
    psmsg_buf_free(&b);
}

/* A note for psrun: once per rank and kind, at most PMI_NOTES per job here. */
enum note_kind { N_PROTO = 1, N_BOUND = 2, N_SPAWN = 4, N_UNSUPPORTED = 8, N_FENCE = 16 };

static void note(struct pmirank *r, enum note_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(struct pmirank *r, enum note_kind kind, const char *fmt, ...)
{
    struct pmijob *j = r->j;
    if (r->notes & kind || j->notes >= PMI_NOTES) return;
    r->notes |= kind;
    j->notes++;
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_info("pmi: job %u:%d rank %u: %s", PSTID_NODE(j->id), PSTID_PID(j->id), r->rank, text);
    send_event(j, r->rank, PSPMI_EV_NOTE, 0, 0, text);
}

/* PMI_DEBUG: one request ('>') or answer ('<') of a rank, as on the wire (a PMI-1 line
 * without its newline, a PMI-2 frame without its length) */
static void debug_line(struct pmirank *r, char dir, const char *p, size_t n)
{
    struct pmijob *j = r->j;
    if (!j->debug || j->debug_bytes >= PMI_DEBUG_MAX) return;
    if (n && p[n - 1] == '\n') n--;
    size_t show = n > PMI_DEBUG_SHOW ? PMI_DEBUG_SHOW : n;
    j->debug_bytes += show + 2;
    if (j->debug_bytes >= PMI_DEBUG_MAX) {
        send_event(j, r->rank, PSPMI_EV_NOTE, 0, 0,
                   "PMI_DEBUG: the transcript of this node is cut here (256 KiB per job and node)");
        return;
    }
    char text[PMI_DEBUG_SHOW + 64];
    int k = snprintf(text, sizeof text, "%c %.*s", dir, (int)show, p);
    if (show < n && k > 0)
        snprintf(text + k, sizeof text - (size_t)k, " [%zu more bytes not shown]", n - show);
    send_event(j, r->rank, PSPMI_EV_DEBUG, 0, 0, text);
}

/* ---- output ---- */

static void set_events(struct pmirank *r);

static void flush_out(struct pmirank *r)
{
    while (r->fd >= 0 && r->outoff < r->outlen) {
        ssize_t w = write(r->fd, r->out + r->outoff, r->outlen - r->outoff);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (w < 0) { /* the rank is gone (EPIPE): nothing more to say to it */
            r->outoff = r->outlen = 0;
            break;
        }
        r->outoff += (size_t)w;
    }
    if (r->outoff == r->outlen) r->outoff = r->outlen = 0;
    set_events(r);
}

static void send_out(struct pmirank *r, const char *p, size_t n)
{
    if (r->fd < 0 || !n) return;
    if (r->outlen + n > r->outcap) {
        if (r->outoff) { /* compact first */
            memmove(r->out, r->out + r->outoff, r->outlen - r->outoff);
            r->outlen -= r->outoff;
            r->outoff = 0;
        }
        if (r->outlen + n > r->outcap) {
            size_t cap = r->outcap ? r->outcap : 2048;
            while (cap < r->outlen + n) cap *= 2;
            char *o = realloc(r->out, cap);
            if (!o) {
                log_warn("pmi: out of memory for an answer to rank %u", r->rank);
                return;
            }
            r->out = o;
            r->outcap = cap;
        }
    }
    memcpy(r->out + r->outlen, p, n);
    r->outlen += n;
    flush_out(r);
}

/* The PMI-1 wire has no quoting: a text goes with '_' for spaces (and nothing it cannot
 * carry). */
static void wire_text(const char *in, char *out, size_t outsz)
{
    size_t i = 0;
    for (; in[i] && i + 1 < outsz; i++) {
        unsigned char ch = (unsigned char)in[i];
        out[i] = ch == ' ' || ch < 0x20 || ch == ';' ? '_' : (char)ch;
    }
    out[i] = 0;
}

/* An answer: begin, add pairs, end and send. */
struct ans {
    struct pmi_out o;
    char buf[PMI_VAL_MAX + 512];
};

static void ans_begin(struct pmirank *r, struct ans *a, const char *cmd)
{
    pmi_out_begin(&a->o, a->buf, sizeof a->buf, r->wire == W_V2, cmd);
}

static void ans_send(struct pmirank *r, struct ans *a)
{
    size_t n = pmi_out_end(&a->o);
    if (!n) {
        log_warn("pmi: an answer to rank %u did not fit", r->rank);
        return;
    }
    size_t skip = r->wire == W_V2 ? PMI2_LEN_DIGITS : 0;
    if (n > skip) debug_line(r, '<', a->buf + skip, n - skip);
    send_out(r, a->buf, n);
}

/* rc=-1 with the reason: PMI-1 "msg", PMI-2 "errmsg" */
static void ans_error(struct pmirank *r, struct ans *a, const char *why)
{
    char t[300];
    pmi_out_add(&a->o, "rc", "-1");
    if (r->wire == W_V2) {
        pmi_out_add(&a->o, "errmsg", why);
    } else {
        wire_text(why, t, sizeof t);
        pmi_out_add(&a->o, "msg", t);
    }
}

static void answer_error(struct pmirank *r, const char *cmd, const char *thrid, const char *why)
{
    struct ans a;
    ans_begin(r, &a, cmd);
    if (thrid && *thrid) pmi_out_add(&a.o, "thrid", thrid);
    ans_error(r, &a, why);
    ans_send(r, &a);
}

/* ---- the rank's life ---- */

static void rank_uses_pmi(struct pmirank *r)
{
    if (r->life != PSPMI_NONE) return;
    r->life = PSPMI_INIT;
    struct pmijob *j = r->j;
    if (!j->told_init) { /* the job is an MPI job: its home hears it once per node */
        j->told_init = true;
        send_event(j, r->rank, PSPMI_EV_INIT, 0, 0, NULL);
    }
}

void pmi_fence_done(struct pmijob *j, int err, const char *text)
{
    for (struct pmirank *r = j->ranks; r; r = r->next) {
        if (!r->in_fence) continue;
        r->in_fence = false;
        struct ans a;
        ans_begin(r, &a, r->wire == W_V2 ? "kvs-fence-response" : "barrier_out");
        if (r->wire == W_V2 && r->fence_thrid[0]) pmi_out_add(&a.o, "thrid", r->fence_thrid);
        if (err) {
            ans_error(r, &a, text);
            note(r, N_FENCE, "PMI fence failed: %s", text);
        } else {
            pmi_out_add(&a.o, "rc", "0");
        }
        ans_send(r, &a);
    }
}

static void enter_fence(struct pmirank *r, const char *thrid)
{
    struct pmijob *j = r->j;
    if (r->in_fence) {
        answer_error(r, r->wire == W_V2 ? "kvs-fence-response" : "barrier_out", thrid,
                     "already in a fence");
        return;
    }
    if (j->placeholder) return; /* cannot be: a rank exists only after the spawn */
    r->in_fence = true;
    snprintf(r->fence_thrid, sizeof r->fence_thrid, "%s", thrid ? thrid : "");
    j->f.in++;
    pmifence_check(j);
}

static void do_abort(struct pmirank *r, int has_code, long code, const char *msg)
{
    struct pmijob *j = r->j;
    log_info("pmi: job %u:%d: rank %u aborts the job%s%s", PSTID_NODE(j->id), PSTID_PID(j->id),
             r->rank, msg && *msg ? ": " : "", msg ? msg : "");
    rank_uses_pmi(r);
    send_event(j, r->rank, PSPMI_EV_ABORT, has_code, (uint32_t)(code & 0xff), msg);
}

/* the store's get, with the job's KVS name checked */
static const char *kvs_lookup(struct pmirank *r, const struct pmi_kv *name,
                              const struct pmi_kv *key, size_t *vlen, const char **why)
{
    if (name && !pmi_is(name, r->j->kvsname)) {
        *why = "not the job's KVS name";
        return NULL;
    }
    if (!key) {
        *why = "no key";
        return NULL;
    }
    const char *v = pmikvs_get(&r->j->kvs, key->val, key->vlen, vlen);
    if (!v) *why = "no such key";
    return v;
}

/* A put: 0, or -1 with why. */
static int kvs_store(struct pmirank *r, const struct pmi_kv *name, const struct pmi_kv *key,
                     const struct pmi_kv *val, char *why, size_t whylen)
{
    struct pmijob *j = r->j;
    if (name && !pmi_is(name, j->kvsname)) {
        snprintf(why, whylen, "not the job's KVS name (it is %s)", j->kvsname);
        return -1;
    }
    if (!key || !val || key->vlen == 0) {
        snprintf(why, whylen, "a put needs a key and a value");
        return -1;
    }
    if (key->vlen > PMI_KEY_MAX) {
        snprintf(why, whylen, "a key longer than %d bytes", PMI_KEY_MAX);
        return -1;
    }
    if (val->vlen > PMI_VAL_MAX) {
        snprintf(why, whylen, "a value longer than %d bytes", PMI_VAL_MAX);
        return -1;
    }
    if (memchr(key->val, 0, key->vlen) || memchr(val->val, 0, val->vlen)) {
        snprintf(why, whylen, "a NUL in the key or value");
        return -1;
    }
    if (pmi_bounds_ok(j, key->vlen, val->vlen, why, whylen) < 0) {
        note(r, N_BOUND, "PMI put refused: %s", why);
        return -1;
    }
    if (pmikvs_put(&j->f.acc, key->val, key->vlen, val->val, val->vlen) < 0) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- PMI-1 ---- */

static void v1_answer(struct pmirank *r, const char *cmd, const char *k1, const char *v1,
                      const char *k2, const char *v2)
{
    struct ans a;
    ans_begin(r, &a, cmd);
    pmi_out_add(&a.o, "rc", "0");
    if (k1) pmi_out_add(&a.o, k1, v1);
    if (k2) pmi_out_add(&a.o, k2, v2);
    ans_send(r, &a);
}

static void v1_init(struct pmirank *r, const struct pmi_cmd *c)
{
    long v = 0, sv = 0;
    if (pmi_get_int(c, "pmi_version", 0, 1000, &v) < 0) v = 1;
    pmi_get_int(c, "pmi_subversion", 0, 1000, &sv);
    struct ans a;
    ans_begin(r, &a, "response_to_init");
    if (v == 1 || v == 2) {
        pmi_out_add(&a.o, "rc", "0");
        pmi_out_add(&a.o, "pmi_version", v == 2 ? "2" : "1");
        pmi_out_add(&a.o, "pmi_subversion", v == 2 ? "0" : "1");
        ans_send(r, &a);
        r->wire = v == 2 ? W_V2 : W_V1;
        rank_uses_pmi(r);
        return;
    }
    ans_error(r, &a, "this server speaks PMI versions 1.1 and 2.0");
    pmi_out_add(&a.o, "pmi_version", "1");
    pmi_out_add(&a.o, "pmi_subversion", "1");
    ans_send(r, &a);
    note(r, N_PROTO, "PMI init with version %ld.%ld refused", v, sv);
}

/* A line of an mcmd=spawn block (MPI_Comm_spawn): each is one key=value; the client sends a
 * block per program (totspawns of them, spawnssofar counting) and waits for one answer after
 * the last. Not supported: the answer is an error. */
static void v1_mcmd(struct pmirank *r, const char *line, size_t len)
{
    if (!(len == 6 && memcmp(line, "endcmd", 6) == 0)) {
        struct pmi_cmd c;
        long v;
        if (pmi1_parse(line, len, &c, NULL) == 0) {
            if (pmi_get_int(&c, "totspawns", 0, 1000000, &v) == 0) r->spawn_tot = (uint32_t)v;
            if (pmi_get_int(&c, "spawnssofar", 0, 1000000, &v) == 0) r->spawn_sofar = (uint32_t)v;
        }
        if (++r->mcmd_lines > PMI_MCMD_MAX) { /* no end in sight: answer and start over */
            r->mcmd = false;
            answer_error(r, "spawn_result", NULL, "a spawn request of too many lines");
        }
        return;
    }
    r->mcmd = false;
    r->mcmd_lines = 0;
    if (r->spawn_sofar < r->spawn_tot) return; /* another block follows, one answer for all */
    answer_error(r, "spawn_result", NULL,
                 "MPI_Comm_spawn is not supported by psid's PMI server (docs/pmi.md)");
    note(r, N_SPAWN, "MPI_Comm_spawn (PMI spawn) is not supported under psrun: refused");
}

static void v1_command(struct pmirank *r, const char *line, size_t len)
{
    struct pmi_cmd c;
    const char *why = NULL;
    char whyb[300];
    if (r->mcmd) {
        v1_mcmd(r, line, len);
        return;
    }
    if (pmi1_parse(line, len, &c, &why) < 0) {
        answer_error(r, "error", NULL, why);
        note(r, N_PROTO, "a malformed PMI line: %s", why);
        return;
    }
    const struct pmi_kv *cmd = pmi_get(&c, "cmd");
    if (!cmd) {
        if (pmi_is(pmi_get(&c, "mcmd"), "spawn")) {
            rank_uses_pmi(r);
            r->mcmd = true;
            r->mcmd_lines = 1;
            r->spawn_tot = r->spawn_sofar = 0;
            return;
        }
        answer_error(r, "error", NULL, "no cmd= in the line");
        note(r, N_PROTO, "a PMI line without cmd=");
        return;
    }
    if (pmi_is(cmd, "init")) {
        v1_init(r, &c);
        return;
    }
    rank_uses_pmi(r);
    if (r->wire == W_NEW) r->wire = W_V1;
    struct pmijob *j = r->j;
    char num[24];
    if (pmi_is(cmd, "get_maxes")) {
        struct ans a;
        ans_begin(r, &a, "maxes");
        pmi_out_add(&a.o, "rc", "0");
        pmi_out_addi(&a.o, "kvsname_max", PMI_KVSNAME_MAX);
        pmi_out_addi(&a.o, "keylen_max", PMI_KEY_MAX);
        pmi_out_addi(&a.o, "vallen_max", PMI_VAL_MAX);
        ans_send(r, &a);
    } else if (pmi_is(cmd, "get_appnum")) {
        v1_answer(r, "appnum", "appnum", "0", NULL, NULL);
    } else if (pmi_is(cmd, "get_my_kvsname")) {
        v1_answer(r, "my_kvsname", "kvsname", j->kvsname, NULL, NULL);
    } else if (pmi_is(cmd, "get_universe_size")) {
        snprintf(num, sizeof num, "%u", j->size);
        v1_answer(r, "universe_size", "size", num, NULL, NULL);
    } else if (pmi_is(cmd, "put")) {
        if (kvs_store(r, pmi_get(&c, "kvsname"), pmi_get(&c, "key"), pmi_get(&c, "value"), whyb,
                      sizeof whyb) < 0)
            answer_error(r, "put_result", NULL, whyb);
        else
            v1_answer(r, "put_result", NULL, NULL, NULL, NULL);
    } else if (pmi_is(cmd, "get")) {
        size_t vlen;
        const char *v = kvs_lookup(r, pmi_get(&c, "kvsname"), pmi_get(&c, "key"), &vlen, &why);
        if (!v) {
            answer_error(r, "get_result", NULL, why);
        } else {
            struct ans a;
            ans_begin(r, &a, "get_result");
            pmi_out_add(&a.o, "rc", "0");
            pmi_out_addn(&a.o, "value", v, vlen);
            ans_send(r, &a);
        }
    } else if (pmi_is(cmd, "barrier_in")) {
        enter_fence(r, NULL);
    } else if (pmi_is(cmd, "finalize")) {
        r->life = PSPMI_FINALIZED;
        v1_answer(r, "finalize_ack", NULL, NULL, NULL, NULL);
    } else if (pmi_is(cmd, "abort")) {
        long code = 1;
        int has = pmi_get_int(&c, "exitcode", -2147483647L, 2147483647L, &code) == 0;
        do_abort(r, has, code, NULL);
    } else if (pmi_is(cmd, "publish_name") || pmi_is(cmd, "unpublish_name") ||
               pmi_is(cmd, "lookup_name")) {
        char res[32];
        snprintf(res, sizeof res, "%.*s_result", (int)(cmd->vlen - 5), cmd->val);
        struct ans a;
        ans_begin(r, &a, res);
        ans_error(r, &a, "name publishing is not supported");
        pmi_out_add(&a.o, "info", "not_supported");
        ans_send(r, &a);
        note(r, N_UNSUPPORTED, "PMI name publishing (MPI_Publish_name) is not supported");
    } else if (pmi_is(cmd, "create_kvs") || pmi_is(cmd, "destroy_kvs") || pmi_is(cmd, "getbyidx")) {
        const char *res = pmi_is(cmd, "create_kvs")    ? "newkvs"
                          : pmi_is(cmd, "destroy_kvs") ? "kvs_destroyed"
                                                       : "getbyidx_results";
        struct ans a;
        ans_begin(r, &a, res);
        ans_error(r, &a, "not supported: the job has one KVS");
        pmi_out_add(&a.o, "reason", "not_supported");
        ans_send(r, &a);
    } else {
        char what[80];
        snprintf(what, sizeof what, "an unknown command: %.*s",
                 (int)(cmd->vlen < 40 ? cmd->vlen : 40), cmd->val);
        answer_error(r, "error", NULL, what);
        note(r, N_PROTO, "PMI: %s", what);
    }
}

/* ---- PMI-2 ---- */

static void v2_begin(struct pmirank *r, struct ans *a, const char *cmd, const char *thrid)
{
    ans_begin(r, a, cmd);
    if (thrid && *thrid) pmi_out_add(&a->o, "thrid", thrid);
}

/* The answer to a PMI-2 info-getnodeattr or kvs-get: found or not. */
static void v2_found(struct pmirank *r, const char *cmd, const char *thrid, const char *v,
                     size_t vlen)
{
    struct ans a;
    v2_begin(r, &a, cmd, thrid);
    pmi_out_add(&a.o, "rc", "0");
    pmi_out_add(&a.o, "found", v ? "TRUE" : "FALSE");
    if (v) pmi_out_addn(&a.o, "value", v, vlen);
    ans_send(r, &a);
}

static void v2_command(struct pmirank *r, const char *p, size_t len)
{
    struct pmi_cmd c;
    const char *why = NULL;
    char *scratch = malloc(len ? len : 1), whyb[300], thrid[64] = "";
    if (!scratch) {
        log_warn("pmi: out of memory for a PMI-2 command of rank %u", r->rank);
        return;
    }
    if (pmi2_parse(p, len, scratch, len, &c, &why) < 0) {
        answer_error(r, "error", NULL, why);
        note(r, N_PROTO, "a malformed PMI-2 command: %s", why);
        goto out;
    }
    const struct pmi_kv *cmd = pmi_get(&c, "cmd");
    if (pmi_copy(pmi_get(&c, "thrid"), thrid, sizeof thrid) < 0) thrid[0] = 0;
    if (!cmd || cmd != &c.kv[0]) {
        answer_error(r, "error", thrid, "the first pair is not cmd=");
        note(r, N_PROTO, "a PMI-2 command without cmd= first");
        goto out;
    }
    rank_uses_pmi(r);
    struct pmijob *j = r->j;
    struct ans a;
    if (pmi_is(cmd, "fullinit")) {
        long want = -1;
        if (pmi_get(&c, "pmirank") &&
            (pmi_get_int(&c, "pmirank", 0, 2147483647L, &want) < 0 || want != (long)r->rank)) {
            answer_error(r, "fullinit-response", thrid, "pmirank is not this process's rank");
            note(r, N_PROTO, "PMI-2 fullinit with pmirank other than its rank");
            goto out;
        }
        v2_begin(r, &a, "fullinit-response", thrid);
        pmi_out_add(&a.o, "rc", "0");
        pmi_out_add(&a.o, "pmi-version", "2");
        pmi_out_add(&a.o, "pmi-subversion", "0");
        pmi_out_addi(&a.o, "rank", r->rank);
        pmi_out_addi(&a.o, "size", j->size);
        pmi_out_add(&a.o, "appnum", "0");
        pmi_out_add(&a.o, "debugged", "FALSE");
        pmi_out_add(&a.o, "pmiverbose", "FALSE");
        ans_send(r, &a);
    } else if (pmi_is(cmd, "job-getid")) {
        v2_begin(r, &a, "job-getid-response", thrid);
        pmi_out_add(&a.o, "rc", "0");
        pmi_out_add(&a.o, "jobid", j->kvsname);
        ans_send(r, &a);
    } else if (pmi_is(cmd, "kvs-put")) {
        if (kvs_store(r, NULL, pmi_get(&c, "key"), pmi_get(&c, "value"), whyb, sizeof whyb) < 0) {
            answer_error(r, "kvs-put-response", thrid, whyb);
        } else {
            v2_begin(r, &a, "kvs-put-response", thrid);
            pmi_out_add(&a.o, "rc", "0");
            ans_send(r, &a);
        }
    } else if (pmi_is(cmd, "kvs-fence")) {
        enter_fence(r, thrid);
    } else if (pmi_is(cmd, "kvs-get")) {
        size_t vlen = 0;
        const char *v = kvs_lookup(r, pmi_get(&c, "jobid"), pmi_get(&c, "key"), &vlen, &why);
        if (!v && pmi_get(&c, "key") && strcmp(why, "no such key") != 0)
            answer_error(r, "kvs-get-response", thrid, why);
        else
            v2_found(r, "kvs-get-response", thrid, v, vlen);
    } else if (pmi_is(cmd, "info-getjobattr")) {
        const struct pmi_kv *key = pmi_get(&c, "key");
        char num[24];
        const char *v = NULL;
        size_t vlen = 0;
        if (pmi_is(key, "PMI_process_mapping")) {
            v = pmikvs_get(&j->kvs, "PMI_process_mapping", 19, &vlen);
        } else if (pmi_is(key, "universeSize")) {
            vlen = (size_t)snprintf(num, sizeof num, "%u", j->size);
            v = num;
        }
        v2_found(r, "info-getjobattr-response", thrid, v, vlen);
    } else if (pmi_is(cmd, "info-putnodeattr")) {
        const struct pmi_kv *key = pmi_get(&c, "key"), *val = pmi_get(&c, "value");
        if (!key || !val || !key->vlen ||
            pmi_bounds_ok(j, key->vlen, val->vlen, whyb, sizeof whyb) < 0 ||
            pmikvs_put(&j->nodeattr, key->val, key->vlen, val->val, val->vlen) < 0) {
            answer_error(r, "info-putnodeattr-response", thrid,
                         !key || !val || !key->vlen ? "a key and a value are needed" : whyb);
        } else {
            v2_begin(r, &a, "info-putnodeattr-response", thrid);
            pmi_out_add(&a.o, "rc", "0");
            ans_send(r, &a);
            /* ranks waiting for this key get it now */
            for (struct pmirank *w = j->ranks; w; w = w->next)
                if (w->waiting && strlen(w->waitkey) == key->vlen &&
                    memcmp(w->waitkey, key->val, key->vlen) == 0) {
                    w->waiting = false;
                    v2_found(w, "info-getnodeattr-response", w->wait_thrid, val->val, val->vlen);
                }
        }
    } else if (pmi_is(cmd, "info-getnodeattr")) {
        const struct pmi_kv *key = pmi_get(&c, "key");
        size_t vlen = 0;
        const char *v = key ? pmikvs_get(&j->nodeattr, key->val, key->vlen, &vlen) : NULL;
        if (!v && key && pmi_is(pmi_get(&c, "wait"), "TRUE") && key->vlen <= PMI_KEY_MAX &&
            !r->waiting) {
            r->waiting = true;
            memcpy(r->waitkey, key->val, key->vlen);
            r->waitkey[key->vlen] = 0;
            snprintf(r->wait_thrid, sizeof r->wait_thrid, "%s", thrid);
        } else {
            v2_found(r, "info-getnodeattr-response", thrid, v, vlen);
        }
    } else if (pmi_is(cmd, "finalize")) {
        r->life = PSPMI_FINALIZED;
        v2_begin(r, &a, "finalize-response", thrid);
        pmi_out_add(&a.o, "rc", "0");
        ans_send(r, &a);
    } else if (pmi_is(cmd, "abort")) {
        char msg[PMI_VAL_MAX + 1] = "";
        pmi_copy(pmi_get(&c, "msg"), msg, sizeof msg);
        do_abort(r, 0, 1, msg);
    } else {
        char res[96], what[96];
        snprintf(res, sizeof res, "%.*s-response", (int)(cmd->vlen < 60 ? cmd->vlen : 60),
                 cmd->val);
        bool spawn = pmi_is(cmd, "spawn");
        snprintf(what, sizeof what, "%s %.*s", spawn ? "not supported:" : "an unknown command:",
                 (int)(cmd->vlen < 60 ? cmd->vlen : 60), cmd->val);
        answer_error(r, res, thrid,
                     spawn ? "MPI_Comm_spawn is not supported by psid's PMI server" : what);
        if (spawn)
            note(r, N_SPAWN, "MPI_Comm_spawn (PMI-2 spawn) is not supported under psrun: refused");
        else
            note(r, N_PROTO, "PMI-2: %s", what);
    }
out:
    free(scratch);
}

/* ---- input ---- */

static void on_rank_io(void *ctx, uint32_t events);

static void set_events(struct pmirank *r)
{
    if (r->fd < 0) return;
    bool backlog = r->outlen - r->outoff > 0;
    r->reading = r->outlen - r->outoff < PMI_OUT_MAX;
    uint32_t ev = (r->reading ? EPOLLIN : 0) | (backlog ? EPOLLOUT : 0);
    loop_fd(r->j->d->loop, r->fd, ev, on_rank_io, r);
}

static void rank_closed(struct pmirank *r)
{
    if (r->fd < 0) return;
    loop_fd_del(r->j->d->loop, r->fd);
    close(r->fd);
    r->fd = -1;
    free(r->in);
    free(r->out);
    r->in = r->out = NULL;
    r->inlen = r->incap = r->outlen = r->outoff = r->outcap = 0;
    if (r->life == PSPMI_INIT)
        log_debug("pmi: job %u:%d: rank %u closed its PMI channel without finalize",
                  PSTID_NODE(r->j->id), PSTID_PID(r->j->id), r->rank);
}

/* Whole lines or frames in r->in: each is handled, then dropped. */
static void process(struct pmirank *r)
{
    size_t off = 0;
    while (r->fd >= 0 && off < r->inlen && r->reading) {
        const char *p = r->in + off;
        size_t n = r->inlen - off, len;
        if (r->wire != W_V2) {
            if (r->skipping) { /* the rest of a line over the maximum */
                const char *nl = memchr(p, '\n', n);
                off += nl ? (size_t)(nl - p) + 1 : n;
                if (nl) r->skipping = false;
                continue;
            }
            int k = pmi1_frame(p, n, &len);
            if (k == 0) break;
            if (k < 0) {
                answer_error(r, "error", NULL, "a line longer than 1024 bytes");
                note(r, N_PROTO, "a PMI line longer than %d bytes: skipped", PMI1_LINE_MAX);
                r->skipping = true;
                off += n;
                continue;
            }
            off += len + 1;
            debug_line(r, '>', p, len);
            v1_command(r, p, len);
        } else {
            const char *why;
            int k = pmi2_frame(p, n, &len, &why);
            if (k == 0) break;
            if (k < 0) { /* no way to find the next frame: the channel is done */
                answer_error(r, "error", NULL, why);
                note(r, N_PROTO, "PMI-2: %s: the channel is closed", why);
                flush_out(r);
                rank_closed(r);
                return;
            }
            off += PMI2_LEN_DIGITS + len;
            debug_line(r, '>', p + PMI2_LEN_DIGITS, len);
            v2_command(r, p + PMI2_LEN_DIGITS, len);
        }
    }
    if (r->fd < 0) return;
    memmove(r->in, r->in + off, r->inlen - off);
    r->inlen -= off;
}

static void read_input(struct pmirank *r)
{
    while (r->fd >= 0 && r->reading) {
        size_t max = r->wire == W_V2 ? PMI_IN_MAX : PMI1_LINE_MAX;
        if (r->inlen == r->incap) {
            if (r->incap >= max) break; /* a whole frame fits: process() takes it */
            size_t cap = r->incap ? r->incap * 4 : 1024;
            if (cap > max) cap = max;
            char *in = realloc(r->in, cap);
            if (!in) break;
            r->in = in;
            r->incap = cap;
        }
        ssize_t got = read(r->fd, r->in + r->inlen, r->incap - r->inlen);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (got <= 0) {
            rank_closed(r);
            return;
        }
        r->inlen += (size_t)got;
        process(r);
    }
}

static void on_rank_io(void *ctx, uint32_t events)
{
    struct pmirank *r = ctx;
    if (events & EPOLLOUT) {
        flush_out(r);
        /* commands that waited in the buffer while the answers did not drain */
        if (r->fd >= 0 && r->reading && r->inlen) process(r);
    }
    if (r->fd >= 0 && events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_input(r);
}

/* ---- the job's life on this node ---- */

static void job_free(struct pmijob *j)
{
    struct psid *d = j->d;
    for (struct pmijob **pp = &d->pmi; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (!j->placeholder && (j->f.fences || j->f.msgs_in || j->f.msgs_out))
        log_info("pmi: job %u:%d: %llu fences, %llu fence messages in, %llu out (%zu children%s)",
                 PSTID_NODE(j->id), PSTID_PID(j->id), (unsigned long long)j->f.fences,
                 (unsigned long long)j->f.msgs_in, (unsigned long long)j->f.msgs_out, j->nchildren,
                 j->has_parent ? "" : ", the root");
    while (j->ranks) {
        struct pmirank *r = j->ranks;
        j->ranks = r->next;
        rank_closed(r);
        free(r);
    }
    while (j->early) {
        struct early *e = j->early;
        j->early = e->next;
        free(e->data);
        free(e);
    }
    if (j->early_timer) loop_timer_cancel(d->loop, j->early_timer);
    pmikvs_free(&j->kvs);
    pmikvs_free(&j->nodeattr);
    pmikvs_free(&j->f.acc);
    free(j->f.child_in);
    free(j->children);
    free(j->map);
    free(j);
}

static void maybe_done(struct pmijob *j)
{
    if (!j->placeholder && j->left + j->failed >= j->expected) job_free(j);
}

static struct pmijob *job_new(struct psid *d, uint64_t id)
{
    struct pmijob *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->d = d;
    j->id = id;
    pmikvs_init(&j->kvs);
    pmikvs_init(&j->nodeattr);
    pmikvs_init(&j->f.acc);
    j->next = d->pmi;
    d->pmi = j;
    return j;
}

static void early_expired(void *ctx)
{
    struct pmijob *j = ctx;
    j->early_timer = 0;
    if (!j->placeholder) return;
    log_info("pmi: job %u:%d: fence messages came, its spawn did not within %llu s: dropped",
             PSTID_NODE(j->id), PSTID_PID(j->id), PMI_EARLY_NS / 1000000000ull);
    job_free(j);
}

/* Whether the job's environment has PMI_DEBUG, set to neither "" nor "0". */
static bool env_debug(const struct psmsg *m)
{
    size_t pos = 0;
    struct psmsg_field f;
    while (psmsg_next(&m->body, &pos, &f)) {
        if (f.tag != PSF_ENV || f.len < 10 || memcmp(f.val, "PMI_DEBUG=", 10) != 0) continue;
        size_t n = f.len - 10;
        const char *v = (const char *)f.val + 10;
        if (n && v[n - 1] == 0) n--;
        return n && !(n == 1 && v[0] == '0');
    }
    return false;
}

int pmi_job_spawn(struct psid *d, uint32_t from, const struct psmsg *m, uint64_t job, uint32_t uid,
                  uint32_t size, uint32_t nlocal)
{
    uint32_t mode = PSPMI_MODE_NONE;
    if (psmsg_get_u32(&m->body, PSF_PMI, &mode) < 0 || mode == PSPMI_MODE_NONE) return 0;
    if (mode > PSPMI_MODE_MAX) {
        log_warn("pmi: job %u:%d: unknown PMI mode %u: no PMI", PSTID_NODE(job), PSTID_PID(job),
                 mode);
        return 0;
    }
    struct pmijob *j = find_job(d, job);
    if (j && !j->placeholder) {
        log_warn("pmi: job %u:%d: a second spawn request for this node: its ranks get no PMI",
                 PSTID_NODE(job), PSTID_PID(job));
        return 0;
    }
    if (!j && !(j = job_new(d, job))) return -1;
    j->placeholder = false;
    j->home = from;
    j->uid = uid;
    j->size = size;
    j->mode = mode;
    j->expected = nlocal;
    j->debug = env_debug(m);
    snprintf(j->kvsname, sizeof j->kvsname, "kvs_%u_%u", PSTID_NODE(job), (unsigned)PSTID_PID(job));
    size_t pos = 0, nc = 0;
    struct psmsg_field f;
    while (psmsg_next(&m->body, &pos, &f)) nc += f.tag == PSF_PMI_CHILD;
    j->children = calloc(nc ? nc : 1, sizeof *j->children);
    j->f.child_in = calloc(nc ? nc : 1, 1);
    char map[PMI_VAL_MAX + 1];
    if (psmsg_get_str(&m->body, PSF_PMI_MAP, map, sizeof map) == 0 && !(j->map = strdup(map))) {
        job_free(j);
        return -1;
    }
    if (!j->children || !j->f.child_in) {
        job_free(j);
        return -1;
    }
    for (pos = 0; psmsg_next(&m->body, &pos, &f);)
        if (f.tag == PSF_PMI_CHILD && psmsg_field_u32(&f, &j->children[j->nchildren]) == 0)
            j->nchildren++;
    j->has_parent = psmsg_get_u32(&m->body, PSF_PMI_PARENT, &j->parent) == 0;
    /* the job's attributes, there before any rank asks */
    if (j->map && pmikvs_put(&j->kvs, "PMI_process_mapping", 19, j->map, strlen(j->map)) < 0) {
        job_free(j);
        return -1;
    }
    /* fence messages that came before: now through the normal checks */
    struct early *e = j->early;
    j->early = NULL;
    j->nearly = 0;
    if (j->early_timer) loop_timer_cancel(d->loop, j->early_timer);
    j->early_timer = 0;
    while (e) {
        struct early *n = e->next;
        struct psmsg em;
        if (psmsg_parse(e->data, e->len, &em) == 0) pmifence_from_daemon(j, e->from, &em);
        free(e->data);
        free(e);
        e = n;
    }
    return 0;
}

/* The rank's own PMI variables (spawnq.c adds them to PSI_RANK and the others): PMI_RANK,
 * PMI_SIZE, PMI_SPAWNED, and with --mpi=pmi2 PMI_JOBID, else FLUX_JOB_ID (Open MPI); the
 * privileged child adds PMI_FD.
 * The number of variables added to renv at *n, or -1 (ENOMEM). */
int pmi_rank_env(struct psid *d, uint64_t job, uint32_t rank, char **renv, size_t *n)
{
    struct pmijob *j = find_job(d, job);
    if (!j || j->placeholder) return 0;
    size_t n0 = *n;
    if (asprintf(&renv[*n], "PMI_RANK=%u", rank) < 0) return -1;
    (*n)++;
    if (asprintf(&renv[*n], "PMI_SIZE=%u", j->size) < 0) return -1;
    (*n)++;
    if (asprintf(&renv[*n], "PMI_SPAWNED=0") < 0) return -1;
    (*n)++;
    if (j->mode == PSPMI_MODE_PMI2) {
        if (asprintf(&renv[*n], "PMI_JOBID=%s", j->kvsname) < 0) return -1;
        (*n)++;
    } else {
        /* Open MPI's flux component runs where FLUX_JOB_ID is set, a number it makes its
         * job id of: the job's, folded into 1..32767 (Open MPI 4.1 splits its job ids into
         * a 16-bit family and a 16-bit local id; with a family other than 0 or the local
         * id's top bit set a rank names its peers with another job id than they have
         * (seen: "unable to reach each other", peer "on host: unknown"), and local id 0 is
         * its daemons'). psrun gives FLUX_PMI_LIBRARY_PATH. */
        uint64_t h = job ^ (job >> 16) ^ (job >> 32) ^ (job >> 48);
        uint32_t id = (uint32_t)(h % 32767u) + 1;
        if (asprintf(&renv[*n], "FLUX_JOB_ID=%u", id) < 0) return -1;
        (*n)++;
    }
    return (int)(*n - n0);
}

bool pmi_job_wants_fd(struct psid *d, uint64_t job)
{
    struct pmijob *j = find_job(d, job);
    return j && !j->placeholder;
}

void pmi_rank_started(struct psid *d, uint64_t job, uint32_t rank, int fd)
{
    struct pmijob *j = find_job(d, job);
    struct pmirank *r = j ? calloc(1, sizeof *r) : NULL;
    if (!r) {
        if (j) {
            log_warn("pmi: job %u:%d rank %u: out of memory: no PMI", PSTID_NODE(job),
                     PSTID_PID(job), rank);
            j->failed++;
        }
        close(fd);
        return;
    }
    *r = (struct pmirank){.j = j, .rank = rank, .fd = fd, .next = j->ranks};
    j->ranks = r;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    set_events(r);
}

void pmi_rank_failed(struct psid *d, uint64_t job, uint32_t rank)
{
    (void)rank;
    struct pmijob *j = find_job(d, job);
    if (!j || j->placeholder) return;
    j->failed++;
    pmifence_check(j); /* the others may not wait for it */
    if ((j = find_job(d, job))) maybe_done(j);
}

uint32_t pmi_rank_exit(struct psid *d, uint64_t job, uint32_t rank)
{
    struct pmijob *j = find_job(d, job);
    struct pmirank *r = j ? find_rank(j, rank) : NULL;
    if (!r) return PSPMI_NONE;
    uint32_t life = r->life;
    rank_closed(r);
    if (r->in_fence) { /* it will not be back: its part of the fence stays counted */
        r->in_fence = false;
    }
    j->left++;
    maybe_done(j);
    return life;
}

static bool is_child(const struct pmijob *j, uint32_t node)
{
    for (size_t i = 0; i < j->nchildren; i++)
        if (j->children[i] == node) return true;
    return false;
}

static void pmi_from_daemon(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint64_t id;
    if (psmsg_get_u64(&m->body, PSF_JOB, &id) < 0) return;
    struct pmijob *j = find_job(d, id);
    if (!j && m->type == PSM_D_PMI_UP) { /* a child faster than our spawn request */
        if (!(j = job_new(d, id))) return;
        j->placeholder = true;
        j->early_timer = loop_timer(d->loop, loop_now() + PMI_EARLY_NS, early_expired, j);
    }
    if (!j) {
        log_debug("pmi: a fence message for job %u:%d, which is not here: dropped", PSTID_NODE(id),
                  PSTID_PID(id));
        return;
    }
    if (j->placeholder) {
        struct early *e = j->nearly < PMI_EARLY_MAX ? calloc(1, sizeof *e) : NULL;
        if (!e || !(e->data = malloc(m->length))) {
            free(e);
            log_warn("pmi: job %u:%d: too many fence messages before its spawn: dropped",
                     PSTID_NODE(id), PSTID_PID(id));
            return;
        }
        memcpy(e->data, m->body.p - PSMSG_HDR, m->length);
        e->len = m->length;
        e->from = from;
        struct early **pp = &j->early;
        while (*pp) pp = &(*pp)->next;
        *pp = e;
        j->nearly++;
        return;
    }
    if ((m->type == PSM_D_PMI_UP && !is_child(j, from)) ||
        (m->type == PSM_D_PMI_DOWN && (!j->has_parent || j->parent != from))) {
        log_warn("pmi: job %u:%d: a fence message from node %u, not a neighbour in its tree: "
                 "dropped",
                 PSTID_NODE(id), PSTID_PID(id), from);
        return;
    }
    pmifence_from_daemon(j, from, m);
}

void pmi_job_gone(struct psid *d, uint64_t job)
{
    struct pmijob *j = find_job(d, job);
    if (j) job_free(j);
}

static void pmi_home_lost(struct psid *d, uint32_t node)
{
    for (struct pmijob *j = d->pmi, *n; j; j = n) {
        n = j->next;
        if (!j->placeholder && j->home == node) job_free(j);
    }
}

static void pmi_free(struct psid *d)
{
    while (d->pmi) job_free(d->pmi);
}

static const uint16_t pmi_messages[] = {PSM_D_PMI_UP, PSM_D_PMI_DOWN, 0};
const struct psid_module pmi_module = {.name = "pmi",
                                       .messages = pmi_messages,
                                       .message = pmi_from_daemon,
                                       .node_lost = pmi_home_lost,
                                       .stop = pmi_free};
