/*
 * client.c - the channel of the PMI client libraries (client.h): one request at a time to
 * psid's PMI server over the inherited socket in PMI_FD, its answer read back whole (a
 * PMI-1 line or a PMI-2 frame, framed and parsed by pmi/wire.c, so a server's answer is
 * checked like any input), PMI_DEBUG's transcript on stderr, a singleton's store.
 */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_MAX (PMI2_LEN_DIGITS + PMI2_FRAME_MAX)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static bool open_, single, v2, debug;
static long rank, size = 1;
static char req[BUF_MAX], in[BUF_MAX], msg[BUF_MAX], scratch[BUF_MAX];
static size_t nin;
static struct pmi_out out;

/* the singleton's store: a list, a singleton puts little */
struct lkv {
    struct lkv *next;
    char *key, *val;
};
static struct lkv *local;

void pmic_lock(void)
{
    pthread_mutex_lock(&mu);
}

void pmic_unlock(void)
{
    pthread_mutex_unlock(&mu);
}

bool pmic_is_open(void)
{
    return open_;
}

bool pmic_single(void)
{
    return single;
}

long pmic_rank(void)
{
    return rank;
}

long pmic_size(void)
{
    return size;
}

/* A decimal environment variable in [min, max]: 0 and *v, or -1. */
static int env_long(const char *name, long min, long max, long *v)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || x < min || x > max) return -1;
    *v = x;
    return 0;
}

static void trace(char dir, const char *p, size_t n)
{
    if (!debug) return;
    while (n && (p[n - 1] == '\n')) n--;
    fprintf(stderr, "pmi[%ld] %c %.*s\n", rank, dir, (int)(n > 2000 ? 2000 : n), p);
}

static int send_all(const char *p, size_t n)
{
    trace('>', p, n);
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno == ENOTSOCK) k = write(fd, p, n);
        if (k <= 0) {
            fprintf(stderr, "libpmi: rank %ld: the PMI channel (fd %d) failed: %s\n", rank, fd,
                    k < 0 ? strerror(errno) : "closed");
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The next whole answer (a line in PMI-1 mode, a frame in PMI-2 mode) into msg, parsed into
 * *c: 0, or -1. */
static int recv_answer(bool frame2, struct pmi_cmd *c)
{
    for (;;) {
        size_t len = 0, skip = 0;
        const char *why = NULL;
        int r;
        if (frame2) {
            r = pmi2_frame(in, nin, &len, &why);
            skip = PMI2_LEN_DIGITS;
        } else {
            r = pmi1_frame(in, nin, &len);
            why = "an answer line longer than 1024 bytes";
        }
        if (r < 0) {
            fprintf(stderr, "libpmi: rank %ld: a bad answer from the PMI server: %s\n", rank, why);
            return -1;
        }
        if (r == 1) {
            size_t whole = skip + len + (frame2 ? 0 : 1);
            memcpy(msg, in + skip, len);
            memmove(in, in + whole, nin - whole);
            nin -= whole;
            trace('<', msg, len);
            r = frame2 ? pmi2_parse(msg, len, scratch, sizeof scratch, c, &why)
                       : pmi1_parse(msg, len, c, &why);
            if (r < 0) {
                fprintf(stderr, "libpmi: rank %ld: a malformed answer from the PMI server: %s\n",
                        rank, why);
                return -1;
            }
            return 0;
        }
        ssize_t k = read(fd, in + nin, sizeof in - nin);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            fprintf(stderr, "libpmi: rank %ld: the PMI channel (fd %d) %s\n", rank, fd,
                    k < 0 ? strerror(errno) : "was closed by the server");
            return -1;
        }
        nin += (size_t)k;
    }
}

int pmic_open(bool want_v2)
{
    long f;
    if (open_) return 0;
    debug = getenv("PMI_DEBUG") && *getenv("PMI_DEBUG") && strcmp(getenv("PMI_DEBUG"), "0");
    if (!getenv("PMI_FD")) { /* not started by a process manager: a singleton */
        single = open_ = true;
        rank = 0;
        size = 1;
        return 0;
    }
    if (env_long("PMI_FD", 0, 1 << 20, &f) < 0 || fcntl((int)f, F_GETFD) < 0) {
        fprintf(stderr, "libpmi: PMI_FD=%s is not an open descriptor\n", getenv("PMI_FD"));
        return -1;
    }
    if (env_long("PMI_RANK", 0, 1L << 30, &rank) < 0 ||
        env_long("PMI_SIZE", 1, 1L << 30, &size) < 0 || rank >= size) {
        fprintf(stderr, "libpmi: PMI_RANK or PMI_SIZE is missing or wrong\n");
        return -1;
    }
    fd = (int)f;
    nin = 0;
    v2 = false;
    char line[80];
    int n = snprintf(line, sizeof line, "cmd=init pmi_version=%d pmi_subversion=%d\n",
                     want_v2 ? 2 : 1, want_v2 ? 0 : 1);
    struct pmi_cmd c;
    long rc = -1;
    if (send_all(line, (size_t)n) < 0 || recv_answer(false, &c) < 0) return -1;
    if (!pmi_is(pmi_get(&c, "cmd"), "response_to_init") ||
        pmi_get_int(&c, "rc", -1000, 1000, &rc) || rc != 0) {
        fprintf(stderr, "libpmi: rank %ld: the PMI server refused PMI-%d: %s\n", rank,
                want_v2 ? 2 : 1, pmic_why(&c));
        return -1;
    }
    v2 = want_v2;
    open_ = true;
    return 0;
}

/* The ranks on this node (pmic_clique), kept until pmic_close: NULL, -1 until known. */
static int *clique;
static long nclique = -1;

void pmic_close(void)
{
    open_ = false;
    single = false;
    free(clique);
    clique = NULL;
    nclique = -1;
    while (local) {
        struct lkv *l = local;
        local = l->next;
        free(l->key);
        free(l->val);
        free(l);
    }
}

struct pmi_out *pmic_begin(const char *cmd)
{
    pmi_out_begin(&out, req, sizeof req, v2, cmd);
    return &out;
}

int pmic_send_only(void)
{
    size_t n = pmi_out_end(&out);
    if (!n) {
        fprintf(stderr, "libpmi: rank %ld: a request too long for the PMI wire\n", rank);
        return -1;
    }
    return send_all(req, n);
}

int pmic_call(const char *want, struct pmi_cmd *c)
{
    if (pmic_send_only() < 0 || recv_answer(v2, c) < 0) return -1;
    const struct pmi_kv *cmd = pmi_get(c, "cmd");
    if (!pmi_is(cmd, want) && !pmi_is(cmd, "error")) {
        fprintf(stderr, "libpmi: rank %ld: the PMI server answered %.*s, not %s\n", rank,
                cmd ? (int)(cmd->vlen > 64 ? 64 : cmd->vlen) : 4, cmd ? cmd->val : "none", want);
        return -1;
    }
    long rc = -1;
    if (pmi_get_int(c, "rc", -2147483647L, 2147483647L, &rc) < 0 || rc != 0) return 1;
    return 0;
}

const char *pmic_why(const struct pmi_cmd *c)
{
    static char why[PMI_VAL_MAX + 1];
    const struct pmi_kv *m = pmi_get(c, "msg");
    if (!m) m = pmi_get(c, "errmsg");
    if (pmi_copy(m, why, sizeof why) < 0) return "no reason given";
    for (char *p = why; *p; p++)
        if (*p == '_') *p = ' '; /* the PMI-1 server writes spaces as '_' */
    return why;
}

int pmic_local_put(const char *key, const char *val)
{
    for (struct lkv *l = local; l; l = l->next)
        if (strcmp(l->key, key) == 0) {
            char *v = strdup(val);
            if (!v) return -1;
            free(l->val);
            l->val = v;
            return 0;
        }
    struct lkv *l = calloc(1, sizeof *l);
    if (!l || !(l->key = strdup(key)) || !(l->val = strdup(val))) {
        if (l) free(l->key);
        free(l);
        return -1;
    }
    l->next = local;
    local = l;
    return 0;
}

const char *pmic_local_get(const char *key)
{
    for (struct lkv *l = local; l; l = l->next)
        if (strcmp(l->key, key) == 0) return l->val;
    return NULL;
}

int pmic_finalize(const char *ack)
{
    int rc = 0;
    if (!single) {
        struct pmi_cmd c;
        pmic_begin("finalize");
        rc = pmic_call(ack, &c) != 0 ? -1 : 0;
    }
    pmic_close();
    return rc;
}

const int *pmic_clique_known(long *n)
{
    *n = nclique;
    return nclique >= 0 ? clique : NULL;
}

/* The clique of map (NULL: none) into *ranks (malloc'd): its count, or -1. */
static long clique_of(const char *map, int **ranks)
{
    long n = map ? pmi_map_clique(map, size, rank, NULL, 0) : -1;
    long *tmp = n > 0 ? calloc((size_t)n, sizeof *tmp) : NULL;
    if (n > 0 && tmp && pmi_map_clique(map, size, rank, tmp, n) == n &&
        (*ranks = calloc((size_t)n, sizeof **ranks))) {
        for (long i = 0; i < n; i++) (*ranks)[i] = (int)tmp[i];
        free(tmp);
        return n;
    }
    free(tmp);
    if (!(*ranks = calloc(1, sizeof **ranks))) return -1;
    (*ranks)[0] = (int)rank; /* no usable mapping: this rank alone */
    return 1;
}

const int *pmic_clique(const char *map, long *n)
{
    if (nclique < 0) nclique = clique_of(map, &clique);
    *n = nclique;
    return nclique >= 0 ? clique : NULL;
}

int pmic_strcopy(char *o, long outlen, const char *s, size_t n)
{
    if (!o || outlen <= 0) return -1;
    size_t k = n < (size_t)outlen ? n : (size_t)outlen - 1;
    memcpy(o, s, k);
    o[k] = 0;
    return k == n ? 0 : -1;
}
