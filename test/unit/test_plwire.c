/*
 * test_plwire.c - unit tests for the preload library's connection messages (preload/wire.h):
 * a round trip of every type, and malformed headers: every truncation, another version,
 * unknown types and flags, a DATA or RETURN without bytes or over the limit, bytes after a
 * control message (the switch's included), a CREDIT of zero.
 */
#include "../../preload/wire.h"
#include "unit.h"

#include <string.h>

static void test_plw_roundtrip(void)
{
    uint8_t h[PLW_HDR];
    struct plw_msg m;
    plw_encode(h, PLW_DATA, PLW_FROM_CONNECTOR, 0xdeadbeef, 0);
    CU_ASSERT_EQUAL_FATAL(plw_decode(h, PLW_HDR + 5, &m), 0);
    CU_ASSERT_EQUAL(m.type, PLW_DATA);
    CU_ASSERT_EQUAL(m.flags, PLW_FROM_CONNECTOR);
    CU_ASSERT_EQUAL(m.conn, 0xdeadbeef);
    CU_ASSERT_EQUAL(m.len, 5);
    plw_encode(h, PLW_CREDIT, 0, 7, 65536);
    CU_ASSERT_EQUAL_FATAL(plw_decode(h, PLW_HDR, &m), 0);
    CU_ASSERT_EQUAL(m.aux, 65536);
    CU_ASSERT_EQUAL(m.flags, 0);
    const uint8_t ctl[] = {PLW_FIN, PLW_CLOSE, PLW_RST, PLW_SWITCH, PLW_SWITCH_ACK, PLW_RETURN_END};
    for (size_t i = 0; i < sizeof ctl; i++) {
        plw_encode(h, ctl[i], 0, 1, 0);
        CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR, &m), 0);
        CU_ASSERT_EQUAL(m.type, ctl[i]);
    }
}

static void test_plw_malformed(void)
{
    uint8_t h[PLW_HDR];
    struct plw_msg m;
    plw_encode(h, PLW_DATA, 0, 1, 0);
    for (size_t n = 0; n <= PLW_HDR; n++) CU_ASSERT_EQUAL(plw_decode(h, n, &m), -1);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_MAX_DATA, &m), 0);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_MAX_DATA + 1, &m), -1);
    h[0] = PLW_VERSION + 1;
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    plw_encode(h, PLW_DATA, 0x02, 1, 0); /* unknown flag */
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    plw_encode(h, PLW_DATA, 0, 1, 0);
    h[3] = 1; /* the reserved byte */
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    plw_encode(h, PLW_DATA, 0, 1, 9); /* aux on DATA */
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    for (unsigned t = 0; t < 256; t++) {
        if (t >= PLW_DATA && t <= PLW_UP) continue;
        plw_encode(h, (uint8_t)t, 0, 1, 0);
        CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR, &m), -1);
    }
    plw_encode(h, PLW_FIN, 0, 1, 0); /* bytes after a control message */
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    plw_encode(h, PLW_CREDIT, 0, 1, 0); /* credit of nothing */
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR, &m), -1);
    /* RETURN: bytes as DATA (at least one, at most PLW_MAX_DATA, no aux); the switch's
     * control messages carry none */
    plw_encode(h, PLW_RETURN, 0, 1, 0);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 3, &m), 0);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR, &m), -1);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_MAX_DATA + 1, &m), -1);
    plw_encode(h, PLW_RETURN, 0, 1, 4);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 3, &m), -1);
    const uint8_t sw[] = {PLW_SWITCH, PLW_SWITCH_ACK, PLW_RETURN_END};
    for (size_t i = 0; i < sizeof sw; i++) {
        plw_encode(h, sw[i], 0, 1, 0);
        CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + 1, &m), -1);
    }
    /* UP: exactly its 8-byte count, no aux */
    plw_encode(h, PLW_UP, 0, 1, 0);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_UP_LEN, &m), 0);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR, &m), -1);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_UP_LEN - 1, &m), -1);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_UP_LEN + 1, &m), -1);
    plw_encode(h, PLW_UP, 0, 1, 5);
    CU_ASSERT_EQUAL(plw_decode(h, PLW_HDR + PLW_UP_LEN, &m), -1);
}

UNIT_SUITE(plwire, UNIT_TEST(test_plw_roundtrip), UNIT_TEST(test_plw_malformed));
