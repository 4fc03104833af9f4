/*
 * wire.c - the PMI-1 and PMI-2 wires: framing, parsing and writing (see pmiwire.h). Pure
 * functions over buffers the caller owns; linked into psid and into libpmi.so/libpmi2.so.
 */
#include "pmiwire.h"

#include <stdio.h>
#include <string.h>

int pmi1_frame(const char *buf, size_t n, size_t *len)
{
    size_t lim = n < PMI1_LINE_MAX ? n : PMI1_LINE_MAX;
    const char *nl = memchr(buf, '\n', lim);
    if (nl) {
        *len = (size_t)(nl - buf);
        return 1;
    }
    if (n < PMI1_LINE_MAX) return 0;
    *len = n;
    return -1;
}

static int fail(const char **why, const char *what)
{
    if (why) *why = what;
    return -1;
}

int pmi1_parse(const char *line, size_t len, struct pmi_cmd *c, const char **why)
{
    memset(c, 0, sizeof *c);
    size_t i = 0;
    while (i < len) {
        if (line[i] == ' ') {
            i++;
            continue;
        }
        size_t start = i;
        /* value= takes the rest of the line, spaces included (as Flux's server reads a put:
         * Open MPI's flux component pads its values with spaces) */
        bool rest = len - i >= 6 && memcmp(line + i, "value=", 6) == 0;
        while (i < len && (rest || line[i] != ' ')) {
            if ((unsigned char)line[i] < 0x20) return fail(why, "a control character in the line");
            i++;
        }
        const char *tok = line + start, *eq = memchr(tok, '=', i - start);
        if (!eq) return fail(why, "a word without '='");
        size_t klen = (size_t)(eq - tok);
        if (klen == 0) return fail(why, "an empty key");
        if (klen > PMI_KEY_MAX) return fail(why, "a key longer than 64 bytes");
        if (c->n == PMI_MAX_PAIRS) {
            c->truncated = true;
            continue;
        }
        c->kv[c->n++] = (struct pmi_kv){tok, eq + 1, klen, (size_t)(line + i - eq - 1)};
    }
    if (!c->n) return fail(why, "an empty line");
    return 0;
}

int pmi2_frame(const char *buf, size_t n, size_t *len, const char **why)
{
    if (n < PMI2_LEN_DIGITS) return 0;
    size_t v = 0, i = 0;
    if (buf[0] < '0' || buf[0] > '9') return fail(why, "the length field is not a number");
    for (; i < PMI2_LEN_DIGITS && buf[i] >= '0' && buf[i] <= '9'; i++)
        v = v * 10 + (size_t)(buf[i] - '0');
    for (; i < PMI2_LEN_DIGITS; i++)
        if (buf[i] != ' ') return fail(why, "the length field is not a number");
    if (v > PMI2_FRAME_MAX) return fail(why, "a command longer than 65536 bytes");
    if (n - PMI2_LEN_DIGITS < v) return 0;
    *len = v;
    return 1;
}

int pmi2_parse(const char *p, size_t len, char *scratch, size_t scratchlen, struct pmi_cmd *c,
               const char **why)
{
    memset(c, 0, sizeof *c);
    if (scratchlen < len) return fail(why, "no room");
    size_t i = 0, out = 0;
    while (i < len) {
        const char *key = scratch + out;
        size_t k0 = out;
        while (i < len && p[i] != '=') {
            if (p[i] == 0 || p[i] == ';') return fail(why, "a pair without '='");
            scratch[out++] = p[i++];
        }
        if (i == len) return fail(why, "a pair without '='");
        size_t klen = out - k0;
        if (klen == 0) return fail(why, "an empty key");
        if (klen > PMI_KEY_MAX) return fail(why, "a key longer than 64 bytes");
        i++; /* '=' */
        const char *val = scratch + out;
        size_t v0 = out;
        bool ended = false;
        while (i < len) {
            if (p[i] == 0) return fail(why, "a NUL in a value");
            if (p[i] == ';') {
                if (i + 1 < len && p[i + 1] == ';') { /* an escaped ';' */
                    scratch[out++] = ';';
                    i += 2;
                    continue;
                }
                i++;
                ended = true;
                break;
            }
            scratch[out++] = p[i++];
        }
        if (!ended) return fail(why, "a pair not ended by ';'");
        size_t vlen = out - v0;
        if (vlen > PMI_VAL_MAX) return fail(why, "a value longer than 1024 bytes");
        if (c->n == PMI_MAX_PAIRS)
            c->truncated = true;
        else
            c->kv[c->n++] = (struct pmi_kv){key, val, klen, vlen};
    }
    if (!c->n) return fail(why, "an empty command");
    return 0;
}

const struct pmi_kv *pmi_get(const struct pmi_cmd *c, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < c->n; i++)
        if (c->kv[i].klen == kl && memcmp(c->kv[i].key, key, kl) == 0) return &c->kv[i];
    return NULL;
}

bool pmi_is(const struct pmi_kv *kv, const char *s)
{
    size_t n = strlen(s);
    return kv && kv->vlen == n && memcmp(kv->val, s, n) == 0;
}

int pmi_get_int(const struct pmi_cmd *c, const char *key, long min, long max, long *out)
{
    const struct pmi_kv *kv = pmi_get(c, key);
    if (!kv || kv->vlen == 0 || kv->vlen > 19) return -1;
    size_t i = 0;
    bool neg = kv->val[0] == '-';
    if (neg) i++;
    if (i == kv->vlen) return -1;
    long v = 0;
    for (; i < kv->vlen; i++) {
        if (kv->val[i] < '0' || kv->val[i] > '9') return -1;
        if (v > (2147483647L - (kv->val[i] - '0')) / 10) return -1;
        v = v * 10 + (kv->val[i] - '0');
    }
    if (neg) v = -v;
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

int pmi_copy(const struct pmi_kv *kv, char *out, size_t outsz)
{
    if (!kv || kv->vlen >= outsz) return -1;
    memcpy(out, kv->val, kv->vlen);
    out[kv->vlen] = 0;
    return 0;
}

static void put(struct pmi_out *o, const char *s, size_t n, bool escape)
{
    for (size_t i = 0; i < n && !o->failed; i++) {
        size_t need = escape && s[i] == ';' ? 2 : 1;
        if (o->len + need > o->cap) {
            o->failed = true;
            return;
        }
        o->p[o->len++] = s[i];
        if (need == 2) o->p[o->len++] = ';';
    }
}

void pmi_out_begin(struct pmi_out *o, char *buf, size_t cap, bool v2, const char *cmd)
{
    *o = (struct pmi_out){.p = buf, .cap = cap, .v2 = v2};
    if (v2) put(o, "      ", PMI2_LEN_DIGITS, false);
    put(o, "cmd=", 4, false);
    put(o, cmd, strlen(cmd), false);
    if (v2) put(o, ";", 1, false);
}

void pmi_out_addn(struct pmi_out *o, const char *key, const char *val, size_t vlen)
{
    if (!o->v2) put(o, " ", 1, false);
    put(o, key, strlen(key), false);
    put(o, "=", 1, false);
    put(o, val, vlen, o->v2);
    if (o->v2) put(o, ";", 1, false);
}

void pmi_out_add(struct pmi_out *o, const char *key, const char *val)
{
    pmi_out_addn(o, key, val, strlen(val));
}

void pmi_out_addi(struct pmi_out *o, const char *key, long v)
{
    char num[24];
    snprintf(num, sizeof num, "%ld", v);
    pmi_out_add(o, key, num);
}

size_t pmi_out_end(struct pmi_out *o)
{
    if (!o->v2) {
        put(o, "\n", 1, false);
        return o->failed ? 0 : o->len;
    }
    size_t body = o->len - PMI2_LEN_DIGITS;
    if (o->failed || body > PMI2_FRAME_MAX) return 0;
    char num[16];
    int k = snprintf(num, sizeof num, "%zu", body);
    memcpy(o->p, num, (size_t)k); /* the rest stays spaces */
    return o->len;
}

/* The next number of a mapping at *s: 0 and *out, or -1. */
static int map_num(const char **s, long *out)
{
    long v = 0;
    const char *p = *s;
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9') {
        if (v > 100000000L) return -1;
        v = v * 10 + (*p++ - '0');
    }
    *s = p;
    *out = v;
    return 0;
}

#define MAP_BLOCKS 4096

/* The blocks of a mapping: (node, nnodes, ppn) each; the count, or -1. */
static long map_blocks(const char *map, long (*b)[3])
{
    const char *s = map;
    long n = 0;
    while (*s == ' ') s++;
    if (strncmp(s, "(vector", 7) != 0) return -1;
    s += 7;
    for (;;) {
        while (*s == ' ') s++;
        if (*s == ')') break;
        if (*s++ != ',') return -1;
        while (*s == ' ') s++;
        if (*s++ != '(' || n == MAP_BLOCKS) return -1;
        for (int k = 0; k < 3; k++) {
            while (*s == ' ') s++;
            if (map_num(&s, &b[n][k]) < 0) return -1;
            while (*s == ' ') s++;
            if (*s++ != (k < 2 ? ',' : ')')) return -1;
        }
        if (b[n][1] == 0 || b[n][2] == 0) return -1;
        n++;
    }
    return n ? n : -1;
}

long pmi_map_clique(const char *map, long size, long r, long *clique, long max)
{
    static long b[MAP_BLOCKS][3]; /* not reentrant: the libraries call it once, at init */
    long nb = map_blocks(map, b);
    if (nb < 0 || r < 0 || r >= size) return -1;
    /* pass 1: r's node; pass 2: every rank on it. The vector repeats until all ranks have a
     * node (MPICH reads it so). */
    long node = -1, count = 0;
    for (int pass = 0; pass < 2; pass++) {
        long rank = 0;
        while (rank < size) {
            for (long i = 0; i < nb && rank < size; i++)
                for (long nd = b[i][0]; nd < b[i][0] + b[i][1] && rank < size; nd++)
                    for (long k = 0; k < b[i][2] && rank < size; k++, rank++) {
                        if (pass == 0 && rank == r) node = nd;
                        if (pass == 1 && nd == node) {
                            if (count < max) clique[count] = rank;
                            count++;
                        }
                    }
        }
        if (node < 0) return -1;
    }
    return count;
}
