/*
 * bcast.c - a file broadcast from the client's side (psi_bcast.h): the request with the
 * file's descriptor, psid's acceptance, then the outcome event; and the checked decoder of
 * an outcome, which psid uses for its children's answers too.
 */
#include "psi_bcast.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void psi_bcast_fail_put(struct psmsg_buf *b, uint32_t node, int err, const char *text)
{
    psmsg_record_begin(b, PSF_BCAST_FAIL);
    psmsg_put_u32(b, PSF_NODE_ID, node);
    psmsg_put_u32(b, PSF_ERRNO, (uint32_t)err);
    psmsg_put_str(b, PSF_TEXT, text);
    psmsg_record_end(b);
}

static int bad(const char **why, const char *what)
{
    *why = what;
    return -1;
}

int psi_bcast_result_parse(const struct psmsg_view *body, struct psi_bcast_result *res,
                           const char **why)
{
    memset(res, 0, sizeof *res);
    if (psmsg_get_u32(body, PSF_COUNT, &res->ok) < 0 ||
        psmsg_get_u32(body, PSF_N, &res->failed) < 0)
        return bad(why, "no count of nodes with and without the copy");
    struct psmsg_field f;
    if (psmsg_find(body, PSF_BCAST_ID, &f) && psmsg_field_u64(&f, &res->id) < 0)
        return bad(why, "a broadcast id that is no u64");
    if (psmsg_find(body, PSF_ELAPSED_US, &f) && psmsg_field_u64(&f, &res->elapsed_us) < 0)
        return bad(why, "an elapsed time that is no u64");
    size_t pos = 0;
    while (psmsg_next(body, &pos, &f)) {
        if (f.tag != PSF_BCAST_FAIL) continue;
        if (res->nfails == PSBCAST_FAILS) return bad(why, "too many failure records");
        struct psmsg_view rec = psmsg_record(&f);
        struct psi_bcast_fail *x = &res->fails[res->nfails];
        uint32_t e;
        if (psmsg_get_u32(&rec, PSF_NODE_ID, &x->node) < 0 ||
            psmsg_get_u32(&rec, PSF_ERRNO, &e) < 0 || e == 0 || e > 4095)
            return bad(why, "a failure without a node or an errno");
        if (psmsg_get_str(&rec, PSF_TEXT, x->text, sizeof x->text) < 0)
            return bad(why, "a failure without a text that fits");
        x->err = (int)e;
        res->nfails++;
    }
    if (res->failed < res->nfails) return bad(why, "fewer failures counted than recorded");
    return 0;
}

int psi_bcast(struct psi *c, const struct psi_bcast_req *r, struct psi_bcast_result *res)
{
    memset(res, 0, sizeof *res);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_BCAST, 0);
    psmsg_put_str(&b, PSF_BCAST_DEST, r->dest);
    for (size_t i = 0; i < r->n; i++) psmsg_put_u32(&b, PSF_NODE_ID, r->nodes[i]);
    if (r->flags) psmsg_put_u32(&b, PSF_BCAST_FLAGS, r->flags);
    if (r->width) psmsg_put_u32(&b, PSF_TREE_WIDTH, r->width);
    if (r->job) psmsg_put_u64(&b, PSF_JOB, r->job);
    struct psmsg reply = {0}; /* an error of the connection leaves it empty */
    int rc = psi_call_fd(c, &b, r->fd, &reply);
    psmsg_buf_free(&b);
    if (rc < 0) {
        int e = errno;
        if (psmsg_get_str(&reply.body, PSF_TEXT, res->fails[0].text, sizeof res->fails[0].text) < 0)
            res->fails[0].text[0] = 0;
        errno = e;
        return -1;
    }
    uint32_t id = reply.id;
    if (psmsg_get_u64(&reply.body, PSF_BCAST_ID, &res->id) < 0) {
        errno = EPROTO;
        return -1;
    }
    psmsg_get_u64(&reply.body, PSF_BYTES, &res->bytes);
    uint64_t bcast = res->id, bytes = res->bytes;
    for (;;) {
        struct psmsg ev;
        int n = psi_next_event(c, &ev, -1);
        if (n < 0) return -1;
        if (n == 0 || ev.type != PSM_BCAST_DONE || ev.id != id) continue;
        const char *why;
        if (psi_bcast_result_parse(&ev.body, res, &why) < 0) {
            errno = EPROTO;
            return -1;
        }
        res->id = bcast;
        res->bytes = bytes;
        return 0;
    }
}

int psi_bcast_escape(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s; s++) {
        if (k + 2 + (*s == '%') > n) return -1;
        if (*s == '%') out[k++] = '%';
        out[k++] = *s;
    }
    if (k >= n) return -1;
    out[k] = 0;
    return 0;
}

int psi_bcast_dest(const char *dest, const char *name, char *out, size_t n)
{
    char cwd[PATH_MAX] = "";
    if (dest && dest[0] != '/' && !getcwd(cwd, sizeof cwd)) return -1;
    size_t l = dest ? strlen(dest) : 0;
    int w = !dest ? snprintf(out, n, "/tmp/%s", name)
            : dest[0] == '/'
                ? snprintf(out, n, "%s%s", dest, l && dest[l - 1] == '/' ? name : "")
                : snprintf(out, n, "%s/%s%s", cwd, dest, l && dest[l - 1] == '/' ? name : "");
    if (w < 0 || (size_t)w >= n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

void psi_bcast_report(FILE *f, const char *prog, const struct psi_bcast_result *r,
                      const struct psi_nodetab *t)
{
    for (size_t i = 0; i < r->nfails; i++) {
        char name[64];
        fprintf(f, "%s: node %u (%s): %s\n", prog, r->fails[i].node,
                psi_nodetab_name(t, r->fails[i].node, name, sizeof name), r->fails[i].text);
    }
    if (r->failed > r->nfails)
        fprintf(f, "%s: and %u more nodes without their copy\n", prog,
                (unsigned)(r->failed - r->nfails));
}
