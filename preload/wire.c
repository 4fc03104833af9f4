/*
 * wire.c - encoding and decoding of the preload connections' message header (wire.h).
 * Every length is checked before a byte is read. Fuzz target: test/fuzz/fuzz_plwire.c.
 */
#include "wire.h"

#include "bebytes.h"

int plw_decode(const uint8_t *hdr, size_t len, struct plw_msg *m)
{
    if (len < PLW_HDR || hdr[0] != PLW_VERSION || hdr[3] != 0) return -1;
    if (hdr[2] & ~PLW_FROM_CONNECTOR) return -1;
    m->type = hdr[1];
    m->flags = hdr[2];
    m->conn = be_get32(hdr + 4);
    m->aux = be_get32(hdr + 8);
    m->len = len - PLW_HDR;
    switch (m->type) {
    case PLW_DATA:
    case PLW_RETURN:
        if (m->len == 0 || m->len > PLW_MAX_DATA || m->aux) return -1;
        return 0;
    case PLW_UP:
        return m->len == PLW_UP_LEN && !m->aux ? 0 : -1;
    case PLW_CREDIT:
        if (m->aux == 0) return -1;
        /* fall through */
    case PLW_FIN:
    case PLW_CLOSE:
    case PLW_RST:
    case PLW_SWITCH:
    case PLW_SWITCH_ACK:
    case PLW_RETURN_END:
        return m->len ? -1 : 0;
    default:
        return -1;
    }
}

void plw_encode(uint8_t hdr[PLW_HDR], uint8_t type, uint8_t flags, uint32_t conn, uint32_t aux)
{
    hdr[0] = PLW_VERSION;
    hdr[1] = type;
    hdr[2] = flags;
    hdr[3] = 0;
    be_put32(hdr + 4, conn);
    be_put32(hdr + 8, aux);
}
