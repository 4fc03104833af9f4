/*
 * test_rdp_wire.c - unit tests for RDP's pure parts: header encode/decode and every kind of
 * malformed header, sequence arithmetic across wrap-around, the replay window, the MAC, the
 * RTT estimator and the fault specification parser.
 */
#include "../../rdp/auth.h"
#include "../../rdp/rtt.h"
#include "../../rdp/seq.h"
#include "../../rdp/wire.h"
#include "unit.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

static struct rdp_hdr data_hdr(void)
{
    struct rdp_hdr h = {.version = RDP_VERSION,
                        .type = RDP_T_DATA,
                        .flags = RDP_F_FIRST | RDP_F_LAST,
                        .src_node = 3,
                        .dst_node = 7,
                        .src_ep = 0x1234,
                        .dst_ep = 0xfffe,
                        .src_conn = 0x11223344,
                        .dst_conn = 0x55667788,
                        .seq = 0xfffffffe,
                        .ack = 5,
                        .wnd = 64,
                        .pn = 0x0102030405060708ull,
                        .msg_len = 10,
                        .len = 10};
    return h;
}

static size_t encode(uint8_t *buf, const struct rdp_hdr *h)
{
    rdp_hdr_encode(buf, h);
    memset(buf + RDP_HDR_LEN, 0xab, h->len);
    return RDP_OVERHEAD + h->len;
}

static enum rdp_drop_reason decode_fails(const uint8_t *buf, size_t n)
{
    struct rdp_hdr h;
    enum rdp_drop_reason why = RDP_DROP__COUNT;
    CU_ASSERT_FALSE(rdp_hdr_decode(buf, n, &h, &why));
    return why;
}

static void test_roundtrip(void)
{
    uint8_t buf[256];
    struct rdp_hdr h = data_hdr(), d;
    enum rdp_drop_reason why;
    size_t n = encode(buf, &h);
    CU_ASSERT_EQUAL(buf[0], RDP_VERSION);
    CU_ASSERT_EQUAL(be_get16(buf + 4), 3); /* network byte order */
    CU_ASSERT_EQUAL(be_get16(buf + 6), 0x1234);
    CU_ASSERT_EQUAL(be_get16(buf + 10), 0xfffe);
    CU_ASSERT_TRUE_FATAL(rdp_hdr_decode(buf, n, &d, &why));
    CU_ASSERT_EQUAL(d.src_node, 3);
    CU_ASSERT_EQUAL(d.src_ep, 0x1234);
    CU_ASSERT_EQUAL(d.dst_ep, 0xfffe);
    CU_ASSERT_EQUAL(d.type, RDP_T_DATA);
    CU_ASSERT_EQUAL(d.src_conn, 0x11223344u);
    CU_ASSERT_EQUAL(d.dst_conn, 0x55667788u);
    CU_ASSERT_EQUAL(d.seq, 0xfffffffeu);
    CU_ASSERT_EQUAL(d.pn, 0x0102030405060708ull);
    CU_ASSERT_EQUAL(d.msg_len, 10);
    CU_ASSERT_EQUAL(d.len, 10);

    /* the ACK request travels with a DATA packet */
    struct rdp_hdr r = h;
    r.flags |= RDP_F_ACKREQ;
    encode(buf, &r);
    CU_ASSERT_TRUE_FATAL(rdp_hdr_decode(buf, n, &d, &why));
    CU_ASSERT_EQUAL(d.flags, RDP_F_FIRST | RDP_F_LAST | RDP_F_ACKREQ);
    encode(buf, &h);

    rdp_hdr_patch(buf, 99, 17, 42);
    CU_ASSERT_TRUE(rdp_hdr_decode(buf, n, &d, &why));
    CU_ASSERT_EQUAL(d.ack, 99);
    CU_ASSERT_EQUAL(d.wnd, 17);
    CU_ASSERT_EQUAL(d.pn, 42);

    struct rdp_hs hs = {.incarnation = 0xdeadbeefcafef00dull, .max_payload = 1416}, hs2;
    for (int i = 0; i < RDP_HS_RAND; i++) hs.rand[i] = (uint8_t)(i * 37 + 1);
    h.type = RDP_T_SYN;
    h.pn = 0; /* handshakes carry no packet number */
    h.flags = 0;
    h.msg_len = 0;
    h.dst_conn = 0;
    h.len = RDP_HS_LEN;
    rdp_hdr_encode(buf, &h);
    rdp_hs_encode(buf + RDP_HDR_LEN, &hs);
    CU_ASSERT_TRUE(rdp_hdr_decode(buf, RDP_OVERHEAD + RDP_HS_LEN, &d, &why));
    rdp_hs_decode(buf + RDP_HDR_LEN, &hs2);
    CU_ASSERT_EQUAL(hs2.incarnation, hs.incarnation);
    CU_ASSERT_EQUAL(hs2.max_payload, 1416);
    CU_ASSERT_EQUAL(memcmp(hs2.rand, hs.rand, RDP_HS_RAND), 0);
}

static void test_malformed(void)
{
    uint8_t buf[256];
    struct rdp_hdr h = data_hdr(), d;
    enum rdp_drop_reason why;
    size_t n = encode(buf, &h);

    for (size_t k = 0; k < RDP_OVERHEAD; k++) CU_ASSERT_EQUAL(decode_fails(buf, k), RDP_DROP_SHORT);
    CU_ASSERT_EQUAL(decode_fails(buf, n - 1), RDP_DROP_MALFORMED); /* length field disagrees */
    CU_ASSERT_EQUAL(decode_fails(buf, RDP_MAX_DGRAM + 1), RDP_DROP_MALFORMED);

    struct rdp_hdr bad;
#define EXPECT(field_change, reason)                                                               \
    do {                                                                                           \
        bad = data_hdr();                                                                          \
        field_change;                                                                              \
        n = encode(buf, &bad);                                                                     \
        CU_ASSERT_EQUAL(decode_fails(buf, n), reason);                                             \
    } while (0)
    EXPECT(bad.version = 1, RDP_DROP_VERSION); /* before per-connection keys */
    EXPECT(bad.version = 3, RDP_DROP_VERSION);
    EXPECT(bad.version = 0, RDP_DROP_VERSION);
    EXPECT(bad.pn = 0, RDP_DROP_MALFORMED); /* data is numbered from 1 */
    EXPECT(bad.type = 0, RDP_DROP_MALFORMED);
    EXPECT(bad.type = RDP_T__MAX, RDP_DROP_MALFORMED);
    EXPECT(bad.type = 200, RDP_DROP_MALFORMED);
    EXPECT(bad.flags = 0x8, RDP_DROP_MALFORMED); /* unknown */
    EXPECT(bad.flags = RDP_F_FIRST | RDP_F_LAST | RDP_F_ACKREQ | 0x8000, RDP_DROP_MALFORMED);
    EXPECT(bad.src_conn = 0, RDP_DROP_MALFORMED);
    EXPECT(bad.dst_conn = 0, RDP_DROP_MALFORMED);
    EXPECT(bad.msg_len = 0, RDP_DROP_MALFORMED);
    EXPECT(bad.msg_len = RDP_MAX_MSG + 1, RDP_DROP_MALFORMED);
    EXPECT(bad.msg_len = 5, RDP_DROP_MALFORMED);  /* fragment longer than message */
    EXPECT(bad.msg_len = 20, RDP_DROP_MALFORMED); /* FIRST|LAST but not whole */
    EXPECT((bad.len = 0, bad.msg_len = 0), RDP_DROP_MALFORMED);
    EXPECT((bad.type = RDP_T_ACK, bad.flags = 1), RDP_DROP_MALFORMED);
    EXPECT((bad.type = RDP_T_ACK, bad.flags = 0), RDP_DROP_MALFORMED); /* msg_len set */
    EXPECT((bad.type = RDP_T_SYN, bad.flags = 0, bad.msg_len = 0, bad.pn = 0),
           RDP_DROP_MALFORMED); /* len */
    EXPECT((bad.type = RDP_T_SYN, bad.flags = 0, bad.msg_len = 0, bad.len = RDP_HS_LEN, bad.pn = 0),
           RDP_DROP_MALFORMED); /* SYN with a dst_conn */
    EXPECT((bad.type = RDP_T_SYNACK, bad.flags = 0, bad.msg_len = 0, bad.len = RDP_HS_LEN),
           RDP_DROP_MALFORMED); /* a handshake with a packet number */
    EXPECT((bad.type = RDP_T_RST, bad.flags = 0, bad.msg_len = 0, bad.len = 3), RDP_DROP_MALFORMED);
#undef EXPECT
    /* the MAC field: 0 or 1, and 0 on handshakes and resets */
    h = data_hdr();
    n = encode(buf, &h);
    buf[47] = 2;
    CU_ASSERT_EQUAL(decode_fails(buf, n), RDP_DROP_MALFORMED);
    buf[47] = 0;
    buf[46] = 1;
    CU_ASSERT_EQUAL(decode_fails(buf, n), RDP_DROP_MALFORMED);
    buf[46] = 0;
    buf[47] = 1;
    CU_ASSERT_TRUE(rdp_hdr_decode(buf, n, &d, &why));
    CU_ASSERT_EQUAL(d.mac, RDP_MAC_AES256GCM);
    h = data_hdr();
    h.type = RDP_T_SYNACK;
    h.flags = 0;
    h.msg_len = 0;
    h.pn = 0;
    h.len = RDP_HS_LEN;
    n = encode(buf, &h);
    rdp_hs_encode(buf + RDP_HDR_LEN, &(struct rdp_hs){.incarnation = 1, .max_payload = 1408});
    CU_ASSERT_TRUE(rdp_hdr_decode(buf, n, &d, &why));
    buf[47] = 1;
    CU_ASSERT_EQUAL(decode_fails(buf, n), RDP_DROP_MALFORMED);
    buf[47] = 0;

    /* the largest payload a handshake offers: from the smallest MTU's to the largest
     * datagram's, on SYN, SYNACK and RST alike */
    const uint8_t types[] = {RDP_T_SYN, RDP_T_SYNACK, RDP_T_RST};
    const struct {
        uint32_t max_payload;
        bool ok;
    } offers[] = {{RDP_MIN_PAYLOAD, true},
                  {RDP_MIN_PAYLOAD - 1, false},
                  {0, false},
                  {RDP_MAX_DGRAM - RDP_OVERHEAD, true},
                  {RDP_MAX_DGRAM - RDP_OVERHEAD + 1, false},
                  {0xffffffffu, false}};
    for (size_t t = 0; t < sizeof types; t++)
        for (size_t k = 0; k < sizeof offers / sizeof offers[0]; k++) {
            h.type = types[t];
            h.dst_conn = types[t] == RDP_T_SYN ? 0 : 0x55667788;
            n = encode(buf, &h);
            rdp_hs_encode(buf + RDP_HDR_LEN,
                          &(struct rdp_hs){.incarnation = 1, .max_payload = offers[k].max_payload});
            if (offers[k].ok) {
                CU_ASSERT_TRUE(rdp_hdr_decode(buf, n, &d, &why));
            } else {
                CU_ASSERT_EQUAL(decode_fails(buf, n), RDP_DROP_MALFORMED);
            }
        }

    /* an ACK with a SACK bitmap is fine */
    h = data_hdr();
    h.type = RDP_T_ACK;
    h.flags = 0;
    h.msg_len = 0;
    h.len = 3;
    n = encode(buf, &h);
    CU_ASSERT_TRUE(rdp_hdr_decode(buf, n, &d, &why));
}

static void test_seq_wrap(void)
{
    CU_ASSERT_TRUE(seq_lt(0xfffffff0u, 0x10u));
    CU_ASSERT_TRUE(seq_gt(0x10u, 0xfffffff0u));
    CU_ASSERT_TRUE(seq_le(5, 5));
    CU_ASSERT_TRUE(seq_ge(5, 5));
    CU_ASSERT_FALSE(seq_lt(5, 5));
    CU_ASSERT_TRUE(seq_lt(0x7ffffffeu, 0x7fffffffu));
    CU_ASSERT_TRUE(seq_lt(0xffffffffu, 0));
    CU_ASSERT_TRUE(seq_in(0, 0xfffffffeu, 2));
    CU_ASSERT_TRUE(seq_in(0xffffffffu, 0xfffffffeu, 2));
    CU_ASSERT_FALSE(seq_in(2, 0xfffffffeu, 2));
    CU_ASSERT_FALSE(seq_in(0xfffffffdu, 0xfffffffeu, 2));
    uint32_t a = 0xffffff00u;
    for (int i = 0; i < 512; i++, a++) CU_ASSERT_TRUE(seq_lt(a, a + 1) && seq_gt(a + 100, a));
}

static void test_replay(void)
{
    static struct rdp_replay r; /* zeroed */
    CU_ASSERT_FALSE(rdp_replay_check(&r, 0));
    CU_ASSERT_TRUE(rdp_replay_check(&r, 1000000));
    rdp_replay_update(&r, 1000000);
    CU_ASSERT_FALSE(rdp_replay_check(&r, 1000000)); /* exact replay */
    CU_ASSERT_TRUE(rdp_replay_check(&r, 999999));   /* late, not seen */
    rdp_replay_update(&r, 999999);
    CU_ASSERT_FALSE(rdp_replay_check(&r, 999999));
    CU_ASSERT_TRUE(rdp_replay_check(&r, 1000001));
    CU_ASSERT_FALSE(rdp_replay_check(&r, 1000000 - RDP_REPLAY_BITS)); /* too old */
    /* a jump far ahead forgets nothing it must remember and keeps old ones rejected */
    rdp_replay_update(&r, 1000000 + 3 * RDP_REPLAY_BITS);
    CU_ASSERT_FALSE(rdp_replay_check(&r, 1000000));
    CU_ASSERT_TRUE(rdp_replay_check(&r, 1000000 + 3 * RDP_REPLAY_BITS - 5));
    CU_ASSERT_FALSE(rdp_replay_check(&r, 1000000 + 3 * RDP_REPLAY_BITS));
    /* every packet number within the window is accepted once, then refused */
    uint64_t top = 1000000 + 3 * RDP_REPLAY_BITS;
    for (uint64_t pn = top - 1; pn > top - (RDP_REPLAY_BITS - 64); pn--) {
        CU_ASSERT_TRUE(rdp_replay_check(&r, pn));
        rdp_replay_update(&r, pn);
        CU_ASSERT_FALSE(rdp_replay_check(&r, pn));
    }
    /* a small step forward clears the slots that enter the window */
    for (uint64_t pn = top + 1; pn < top + 3 * 64; pn++) CU_ASSERT_TRUE(rdp_replay_check(&r, pn));
}

static void test_mac(void)
{
    CU_ASSERT_TRUE_FATAL(sodium_init() >= 0);
    uint8_t key[32], key2[32], pkt[128];
    memset(key, 1, sizeof key);
    memset(key2, 2, sizeof key2);
    for (int i = 0; i < 100; i++) pkt[i] = (uint8_t)i;
    rdp_mac_sign(key, 1, 2, 77, pkt, 100);
    CU_ASSERT_TRUE(rdp_mac_verify(key, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify(key2, 1, 2, 77, pkt, 100)); /* other key */
    CU_ASSERT_FALSE(rdp_mac_verify(key, 1, 2, 78, pkt, 100));  /* other packet number */
    CU_ASSERT_FALSE(rdp_mac_verify(key, 2, 1, 77, pkt, 100));  /* other direction */
    CU_ASSERT_FALSE(rdp_mac_verify(key, 1, 2, 77, pkt, 99));   /* truncated */
    for (int bit = 0; bit < 116 * 8; bit += 7) {
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        CU_ASSERT_FALSE(rdp_mac_verify(key, 1, 2, 77, pkt, 100));
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
    }
    CU_ASSERT_TRUE(rdp_mac_verify(key, 1, 2, 77, pkt, 100));

    /* the context form: ChaCha20-Poly1305 agrees with the raw functions; where AES may be
     * used, AES-256-GCM verifies its own tags only; a context without AES rejects AES packets */
    const enum rdp_mac_alg CC = RDP_MAC_CHACHA20POLY1305, AES = RDP_MAC_AES256GCM;
    struct rdp_mac cc, aes;
    CU_ASSERT_EQUAL_FATAL(rdp_mac_init(&cc, CC, key), 0);
    CU_ASSERT_FALSE(cc.aes);
    CU_ASSERT_TRUE(rdp_mac_verify_ctx(&cc, CC, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&cc, AES, 1, 2, 77, pkt, 100));
    errno = 0;
    CU_ASSERT_EQUAL(rdp_mac_init(&aes, (enum rdp_mac_alg)7, key), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
    if (!rdp_mac_available(AES)) {
        CU_ASSERT_EQUAL(rdp_mac_init(&aes, AES, key), -1);
        CU_ASSERT_EQUAL_FATAL(rdp_mac_init(&aes, RDP_MAC_AUTO, key), 0);
        CU_ASSERT_FALSE(aes.aes);
        rdp_mac_free(&aes);
        rdp_mac_free(&cc);
        return;
    }
    CU_ASSERT_EQUAL_FATAL(rdp_mac_init(&aes, RDP_MAC_AUTO, key), 0);
    CU_ASSERT_TRUE(aes.aes);
    CU_ASSERT_TRUE(rdp_mac_verify_ctx(&aes, CC, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&aes, AES, 1, 2, 77, pkt, 100));
    rdp_mac_sign_ctx(&aes, AES, 1, 2, 77, pkt, 100);
    CU_ASSERT_TRUE(rdp_mac_verify_ctx(&aes, AES, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&aes, CC, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&cc, AES, 1, 2, 77, pkt, 100));
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&aes, AES, 1, 2, 78, pkt, 100));
    pkt[5] ^= 1;
    CU_ASSERT_FALSE(rdp_mac_verify_ctx(&aes, AES, 1, 2, 77, pkt, 100));
    rdp_mac_free(&cc);
    rdp_mac_free(&aes);

    /* the two subkeys differ from each other and from the cluster key */
    uint8_t s1[32], s2[32];
    rdp_mac_subkey(key, CC, s1);
    rdp_mac_subkey(key, AES, s2);
    CU_ASSERT_NOT_EQUAL(memcmp(s1, s2, 32), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(s1, key, 32), 0);
}

/* Every implementation (IPsec-MB where built in; libsodium below RDP_MAC_BIG and libcrypto
 * from it on) must give libsodium's one-shot tag, bit for bit, for both algorithms, at the
 * sizes around the switch-over, of Ethernet, jumbo and loopback datagrams and at 28 spread
 * sizes, and reject what libsodium rejects. */
static void test_mac_big(void)
{
    CU_ASSERT_TRUE_FATAL(sodium_init() >= 0);
    static uint8_t pkt[65536], ref[16];
    uint8_t key[32], n[12] = {0, 1, 0, 2};
    for (size_t i = 0; i < sizeof key; i++) key[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof pkt; i++) pkt[i] = (uint8_t)(i * 131 + (i >> 8));
    size_t sizes[40] = {1,           15,
                        16,          17,
                        100,         RDP_MAC_BIG - 1,
                        RDP_MAC_BIG, RDP_MAC_BIG + 1,
                        1456,        8956,
                        65000,       sizeof pkt - RDP_MAC_LEN};
    for (size_t k = 12; k < sizeof sizes / sizeof sizes[0]; k++)
        sizes[k] = 1 + (size_t)((k * 2654435761u) % (sizeof pkt - RDP_MAC_LEN)); /* spread */
    int tested = 0, split[RDP_MAC_IMPL_IPSECMB + 1][2] = {{0}};
    for (int impl = RDP_MAC_IMPL_PORTABLE; impl <= RDP_MAC_IMPL_IPSECMB; impl++) {
        for (int alg = 0; alg < 2; alg++) {
            struct rdp_mac m;
            if (alg == RDP_MAC_AES256GCM && !rdp_mac_available(RDP_MAC_AES256GCM)) break;
            if (rdp_mac_init_impl(&m, (enum rdp_mac_alg)alg, key, (enum rdp_mac_impl)impl) < 0) {
                CU_ASSERT_EQUAL_FATAL(impl, RDP_MAC_IMPL_IPSECMB); /* not built in */
                CU_ASSERT_EQUAL(errno, ENOTSUP);
                break;
            }
            tested++;
            CU_ASSERT_EQUAL(impl == RDP_MAC_IMPL_PORTABLE,
                            strcmp(rdp_mac_impl_name(&m), "portable") == 0);
            uint8_t sub[32];
            rdp_mac_subkey(key, (enum rdp_mac_alg)alg, sub);
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                size_t len = sizes[k];
                uint64_t pn = 1000 + k;
                be_put64(n + 4, pn);
                unsigned long long ml;
                uint8_t none[1];
                if (alg == RDP_MAC_AES256GCM)
                    crypto_aead_aes256gcm_encrypt_detached(none, ref, &ml, NULL, 0, pkt, len, NULL,
                                                           n, sub);
                else
                    crypto_aead_chacha20poly1305_ietf_encrypt_detached(none, ref, &ml, NULL, 0, pkt,
                                                                       len, NULL, n, sub);
                const enum rdp_mac_alg A = (enum rdp_mac_alg)alg;
                rdp_mac_sign_ctx(&m, A, 1, 2, pn, pkt, len);
                CU_ASSERT_EQUAL(memcmp(pkt + len, ref, sizeof ref), 0);
                CU_ASSERT_TRUE(rdp_mac_verify_ctx(&m, A, 1, 2, pn, pkt, len));
                CU_ASSERT_FALSE(rdp_mac_verify_ctx(&m, A, 1, 2, pn + 1, pkt, len));
                pkt[len / 2] ^= 0x10;
                CU_ASSERT_FALSE(rdp_mac_verify_ctx(&m, A, 1, 2, pn, pkt, len));
                pkt[len / 2] ^= 0x10;
                pkt[len - 1] ^= 0x80; /* the last byte of a partial block */
                CU_ASSERT_FALSE(rdp_mac_verify_ctx(&m, A, 1, 2, pn, pkt, len));
                pkt[len - 1] ^= 0x80;
                pkt[len + 3] ^= 1; /* the tag itself */
                CU_ASSERT_FALSE(rdp_mac_verify_ctx(&m, A, 1, 2, pn, pkt, len));
                pkt[len + 3] ^= 1;
                /* the sender's two-piece MAC (header, then a payload elsewhere): same tag */
                if (len > RDP_HDR_LEN && rdp_mac_can_split(&m, A, len)) {
                    static uint8_t payload[65536];
                    uint8_t tag[16];
                    memcpy(payload, pkt + RDP_HDR_LEN, len - RDP_HDR_LEN);
                    rdp_mac_sign_split(&m, A, 1, 2, pn, pkt, RDP_HDR_LEN, payload,
                                       len - RDP_HDR_LEN, tag);
                    CU_ASSERT_EQUAL(memcmp(tag, ref, sizeof ref), 0);
                    split[impl][alg]++;
                }
            }
            rdp_mac_free(&m);
        }
    }
    CU_ASSERT(tested >= 1);
    /* libcrypto splits both MACs from RDP_MAC_BIG on; IPsec-MB splits its GMAC */
    CU_ASSERT(split[RDP_MAC_IMPL_PORTABLE][RDP_MAC_CHACHA20POLY1305] >= 20);
    if (rdp_mac_available(RDP_MAC_AES256GCM)) {
        CU_ASSERT(split[RDP_MAC_IMPL_PORTABLE][RDP_MAC_AES256GCM] >= 20);
        CU_ASSERT(split[RDP_MAC_IMPL_IPSECMB][RDP_MAC_AES256GCM] >= 30 ||
                  !rdp_mac_impl_available(RDP_MAC_IMPL_IPSECMB));
    }
    struct rdp_mac m;
    CU_ASSERT_EQUAL(rdp_mac_init_impl(&m, RDP_MAC_AUTO, key, (enum rdp_mac_impl)9), -1);
    CU_ASSERT_EQUAL(errno, EINVAL);
}

static void test_rtt(void)
{
    struct rdp_rtt r;
    rdp_rtt_init(&r, 20000, 2000, 200000);
    CU_ASSERT_EQUAL(r.rto_us, 20000);
    CU_ASSERT_FALSE(r.sampled);
    rdp_rtt_sample(&r, 1000);
    CU_ASSERT_EQUAL(r.srtt_us, 1000);
    CU_ASSERT_EQUAL(r.rttvar_us, 500);
    CU_ASSERT_EQUAL(r.rto_us, 3000); /* 1000 + 4 * 500 */
    for (int i = 0; i < 100; i++) rdp_rtt_sample(&r, 100);
    CU_ASSERT(r.srtt_us >= 100 && r.srtt_us < 110);
    CU_ASSERT_EQUAL(r.rto_us, 2000); /* clamped to the floor */
    rdp_rtt_backoff(&r);
    CU_ASSERT_EQUAL(r.rto_us, 4000);
    for (int i = 0; i < 20; i++) rdp_rtt_backoff(&r);
    CU_ASSERT_EQUAL(r.rto_us, 200000); /* ceiling */
    rdp_rtt_reset_backoff(&r);
    CU_ASSERT_EQUAL(r.rto_us, 2000);
    rdp_rtt_sample(&r, 1000000);
    CU_ASSERT_EQUAL(r.rto_us, 200000);

    struct rdp_config c;
    rdp_config_defaults(&c);
    CU_ASSERT_EQUAL(rdp_lost_bound_us(&c), (uint64_t)(c.max_retrans + 1) * c.rto_max_us);
}

static void test_fault_spec(void)
{
    struct rdp_faults f;
    /* a different value for each field, so that one written into another is seen */
    CU_ASSERT_EQUAL(
        rdp_parse_faults("drop=0.2,dup=0.1,reorder=0.15,corrupt=0.01,dir=tx,seed=7", &f), 0);
    CU_ASSERT_DOUBLE_EQUAL(f.drop, 0.2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(f.dup, 0.1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(f.reorder, 0.15, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(f.corrupt, 0.01, 1e-12);
    CU_ASSERT_EQUAL(f.dir, RDP_FAULT_TX);
    CU_ASSERT_EQUAL(f.seed, 7);
    /* loss= is drop=; the rest is off, both directions */
    CU_ASSERT_EQUAL(rdp_parse_faults("loss=1", &f), 0);
    CU_ASSERT_DOUBLE_EQUAL(f.drop, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(f.dup + f.reorder + f.corrupt, 0.0, 1e-12);
    CU_ASSERT_EQUAL(f.dir, RDP_FAULT_BOTH);
    CU_ASSERT_EQUAL(rdp_parse_faults("drop=1.5", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults("drop=-0.1", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults("drop=abc", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults("flood=0.1", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults("drop", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults("dir=up", &f), -1);
    CU_ASSERT_EQUAL(rdp_parse_faults(NULL, &f), -1);
}

/* The connection keys: both ends compute the same pair from the same halves, whichever side
 * they are on; the two directions differ; every field of either half, and the handshake key,
 * changes both; the handshake MAC covers every byte and needs the right key. */
static void test_session_keys(void)
{
    CU_ASSERT_TRUE_FATAL(sodium_init() >= 0);
    uint8_t hkey[32], hkey2[32], cluster[32];
    memset(cluster, 7, sizeof cluster);
    rdp_hs_key(cluster, hkey);
    CU_ASSERT_NOT_EQUAL(memcmp(hkey, cluster, 32), 0);
    memcpy(hkey2, hkey, 32);
    hkey2[0] ^= 1;
    struct rdp_half a = {.id = 1, .conn = 0x1111, .iseq = 5}, b = {.id = 2, .conn = 0x2222};
    memset(a.rand, 0xaa, RDP_HS_RAND);
    memset(b.rand, 0xbb, RDP_HS_RAND);
    uint8_t ab[32], ba[32], ab2[32], ba2[32];
    rdp_session_keys(hkey, &a, &b, ab, ba);
    rdp_session_keys(hkey, &b, &a, ba2, ab2); /* b's view */
    CU_ASSERT_EQUAL(memcmp(ab, ab2, 32), 0);
    CU_ASSERT_EQUAL(memcmp(ba, ba2, 32), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(ab, ba, 32), 0);
    struct rdp_half va[5];
    for (int i = 0; i < 5; i++) va[i] = a;
    va[0].id = 3;
    va[1].conn ^= 1;
    va[2].iseq ^= 1;
    va[3].rand[31] ^= 1;
    va[4].rand[0] ^= 0x80;
    for (int i = 0; i < 5; i++) {
        rdp_session_keys(hkey, &va[i], &b, ab2, ba2);
        CU_ASSERT_NOT_EQUAL(memcmp(ab, ab2, 32), 0);
        CU_ASSERT_NOT_EQUAL(memcmp(ba, ba2, 32), 0);
    }
    rdp_session_keys(hkey2, &a, &b, ab2, ba2);
    CU_ASSERT_NOT_EQUAL(memcmp(ab, ab2, 32), 0);

    uint8_t pkt[RDP_HDR_LEN + RDP_HS_LEN + RDP_MAC_LEN];
    for (size_t i = 0; i < sizeof pkt; i++) pkt[i] = (uint8_t)(i * 13);
    size_t body = RDP_HDR_LEN + RDP_HS_LEN;
    rdp_hs_sign(hkey, pkt, body);
    CU_ASSERT_TRUE(rdp_hs_verify(hkey, pkt, body));
    CU_ASSERT_FALSE(rdp_hs_verify(hkey2, pkt, body));
    CU_ASSERT_FALSE(rdp_hs_verify(cluster, pkt, body)); /* not the raw cluster key */
    for (size_t bit = 0; bit < sizeof pkt * 8; bit += 5) {
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
        CU_ASSERT_FALSE(rdp_hs_verify(hkey, pkt, body));
        pkt[bit / 8] ^= (uint8_t)(1 << (bit % 8));
    }
}

UNIT_SUITE(rdp_wire, UNIT_TEST(test_roundtrip), UNIT_TEST(test_malformed), UNIT_TEST(test_seq_wrap),
           UNIT_TEST(test_replay), UNIT_TEST(test_mac), UNIT_TEST(test_mac_big),
           UNIT_TEST(test_rtt), UNIT_TEST(test_fault_spec), UNIT_TEST(test_session_keys))
