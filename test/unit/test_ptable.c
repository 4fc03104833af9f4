/*
 * test_ptable.c - psid's bounded table of pending entries (psid/ptable.c): keyed lookup,
 * the bounds in all and per uid (root aside), the count per uid through many adds and
 * removals in any order, and expiry on the loop.
 */
#include "../../psid/ptable.h"
#include "psloop.h"
#include "unit.h"

#include <stdlib.h>

struct rec {
    int id;
    bool expired;
    struct pt_entry e;
};

static void expire(struct pt_entry *e)
{
    struct rec *r = PT_OWNER(e, struct rec, e);
    r->expired = true;
    ptable_del(e);
}

/* Found by key, several of one key, gone once removed; the bounds. */
static void test_ptable_bounds(void)
{
    struct loop *l = loop_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    struct ptable t;
    CU_ASSERT_EQUAL_FATAL(ptable_init(&t, l, 8, 3, expire), 0);
    struct rec r[10] = {0};
    uint64_t k = ptable_key(&t, "a", 1);
    CU_ASSERT_NOT_EQUAL(k, ptable_key(&t, "b", 1));
    CU_ASSERT_EQUAL(ptable_add(&t, &r[0].e, k, 1000, 0), 0);
    CU_ASSERT_EQUAL(ptable_add(&t, &r[1].e, k, 1000, 0), 0);
    CU_ASSERT_EQUAL(ptable_add(&t, &r[2].e, 7, 1000, 0), 0);
    CU_ASSERT_EQUAL(ptable_add(&t, &r[3].e, 8, 1000, 0), -1); /* its uid's share */
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    CU_ASSERT_EQUAL(ptable_of_uid(&t, 1000), 3);
    CU_ASSERT_EQUAL(ptable_add(&t, &r[3].e, 9, UINT32_MAX, 0), -1); /* no such uid */
    CU_ASSERT_EQUAL(errno, EINVAL);
    CU_ASSERT_PTR_EQUAL(ptable_find(&t, k), &r[1].e); /* newest first */
    CU_ASSERT_PTR_EQUAL(ptable_find_next(&r[1].e), &r[0].e);
    CU_ASSERT_PTR_NULL(ptable_find_next(&r[0].e));
    for (int i = 3; i < 8; i++) CU_ASSERT_EQUAL(ptable_add(&t, &r[i].e, (uint64_t)i, 0, 0), 0);
    CU_ASSERT_EQUAL(ptable_add(&t, &r[8].e, 99, 0, 0), -1); /* the table's bound: root too */
    ptable_del(&r[1].e);
    CU_ASSERT_PTR_EQUAL(ptable_find(&t, k), &r[0].e);
    CU_ASSERT_EQUAL(ptable_of_uid(&t, 1000), 2);
    CU_ASSERT_TRUE(ptable_room(&t, 1000));
    ptable_del(&r[0].e);
    CU_ASSERT_PTR_NULL(ptable_find(&t, k));
    ptable_fini(&t);
    loop_free(l);
}

/* The count per uid stays right through adds and removals in random order, many uids
 * colliding in the count table. */
static void test_ptable_uids(void)
{
    struct loop *l = loop_new();
    struct ptable t;
    CU_ASSERT_EQUAL_FATAL(ptable_init(&t, l, 512, 0, expire), 0);
    enum { N = 512 };
    static struct rec r[N];
    unsigned want[64] = {0};
    srand(7);
    for (int i = 0; i < N; i++) {
        uint32_t uid = 1000 + (uint32_t)(rand() % 64) * 1024; /* (colliding slots) */
        CU_ASSERT_EQUAL_FATAL(ptable_add(&t, &r[i].e, (uint64_t)i, uid, 0), 0);
        want[(uid - 1000) / 1024]++;
    }
    for (int round = 0; round < N; round++) {
        int i = rand() % N;
        if (!r[i].e.t) continue;
        want[(r[i].e.uid - 1000) / 1024]--;
        ptable_del(&r[i].e);
        bool ok = true;
        for (unsigned u = 0; u < 64; u++) ok &= ptable_of_uid(&t, 1000 + u * 1024) == want[u];
        CU_ASSERT_TRUE_FATAL(ok);
    }
    for (int i = 0; i < N; i++)
        if (r[i].e.t) ptable_del(&r[i].e);
    CU_ASSERT_EQUAL(t.n, 0);
    for (unsigned u = 0; u < 64; u++) CU_ASSERT_EQUAL(ptable_of_uid(&t, 1000 + u * 1024), 0);
    ptable_fini(&t);
    loop_free(l);
}

/* An entry's deadline calls the expire function; a removed one's never does. */
static void test_ptable_expiry(void)
{
    struct loop *l = loop_new();
    struct ptable t;
    CU_ASSERT_EQUAL_FATAL(ptable_init(&t, l, 4, 0, expire), 0);
    struct rec a = {0}, b = {0};
    uint64_t soon = loop_now() + 20000000ull;
    CU_ASSERT_EQUAL(ptable_add(&t, &a.e, 1, 5, soon), 0);
    CU_ASSERT_EQUAL(ptable_add(&t, &b.e, 2, 5, soon), 0);
    ptable_del(&b.e);
    for (int i = 0; i < 100 && !a.expired; i++) loop_step(l, loop_now() + 50000000ull);
    CU_ASSERT_TRUE(a.expired);
    CU_ASSERT_FALSE(b.expired);
    CU_ASSERT_EQUAL(t.n, 0);
    ptable_fini(&t);
    loop_free(l);
}

UNIT_SUITE(ptable, UNIT_TEST(test_ptable_bounds), UNIT_TEST(test_ptable_uids),
           UNIT_TEST(test_ptable_expiry))
