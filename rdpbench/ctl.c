/*
 * ctl.c - rdpbench's control protocol, encoded and decoded (see ctl.h for the format).
 * Every decoder checks the body's exact length first and reads only inside it.
 */
#include "ctl.h"

#include "bebytes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

size_t rb_ctl_frame(uint8_t *frame, uint8_t type, const void *body, size_t len)
{
    if (len > RB_CTL_MAX_BODY) len = RB_CTL_MAX_BODY;
    be_put32(frame, RB_CTL_MAGIC);
    frame[4] = RB_CTL_VERSION;
    frame[5] = type;
    be_put16(frame + 6, 0);
    be_put32(frame + 8, (uint32_t)len);
    if (len) memcpy(frame + RB_CTL_HDR, body, len);
    return RB_CTL_HDR + len;
}

int rb_ctl_frame_parse(const uint8_t *buf, size_t n, uint8_t *type, uint32_t *len, char *why,
                       size_t wl)
{
    if (n < RB_CTL_HDR) return 0;
    uint32_t l = be_get32(buf + 8);
    if (be_get32(buf) != RB_CTL_MAGIC || buf[4] != RB_CTL_VERSION || be_get16(buf + 6) != 0 ||
        l > RB_CTL_MAX_BODY) {
        snprintf(why, wl, "bad frame header (magic %08x, version %u, length %u)", be_get32(buf),
                 buf[4], l);
        return -1;
    }
    if (n - RB_CTL_HDR < l) return 0;
    *type = buf[5];
    *len = l;
    return 1;
}

void rb_hello_encode(const struct rb_hello *h, uint8_t out[RB_HELLO_LEN])
{
    memset(out, 0, RB_HELLO_LEN);
    out[0] = h->mode;
    out[1] = h->flags;
    out[2] = h->mac;
    be_put32(out + 4, h->smin);
    be_put32(out + 8, h->smax);
    be_put64(out + 12, h->count);
    be_put64(out + 20, h->warmup);
    be_put64(out + 28, h->seed);
    be_put32(out + 36, h->mtu);
    be_put32(out + 40, h->timeout_s);
    if (h->addr.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&h->addr;
        be_put16(out + 44, 6);
        be_put16(out + 46, ntohs(s->sin6_port));
        memcpy(out + 48, &s->sin6_addr, 16);
    } else {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&h->addr;
        be_put16(out + 44, 4);
        be_put16(out + 46, ntohs(s->sin_port));
        memcpy(out + 48, &s->sin_addr, 4);
    }
    memcpy(out + 64, h->key_check, RB_KEY_CHECK);
}

int rb_hello_decode(const uint8_t *p, size_t len, struct rb_hello *h, char *why, size_t wl)
{
    memset(h, 0, sizeof *h);
    if (len != RB_HELLO_LEN) {
        snprintf(why, wl, "HELLO of %zu bytes, expected %d", len, RB_HELLO_LEN);
        return -1;
    }
    h->mode = p[0];
    h->flags = p[1];
    h->mac = p[2];
    h->smin = be_get32(p + 4);
    h->smax = be_get32(p + 8);
    h->count = be_get64(p + 12);
    h->warmup = be_get64(p + 20);
    h->seed = be_get64(p + 28);
    h->mtu = be_get32(p + 36);
    h->timeout_s = be_get32(p + 40);
    uint16_t fam = be_get16(p + 44), port = be_get16(p + 46);
    memcpy(h->key_check, p + 64, RB_KEY_CHECK);
    if (h->mode != RB_MODE_PINGPONG && h->mode != RB_MODE_STREAM) {
        snprintf(why, wl, "bad mode %d", h->mode);
        return -1;
    }
    if (h->smin < 1 || h->smin > h->smax || h->smax > RDP_MAX_MSG) {
        snprintf(why, wl, "bad sizes %u-%u", h->smin, h->smax);
        return -1;
    }
    if (h->count < 1 || h->count > RB_COUNT_MAX || h->warmup > RB_COUNT_MAX) {
        snprintf(why, wl, "bad count");
        return -1;
    }
    if (fam == 4) {
        struct sockaddr_in *s = (struct sockaddr_in *)&h->addr;
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        memcpy(&s->sin_addr, p + 48, 4);
        h->addrlen = sizeof *s;
    } else if (fam == 6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&h->addr;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        memcpy(&s->sin6_addr, p + 48, 16);
        h->addrlen = sizeof *s;
    } else {
        snprintf(why, wl, "bad address family %u", fam);
        return -1;
    }
    return 0;
}

void rb_ready_encode(const struct rb_ready *r, uint8_t out[RB_READY_LEN])
{
    be_put16(out, r->data_port);
    be_put16(out + 2, r->faults ? RB_READY_F_FAULTS : 0);
    be_put32(out + 4, r->mtu);
}

int rb_ready_decode(const uint8_t *p, size_t len, struct rb_ready *r)
{
    if (len != RB_READY_LEN) return -1;
    r->data_port = be_get16(p);
    r->faults = be_get16(p + 2) & RB_READY_F_FAULTS;
    r->mtu = be_get32(p + 4);
    return 0;
}

void rb_done_encode(uint64_t count, uint64_t bytes, uint8_t out[RB_DONE_LEN])
{
    be_put64(out, count);
    be_put64(out + 8, bytes);
}

int rb_done_decode(const uint8_t *p, size_t len, uint64_t *count, uint64_t *bytes)
{
    if (len != RB_DONE_LEN) return -1;
    *count = be_get64(p);
    *bytes = be_get64(p + 8);
    return 0;
}

void rb_tcp_result_encode(uint32_t status, uint64_t count, uint8_t out[RB_TCP_RESULT_LEN])
{
    be_put32(out, status);
    be_put64(out + 4, count);
}

int rb_tcp_result_decode(const uint8_t *p, size_t len, uint32_t *status, uint64_t *count)
{
    if (len != RB_TCP_RESULT_LEN) return -1;
    *status = be_get32(p);
    *count = be_get64(p + 4);
    return 0;
}

void rb_stats_encode(const struct rb_stats *s, uint8_t out[RB_STATS_LEN])
{
    uint8_t *p = out;
    be_put16(p, RB_STAT_FIELDS);
    be_put16(p + 2, RDP_DROP__COUNT);
    p += 4;
    for (int k = 0; k < RB_STAT_FIELDS; k++, p += 8) be_put64(p, s->f[k]);
    for (int r = 0; r < RDP_DROP__COUNT; r++, p += 8) be_put64(p, s->drops[r]);
}

int rb_stats_decode(const uint8_t *p, size_t len, struct rb_stats *s)
{
    if (len != RB_STATS_LEN || be_get16(p) != RB_STAT_FIELDS || be_get16(p + 2) != RDP_DROP__COUNT)
        return -1;
    p += 4;
    for (int k = 0; k < RB_STAT_FIELDS; k++, p += 8) s->f[k] = be_get64(p);
    for (int r = 0; r < RDP_DROP__COUNT; r++, p += 8) s->drops[r] = be_get64(p);
    return 0;
}

const char *rb_err_text(const uint8_t *p, size_t len, char *out)
{
    size_t n = len < RB_CTL_ERR_MAX ? len : RB_CTL_ERR_MAX;
    for (size_t k = 0; k < n; k++) out[k] = (p[k] >= 32 && p[k] < 127) ? (char)p[k] : '?';
    out[n] = '\0';
    return out;
}
