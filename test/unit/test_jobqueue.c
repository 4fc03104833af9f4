/*
 * test_jobqueue.c - the queue of spawns that wait for a row of the gang matrix
 * (psid/jobqueue.c): order, a copy of the request that outlives it, lookup by client,
 * removal anywhere (head, middle, tail) with the tail kept right, and the bounds in all and
 * per user.
 */
#include "../../psid/jobqueue.h"
#include "psproto.h"
#include "unit.h"

#include <errno.h>
#include <string.h>

/* a request of one field, PSF_NP = np, with id */
static struct psmsg req(struct psmsg_buf *b, uint32_t id, uint32_t np)
{
    psmsg_begin(b, PSM_SPAWN, id);
    psmsg_put_u32(b, PSF_NP, np);
    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psmsg_end(b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b->data, b->len, &m), 0);
    return m;
}

static void test_jobq_order(void)
{
    struct jobq q = {0};
    struct psmsg_buf b = {0};
    int clients[4];
    for (uint32_t i = 0; i < 4; i++) {
        struct psmsg m = req(&b, 100 + i, 10 + i);
        CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 1000, &m, i), (int)i + 1);
        psmsg_buf_free(&b); /* the queue holds its own copy */
    }
    CU_ASSERT_EQUAL(q.n, 4);
    CU_ASSERT_EQUAL(jobq_of_uid(&q, 1000), 4);
    CU_ASSERT_EQUAL(jobq_of_uid(&q, 1001), 0);
    struct jobq_entry *e = jobq_of_client(&q, (struct client *)&clients[2]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    struct psmsg m = jobq_msg(e);
    uint32_t np = 0;
    CU_ASSERT_EQUAL(m.type, PSM_SPAWN);
    CU_ASSERT_EQUAL(m.id, 102);
    CU_ASSERT_EQUAL(psmsg_get_u32(&m.body, PSF_NP, &np), 0);
    CU_ASSERT_EQUAL(np, 12);
    jobq_del(&q, e); /* the middle */
    CU_ASSERT_PTR_NULL(jobq_of_client(&q, (struct client *)&clients[2]));
    jobq_del(&q, q.tail); /* the tail: the one before becomes it */
    CU_ASSERT_EQUAL(q.tail->id, 101);
    CU_ASSERT_EQUAL(q.head->id, 100);
    struct psmsg m5 = req(&b, 105, 1);
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[3], 1000, &m5, 9), 3);
    psmsg_buf_free(&b);
    CU_ASSERT_EQUAL(q.tail->id, 105);
    jobq_del(&q, q.head);
    CU_ASSERT_EQUAL(q.head->id, 101);
    CU_ASSERT_EQUAL(q.head->since_ns, 1);
    jobq_free(&q);
    CU_ASSERT_EQUAL(q.n, 0);
    CU_ASSERT_PTR_NULL(q.head);
    CU_ASSERT_PTR_NULL(q.tail);
}

static void test_jobq_bounds(void)
{
    struct jobq q = {0};
    struct psmsg_buf b = {0};
    struct psmsg m = req(&b, 1, 1);
    static int clients[JOBQ_MAX + 1];
    unsigned i = 0;
    for (; i < JOBQ_PER_UID; i++)
        CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 0, &m, 0), (int)i + 1);
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 0, &m, 0), -1); /* root too */
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    for (; q.n < JOBQ_MAX; i++) {
        int want = (int)q.n + 1;
        CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 1000 + i, &m, 0), want);
    }
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 99999, &m, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    jobq_del(&q, q.head);
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[i], 99999, &m, 0), (int)JOBQ_MAX);
    psmsg_buf_free(&b);
    jobq_free(&q);
}

UNIT_SUITE(jobqueue, UNIT_TEST(test_jobq_order), UNIT_TEST(test_jobq_bounds))
