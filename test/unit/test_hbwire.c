/*
 * test_hbwire.c - unit tests for psid's heartbeat packet: round trip and malformed or
 * forged packets (every truncation, every flipped bit, another key).
 */
#include "../../psid/hbwire.h"
#include "unit.h"

#include <string.h>

static void test_hb(void)
{
    uint8_t key[32], other[32], pkt[HB_LEN];
    memset(key, 1, sizeof key);
    memset(other, 2, sizeof other);
    struct hb h = {.type = HB_BEAT,
                   .node = 7,
                   .incarnation = 0x1122334455667788ull,
                   .seq = 0x1122334455667789ull,
                   .load_milli = 1500,
                   .tasks = 3,
                   .cpus = 16},
              d;
    const char *why = NULL;
    hb_encode(pkt, &h, key);
    CU_ASSERT_EQUAL_FATAL(hb_decode(pkt, HB_LEN, &d, key, &why), 0);
    CU_ASSERT_EQUAL(d.node, 7);
    CU_ASSERT_EQUAL(d.incarnation, h.incarnation);
    CU_ASSERT_EQUAL(d.seq, h.seq);
    CU_ASSERT_EQUAL(d.load_milli, 1500);
    CU_ASSERT_EQUAL(d.tasks, 3);
    CU_ASSERT_EQUAL(d.cpus, 16);
    CU_ASSERT_EQUAL(hb_decode(pkt, HB_LEN, &d, other, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "mac");
    for (size_t n = 0; n < HB_LEN; n++) {
        CU_ASSERT_EQUAL(hb_decode(pkt, n, &d, key, &why), -1);
        CU_ASSERT_STRING_EQUAL(why, "length");
    }
    for (int bit = 0; bit < HB_LEN * 8; bit++) {
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        CU_ASSERT_EQUAL(hb_decode(pkt, HB_LEN, &d, key, &why), -1);
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
    }
    pkt[0] = 9;
    CU_ASSERT_EQUAL(hb_decode(pkt, HB_LEN, &d, key, &why), -1);
    CU_ASSERT_STRING_EQUAL(why, "version");
}

UNIT_SUITE(hbwire, UNIT_TEST(test_hb))
