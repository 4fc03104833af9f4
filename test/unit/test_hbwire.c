/*
 * test_hbwire.c - unit tests for psid's heartbeat packet: round trip and malformed or
 * forged packets (every truncation, every flipped bit, another key, the raw cluster key),
 * and the receiver's check of who sent a beat (membership.c: node table and address).
 */
#include "../../psid/daemon.h"
#include "../../psid/hbwire.h"
#include "unit.h"

#include <arpa/inet.h>
#include <sodium.h>
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
                   .used = 3,
                   .cpus = 16},
              d;
    const char *why = NULL;
    hb_encode(pkt, &h, key);
    CU_ASSERT_EQUAL_FATAL(hb_decode(pkt, HB_LEN, &d, key, &why), 0);
    CU_ASSERT_EQUAL(d.node, 7);
    CU_ASSERT_EQUAL(d.incarnation, h.incarnation);
    CU_ASSERT_EQUAL(d.seq, h.seq);
    CU_ASSERT_EQUAL(d.load_milli, 1500);
    CU_ASSERT_EQUAL(d.used, 3);
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

/* The heartbeat key is derived from the cluster key, not the key itself: a beat MACed with
 * the cluster key (as version 1 did) fails; version 1 is refused as such. */
static void test_hb_key(void)
{
    CU_ASSERT_TRUE_FATAL(sodium_init() >= 0);
    uint8_t cluster[32], hk[32], hk2[32], pkt[HB_LEN];
    memset(cluster, 0x42, sizeof cluster);
    hb_key_derive(cluster, hk);
    hb_key_derive(cluster, hk2);
    CU_ASSERT_EQUAL(memcmp(hk, hk2, 32), 0); /* every node derives the same */
    CU_ASSERT_NOT_EQUAL(memcmp(hk, cluster, 32), 0);
    struct hb h = {.type = HB_BEAT, .node = 3, .incarnation = 9, .seq = 10}, d;
    const char *why = NULL;
    hb_encode(pkt, &h, cluster);
    CU_ASSERT_EQUAL(hb_decode(pkt, sizeof pkt, &d, hk, &why), -1);
    CU_ASSERT(why && !strcmp(why, "mac"));
    hb_encode(pkt, &h, hk);
    CU_ASSERT_EQUAL(hb_decode(pkt, sizeof pkt, &d, hk, &why), 0);
    pkt[0] = 1;
    CU_ASSERT_EQUAL(hb_decode(pkt, sizeof pkt, &d, hk, &why), -1);
    CU_ASSERT(why && !strcmp(why, "version"));
}

/* A heartbeat speaks for a node only from that node's configured address. */
static void test_hb_address(void)
{
    struct psconf_node cn;
    memset(&cn, 0, sizeof cn);
    struct sockaddr_in *a = (struct sockaddr_in *)&cn.addr;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &a->sin_addr);
    a->sin_port = htons(20000);
    struct psid_node n = {.conf = &cn};
    struct sockaddr_in from = {.sin_family = AF_INET, .sin_port = htons(31234)};
    inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    CU_ASSERT_TRUE(membership_addr_ok(&n, &from)); /* any source port: the address counts */
    inet_pton(AF_INET, "127.0.0.9", &from.sin_addr);
    CU_ASSERT_FALSE(membership_addr_ok(&n, &from));
    inet_pton(AF_INET, "198.18.0.2", &from.sin_addr);
    CU_ASSERT_FALSE(membership_addr_ok(&n, &from));
    CU_ASSERT_STRING_EQUAL(hb_drop_name(HB_DROP_ADDRESS), "address");
}

static void set_addr(struct psconf_node *cn, uint32_t id, const char *ip)
{
    memset(cn, 0, sizeof *cn);
    cn->id = id;
    struct sockaddr_in *a = (struct sockaddr_in *)&cn->addr;
    a->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a->sin_addr);
}

/* The sender check against the node table as accept_beat makes it: a configured node other
 * than this one, from its own address (another node's address is no better than a stranger's). */
static void test_hb_sender(void)
{
    struct psconf_node cn[3];
    set_addr(&cn[0], 0, "127.0.0.1");
    set_addr(&cn[1], 1, "127.0.0.2");
    set_addr(&cn[2], 5, "127.0.0.6");
    struct psid_node nodes[3] = {{.conf = &cn[0]}, {.conf = &cn[1]}, {.conf = &cn[2]}};
    struct psid d;
    memset(&d, 0, sizeof d);
    d.conf.nodes = cn;
    d.conf.nnodes = 3;
    d.self = &cn[0];
    d.nodes = nodes;
    struct sockaddr_in from = {.sin_family = AF_INET, .sin_port = htons(40000)};
    enum hb_drop why = HB_DROP__COUNT;
    inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    CU_ASSERT_PTR_EQUAL(membership_sender(&d, 1, &from, &why), &nodes[1]);
    inet_pton(AF_INET, "127.0.0.6", &from.sin_addr);
    CU_ASSERT_PTR_EQUAL(membership_sender(&d, 5, &from, &why), &nodes[2]);
    CU_ASSERT_EQUAL(why, HB_DROP__COUNT); /* untouched when the sender is right */
    inet_pton(AF_INET, "127.0.0.9", &from.sin_addr);
    CU_ASSERT_PTR_NULL(membership_sender(&d, 1, &from, &why));
    CU_ASSERT_EQUAL(why, HB_DROP_ADDRESS);
    inet_pton(AF_INET, "127.0.0.6", &from.sin_addr); /* node 5 speaking for node 1 */
    why = HB_DROP__COUNT;
    CU_ASSERT_PTR_NULL(membership_sender(&d, 1, &from, &why));
    CU_ASSERT_EQUAL(why, HB_DROP_ADDRESS);
    why = HB_DROP__COUNT; /* not configured, whatever the address */
    CU_ASSERT_PTR_NULL(membership_sender(&d, 4, &from, &why));
    CU_ASSERT_EQUAL(why, HB_DROP_UNKNOWN);
    inet_pton(AF_INET, "127.0.0.1", &from.sin_addr); /* this node itself */
    why = HB_DROP__COUNT;
    CU_ASSERT_PTR_NULL(membership_sender(&d, 0, &from, &why));
    CU_ASSERT_EQUAL(why, HB_DROP_UNKNOWN);
}

UNIT_SUITE(hbwire, UNIT_TEST(test_hb), UNIT_TEST(test_hb_key), UNIT_TEST(test_hb_address),
           UNIT_TEST(test_hb_sender))
