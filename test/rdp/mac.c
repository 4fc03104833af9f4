/*
 * mac.c - negotiation of the packet MAC (suite rdp_mac).
 *
 *  test_mac_negotiation  streams both ways between endpoints with every pair of MAC settings
 *                        (auto, chacha20poly1305, aes256gcm where the CPU has AES-NI): every
 *                        message arrives, nothing is dropped for a bad MAC, and each side sends
 *                        with AES-256-GCM exactly when both allow it.
 *
 * The MAC of a packet that claims the other algorithm, and of one a node may not verify, is
 * checked in test/unit/test_rdp_wire.c (test_mac).
 */
#include "harness.h"
#include "unit.h"

#include <stdio.h>

static void test_mac_negotiation(void)
{
    const enum rdp_mac_alg prefs[] = {RDP_MAC_AUTO, RDP_MAC_CHACHA20POLY1305, RDP_MAC_AES256GCM};
    const int have_aes = rdp_mac_available(RDP_MAC_AES256GCM);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            if (!have_aes && (i == 2 || j == 2)) continue; /* can't open such an endpoint */
            struct rdp_config ca, cb;
            h_config(&ca);
            cb = ca;
            ca.mac = prefs[i];
            cb.mac = prefs[j];
            struct rdp_stats st[2];
            struct rdp_peer_stats ps[2];
            if (h_duplex_run(&ca, &cb, h_scale(200), 64 << 10, st, ps) < 0) continue;
            int aes = have_aes && i != 1 && j != 1;
            enum rdp_mac_alg want = aes ? RDP_MAC_AES256GCM : RDP_MAC_CHACHA20POLY1305;
            CU_ASSERT_EQUAL(ps[0].mac, want);
            CU_ASSERT_EQUAL(ps[1].mac, want);
            CU_ASSERT_EQUAL(st[0].drops[RDP_DROP_MAC] + st[1].drops[RDP_DROP_MAC], 0);
            if (ps[0].mac != want || ps[1].mac != want)
                fprintf(stderr, "mac: prefs %d/%d: A sends with %d, B with %d, expected %d\n",
                        prefs[i], prefs[j], ps[0].mac, ps[1].mac, want);
        }
}

UNIT_SUITE(rdp_mac, UNIT_TEST(test_mac_negotiation))
