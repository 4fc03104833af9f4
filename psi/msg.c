/*
 * msg.c - encoding and validating decoding of psid protocol messages (format in psmsg.h).
 *
 * psmsg_parse walks the whole message once, records included (up to PSMSG_DEPTH deep), and
 * accepts it only if every field lies inside its parent; after that the getters only index
 * within bounds that were checked.
 */
#include "psmsg.h"

#include "bebytes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool check_fields(const uint8_t *p, size_t len, int depth)
{
    size_t pos = 0;
    while (pos < len) {
        if (len - pos < PSMSG_FHDR) return false;
        uint16_t tag = be_get16(p + pos);
        uint32_t flen = be_get32(p + pos + 4);
        if (be_get16(p + pos + 2) != 0) return false;
        pos += PSMSG_FHDR;
        if (flen > len - pos) return false;
        if (tag & PSMSG_RECORD) {
            if (depth + 1 >= PSMSG_DEPTH || !check_fields(p + pos, flen, depth + 1)) return false;
        }
        pos += flen;
    }
    return true;
}

uint32_t psmsg_frame_len(const uint8_t *buf, size_t n)
{
    if (n < PSMSG_HDR || buf[0] != PSMSG_VERSION || buf[1] != 0) return 0;
    uint32_t len = be_get32(buf + 4);
    if (len < PSMSG_HDR || len > PSMSG_MAX) return 0;
    return len;
}

int psmsg_parse(const uint8_t *buf, size_t n, struct psmsg *m)
{
    if (n < PSMSG_HDR) goto bad;
    if (buf[0] != PSMSG_VERSION) {
        errno = EPROTO;
        return -1;
    }
    if (n > PSMSG_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    if (buf[1] != 0 || be_get32(buf + 4) != n) goto bad;
    if (!check_fields(buf + PSMSG_HDR, n - PSMSG_HDR, 0)) goto bad;
    m->type = be_get16(buf + 2);
    m->length = (uint32_t)n;
    m->id = be_get32(buf + 8);
    m->body.p = buf + PSMSG_HDR;
    m->body.len = n - PSMSG_HDR;
    return 0;
bad:
    errno = EBADMSG;
    return -1;
}

bool psmsg_next(const struct psmsg_view *v, size_t *pos, struct psmsg_field *f)
{
    if (*pos + PSMSG_FHDR > v->len) return false;
    f->tag = be_get16(v->p + *pos);
    f->len = be_get32(v->p + *pos + 4);
    f->val = v->p + *pos + PSMSG_FHDR;
    *pos += PSMSG_FHDR + f->len;
    return true;
}

bool psmsg_find(const struct psmsg_view *v, uint16_t tag, struct psmsg_field *f)
{
    size_t pos = 0;
    while (psmsg_next(v, &pos, f))
        if (f->tag == tag) return true;
    return false;
}

int psmsg_field_u32(const struct psmsg_field *f, uint32_t *out)
{
    if (f->len != 4) return -1;
    *out = be_get32(f->val);
    return 0;
}

int psmsg_field_u64(const struct psmsg_field *f, uint64_t *out)
{
    if (f->len != 8) return -1;
    *out = (uint64_t)be_get32(f->val) << 32 | be_get32(f->val + 4);
    return 0;
}

int psmsg_field_str(const struct psmsg_field *f, char *out, size_t outsz)
{
    if (f->len >= outsz || memchr(f->val, 0, f->len)) return -1;
    memcpy(out, f->val, f->len);
    out[f->len] = 0;
    return 0;
}

int psmsg_get_u32(const struct psmsg_view *v, uint16_t tag, uint32_t *out)
{
    struct psmsg_field f;
    return psmsg_find(v, tag, &f) ? psmsg_field_u32(&f, out) : -1;
}

int psmsg_get_u64(const struct psmsg_view *v, uint16_t tag, uint64_t *out)
{
    struct psmsg_field f;
    return psmsg_find(v, tag, &f) ? psmsg_field_u64(&f, out) : -1;
}

int psmsg_get_str(const struct psmsg_view *v, uint16_t tag, char *out, size_t outsz)
{
    struct psmsg_field f;
    return psmsg_find(v, tag, &f) ? psmsg_field_str(&f, out, outsz) : -1;
}

struct psmsg_view psmsg_record(const struct psmsg_field *f)
{
    struct psmsg_view v = {f->val, (f->tag & PSMSG_RECORD) ? f->len : 0};
    return v;
}

/* ---- building ---- */

static uint8_t *grow(struct psmsg_buf *b, size_t n)
{
    b->need += n;
    if (b->err) return NULL;
    if (b->len + n > PSMSG_MAX) {
        b->err = EMSGSIZE;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->err = ENOMEM;
            return NULL;
        }
        b->data = d;
        b->cap = cap;
    }
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

void psmsg_begin(struct psmsg_buf *b, uint16_t type, uint32_t id)
{
    b->len = b->need = 0;
    b->depth = 0;
    b->err = 0;
    uint8_t *p = grow(b, PSMSG_HDR);
    if (!p) return;
    p[0] = PSMSG_VERSION;
    p[1] = 0;
    be_put16(p + 2, type);
    be_put32(p + 4, 0);
    be_put32(p + 8, id);
}

static uint8_t *field(struct psmsg_buf *b, uint16_t tag, size_t n)
{
    if (n > UINT32_MAX) {
        b->err = EMSGSIZE;
        return NULL;
    }
    uint8_t *p = grow(b, PSMSG_FHDR + n);
    if (!p) return NULL;
    be_put16(p, tag);
    be_put16(p + 2, 0);
    be_put32(p + 4, (uint32_t)n);
    return p + PSMSG_FHDR;
}

void psmsg_put_u32(struct psmsg_buf *b, uint16_t tag, uint32_t v)
{
    uint8_t *p = field(b, tag, 4);
    if (p) be_put32(p, v);
}

void psmsg_put_u64(struct psmsg_buf *b, uint16_t tag, uint64_t v)
{
    uint8_t *p = field(b, tag, 8);
    if (!p) return;
    be_put32(p, (uint32_t)(v >> 32));
    be_put32(p + 4, (uint32_t)v);
}

void psmsg_put_bytes(struct psmsg_buf *b, uint16_t tag, const void *src, size_t n)
{
    uint8_t *p = field(b, tag, n);
    if (p && n) memcpy(p, src, n);
}

void psmsg_put_str(struct psmsg_buf *b, uint16_t tag, const char *s)
{
    psmsg_put_bytes(b, tag, s, strlen(s));
}

void psmsg_record_begin(struct psmsg_buf *b, uint16_t tag)
{
    if (b->depth + 1 >= PSMSG_DEPTH || !(tag & PSMSG_RECORD)) {
        if (!b->err) b->err = EINVAL;
        return;
    }
    if (!field(b, tag, 0)) return;
    b->open[b->depth++] = b->len;
}

void psmsg_record_end(struct psmsg_buf *b)
{
    if (b->err) return;
    if (b->depth == 0) {
        b->err = EINVAL;
        return;
    }
    size_t start = b->open[--b->depth];
    be_put32(b->data + start - 4, (uint32_t)(b->len - start));
}

int psmsg_end(struct psmsg_buf *b)
{
    if (!b->err && (b->depth != 0 || b->len < PSMSG_HDR)) b->err = EINVAL;
    if (b->err) {
        errno = b->err;
        return -1;
    }
    be_put32(b->data + 4, (uint32_t)b->len);
    return 0;
}

void psmsg_set_id(struct psmsg_buf *b, uint32_t id)
{
    be_put32(b->data + 8, id);
}

void psmsg_buf_free(struct psmsg_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
