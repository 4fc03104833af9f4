/*
 * test_jobqueue.c - the queue of spawns that wait for a row of the gang matrix
 * (psid/jobqueue.c): order, a copy of the request that outlives it, lookup by client,
 * removal anywhere (head, middle, tail) with the tail kept right, and the bounds in all and
 * per user: of the count, and of the bytes held (each at its boundary).
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

/* a request whose body is len bytes (of a shared buffer: the queue copies it); a body up
 * to a user's whole share, more than one message holds, to reach the bound in few steps */
static struct psmsg blob(size_t len)
{
    static uint8_t buf[JOBQ_BYTES_PER_UID > PSMSG_MAX ? JOBQ_BYTES_PER_UID : PSMSG_MAX];
    CU_ASSERT_FATAL(len <= sizeof buf);
    return (struct psmsg){.type = PSM_SPAWN, .id = 7, .body = {buf, len}};
}

static void test_jobq_bytes(void)
{
    struct jobq q = {0};
    static int clients[JOBQ_MAX];
    unsigned k = 0;
    struct psmsg big = blob(PSMSG_MAX), one = blob(1), two = blob(2), none = blob(0);
    const size_t per_uid = JOBQ_BYTES_PER_UID;
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), per_uid);
    /* one user: up to its share exactly, then not a byte more */
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &big, 0), 1);
    size_t left = per_uid - PSMSG_MAX;
    struct psmsg rest = blob(left - 1);
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &rest, 0), 2);
    CU_ASSERT_EQUAL(q.bytes, per_uid - 1);
    CU_ASSERT_EQUAL(jobq_bytes_of_uid(&q, 1000), per_uid - 1);
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), 1);
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k], 1000, &two, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOSPC);
    CU_ASSERT_EQUAL(q.n, 2);
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &one, 0), 3);
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), 0);
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k], 1000, &one, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOSPC);
    /* a body of nothing holds no bytes: only the count bounds it */
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &none, 0), 4);
    while (jobq_of_uid(&q, 1000) < JOBQ_PER_UID) {
        int want = (int)q.n + 1;
        CU_ASSERT_EQUAL_FATAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &none, 0), want);
    }
    /* both bounds reached: the count's refusal (its text is psrun's "the queue is full") */
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k], 1000, &one, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOBUFS);
    /* another user has a share of its own */
    CU_ASSERT_EQUAL(jobq_room(&q, 1001), per_uid);
    /* the node: users at their full share until JOBQ_BYTES is held */
    for (uint32_t uid = 1001; q.bytes + per_uid <= JOBQ_BYTES; uid++)
        for (size_t b = 0; b < per_uid; b += PSMSG_MAX) {
            int want = (int)q.n + 1;
            CU_ASSERT_EQUAL_FATAL(jobq_add(&q, (struct client *)&clients[k++], uid, &big, 0), want);
        }
    CU_ASSERT_EQUAL(q.bytes, JOBQ_BYTES);
    CU_ASSERT_EQUAL(jobq_room(&q, 5000), 0);
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k], 5000, &one, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOSPC);
    /* an entry's end gives its bytes back, to the node and to its user: uid 1000's byte */
    struct jobq_entry *e = q.head->next->next;
    CU_ASSERT_EQUAL_FATAL(e->len, 1);
    jobq_del(&q, e);
    CU_ASSERT_EQUAL(q.bytes, JOBQ_BYTES - 1);
    CU_ASSERT_EQUAL(jobq_room(&q, 5000), 1);
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), 1);
    errno = 0;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k], 5000, &two, 0), -1);
    CU_ASSERT_EQUAL(errno, ENOSPC);
    int want = (int)q.n + 1;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 5000, &one, 0), want);
    CU_ASSERT_EQUAL(jobq_room(&q, 5000), 0);
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), 0);
    jobq_del(&q, q.head); /* uid 1000's PSMSG_MAX */
    CU_ASSERT_EQUAL(q.bytes, JOBQ_BYTES - PSMSG_MAX);
    CU_ASSERT_EQUAL(jobq_room(&q, 1000), PSMSG_MAX);
    CU_ASSERT_EQUAL(jobq_room(&q, 5000), PSMSG_MAX); /* the node's room, less than its own */
    want = (int)q.n + 1;
    CU_ASSERT_EQUAL(jobq_add(&q, (struct client *)&clients[k++], 1000, &big, 0), want);
    CU_ASSERT_EQUAL(q.bytes, JOBQ_BYTES);
    jobq_free(&q);
    CU_ASSERT_EQUAL(q.bytes, 0);
    CU_ASSERT_EQUAL(q.n, 0);
}

UNIT_SUITE(jobqueue, UNIT_TEST(test_jobq_order), UNIT_TEST(test_jobq_bounds),
           UNIT_TEST(test_jobq_bytes))
