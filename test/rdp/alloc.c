/*
 * alloc.c - RDP allocates nothing per packet once it runs (suite rdp_alloc).
 *
 *  test_steady_alloc  A and B stream to each other (4 KiB messages, 3 packets each at MTU
 *               1500; 20,000 from A, 5,000 from B) after a warm-up of 5,000 and 1,250 that
 *               grows the packet pool: while the measured messages go through, the process
 *               calls malloc, calloc and realloc fewer than once per 100 messages (~75,000
 *               data packets, and their ACKs), every message arriving in order.
 *
 * The count comes from this binary's own malloc, calloc and realloc, which count and call
 * glibc's __libc_malloc, __libc_calloc and __libc_realloc (free and the aligned allocators
 * stay glibc's). Not in the AddressSanitizer build, whose runtime owns the allocator: there the
 * suite does not exist.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_ASAN 1
#endif

#ifndef ALLOC_ASAN
#include "harness.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static unsigned long allocs; /* calls of the three below, since the process started */

void *malloc(size_t n)
{
    allocs++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    allocs++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    allocs++;
    return __libc_realloc(p, n);
}

static void test_steady_alloc(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 21);
    struct rdp_config cfg;
    h_config(&cfg);
    cfg.mtu = 1500;
    struct h_ep a, b;
    struct h_net net;
    if (h_open_pair(&net, &a, &b, key, key, &cfg) < 0) return;
    const uint64_t warm = 5000, n = 20000;
    /* the warm-up, then the same streams extended by the measured messages */
    struct h_duplex d = {.a = &a, .b = &b};
    h_stream_init(&d.ab, &a, 2, warm, 4096, 4096);
    h_stream_init(&d.ba, &b, 1, warm / 4, 4096, 4096);
    CU_ASSERT_EQUAL(h_run(&net, h_duplex_done, &d, H_S(30)), 1);
    unsigned long before = allocs;
    d.ab.total = warm + n;
    d.ba.total = (warm + n) / 4;
    CU_ASSERT_EQUAL(h_run(&net, h_duplex_done, &d, H_S(60)), 1);
    unsigned long used = allocs - before;
    CU_ASSERT_EQUAL(d.failed, 0);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, warm + n));
    CU_ASSERT(h_check_recv_seq(&a, 2, 0, (warm + n) / 4));
    struct rdp_stats sa;
    rdp_stats(a.rdp, &sa);
    CU_ASSERT(sa.pkts_sent >= 3 * (warm + n)); /* really 3 packets per message */
    uint64_t msgs = n + n / 4;
    CU_ASSERT(used < msgs / 100);
    if (used >= msgs / 100 || getenv("RDP_TEST_VERBOSE"))
        fprintf(stderr, "alloc: %lu allocations for %llu messages (%llu packets sent by A)\n", used,
                (unsigned long long)msgs, (unsigned long long)sa.pkts_sent);
    h_ep_free(&a);
    h_ep_free(&b);
}

UNIT_SUITE(rdp_alloc, UNIT_TEST(test_steady_alloc))
#endif
