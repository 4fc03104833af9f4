/*
 * gangwire.c - encode and decode the gang switch record (psproto.h). The decoder reads no
 * byte past n: it checks the fixed head first, then that n is exactly the head plus the
 * announced entries, and every field against its range.
 */
#include "gangwire.h"

#include "bebytes.h"

static const char *check(const struct gang_switch *s)
{
    if (s->njobs > GANG_WIRE_MAX_JOBS) return "jobs";
    if (s->quantum_ms < 1 || s->quantum_ms > 3600000) return "quantum";
    if (s->rows < 1 || s->rows > GANG_WIRE_MAX_ROWS) return "rows";
    if (s->row >= s->rows) return "row";
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].row >= s->rows && s->jobs[i].row != GANG_ROW_QUEUED) return "entry row";
    return NULL;
}

size_t gang_encode(uint8_t *out, size_t cap, const struct gang_switch *s)
{
    if (check(s)) return 0;
    size_t len = gang_wire_len(s->njobs);
    if (cap < len) return 0;
    out[0] = GANG_WIRE_VERSION;
    out[1] = 0;
    be_put16(out + 2, s->njobs);
    be_put32(out + 4, s->scheduler);
    be_put64(out + 8, s->epoch);
    be_put64(out + 16, s->seq);
    be_put64(out + 24, s->at_ns);
    be_put32(out + 32, s->quantum_ms);
    be_put16(out + 36, s->row);
    be_put16(out + 38, s->rows);
    for (size_t i = 0; i < s->njobs; i++) {
        uint8_t *e = out + GANG_WIRE_HEAD + GANG_WIRE_ENTRY * i;
        be_put64(e, s->jobs[i].job);
        be_put16(e + 8, s->jobs[i].row);
        be_put16(e + 10, 0);
    }
    return len;
}

int gang_decode(const uint8_t *buf, size_t n, struct gang_switch *s, const char **why)
{
    const char *w = NULL;
    if (n < GANG_WIRE_HEAD) {
        w = "length";
        goto bad;
    }
    if (buf[0] != GANG_WIRE_VERSION) {
        w = "version";
        goto bad;
    }
    if (buf[1] != 0) {
        w = "reserved";
        goto bad;
    }
    size_t njobs = be_get16(buf + 2);
    if (njobs > GANG_WIRE_MAX_JOBS) {
        w = "jobs";
        goto bad;
    }
    if (n != gang_wire_len(njobs)) {
        w = "length";
        goto bad;
    }
    s->njobs = (uint16_t)njobs;
    s->scheduler = be_get32(buf + 4);
    s->epoch = be_get64(buf + 8);
    s->seq = be_get64(buf + 16);
    s->at_ns = be_get64(buf + 24);
    s->quantum_ms = be_get32(buf + 32);
    s->row = be_get16(buf + 36);
    s->rows = be_get16(buf + 38);
    for (size_t i = 0; i < njobs; i++) {
        const uint8_t *e = buf + GANG_WIRE_HEAD + GANG_WIRE_ENTRY * i;
        if (be_get16(e + 10) != 0) {
            w = "entry reserved";
            goto bad;
        }
        s->jobs[i].job = be_get64(e);
        s->jobs[i].row = be_get16(e + 8);
    }
    w = check(s);
    if (!w) return 0;
bad:
    if (why) *why = w;
    return -1;
}
