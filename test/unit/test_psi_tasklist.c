/*
 * test_psi_tasklist.c - libpsi's task-list decoder (psi/tasklist.c): a reply as psid sends
 * it, and replies it never sends: records without fields or with unknown ones, a rank that
 * means "none" or "all", a job id 0, a missing or over-long command, fields of the wrong
 * kind, another message's body.
 */
#include "psi_tasklist.h"
#include "unit.h"

#include <string.h>

static void test_tasklist(void)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_TASKS_REPLY, 1);
    psmsg_record_begin(&b, PSF_TASK); /* a rank of a job */
    psmsg_put_u64(&b, PSF_TID, PSTID(2, 4711));
    psmsg_put_u64(&b, PSF_JOB, PSTID(0, 17));
    psmsg_put_u32(&b, PSF_RANK, 3);
    psmsg_put_u32(&b, PSF_UID, 1000);
    psmsg_put_u32(&b, PSF_STATE, PSTASK_RUNNING);
    psmsg_put_str(&b, PSF_CMD, "sleep");
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_TASK); /* no job (0), rank "none", no command */
    psmsg_put_u64(&b, PSF_TID, PSTID(1, 9));
    psmsg_put_u64(&b, PSF_JOB, 0);
    psmsg_put_u32(&b, PSF_RANK, PSI_NO_RANK);
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_TASK); /* rank "all", a command too long, wrong kinds */
    psmsg_put_u32(&b, PSF_RANK, PSI_ALL_RANKS);
    psmsg_put_str(&b, PSF_TID, "not a number");
    psmsg_put_u64(&b, PSF_UID, 5);
    char longcmd[300];
    memset(longcmd, 'x', sizeof longcmd - 1);
    longcmd[sizeof longcmd - 1] = '\0';
    psmsg_put_str(&b, PSF_CMD, longcmd);
    psmsg_put_u32(&b, 0x0777, 1);
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_TASK); /* empty */
    psmsg_record_end(&b);
    psmsg_put_str(&b, PSF_TEXT, "not a task");
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    struct psmsg m;
    CU_ASSERT_FATAL(psmsg_parse(b.data, b.len, &m) == 0);
    struct psi_tasklist l;
    CU_ASSERT_EQUAL_FATAL(psi_tasklist_parse(&m, &l), 0);
    CU_ASSERT_EQUAL_FATAL(l.n, 4);
    CU_ASSERT_EQUAL(l.v[0].tid, PSTID(2, 4711));
    CU_ASSERT(l.v[0].has_job);
    CU_ASSERT_EQUAL(l.v[0].job, PSTID(0, 17));
    CU_ASSERT(l.v[0].has_rank);
    CU_ASSERT_EQUAL(l.v[0].rank, 3);
    CU_ASSERT_EQUAL(l.v[0].uid, 1000);
    CU_ASSERT_EQUAL(l.v[0].state, PSTASK_RUNNING);
    CU_ASSERT_STRING_EQUAL(l.v[0].cmd, "sleep");
    CU_ASSERT(!l.v[1].has_job);
    CU_ASSERT(!l.v[1].has_rank);
    CU_ASSERT_STRING_EQUAL(l.v[1].cmd, "?");
    CU_ASSERT(!l.v[2].has_rank);
    CU_ASSERT_EQUAL(l.v[2].tid, 0);
    CU_ASSERT_EQUAL(l.v[2].uid, 0);
    CU_ASSERT_STRING_EQUAL(l.v[2].cmd, "?");
    CU_ASSERT_EQUAL(l.v[3].tid, 0);
    CU_ASSERT_STRING_EQUAL(l.v[3].cmd, "?");
    psi_tasklist_free(&l);
    CU_ASSERT_PTR_NULL(l.v);
    psmsg_buf_free(&b);

    psmsg_begin(&b, PSM_NODES_REPLY, 1); /* another reply: no tasks, no error */
    psmsg_record_begin(&b, PSF_NODE);
    psmsg_put_u32(&b, PSF_NODE_ID, 1);
    psmsg_record_end(&b);
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    CU_ASSERT_FATAL(psmsg_parse(b.data, b.len, &m) == 0);
    CU_ASSERT_EQUAL(psi_tasklist_parse(&m, &l), 0);
    CU_ASSERT_EQUAL(l.n, 0);
    psi_tasklist_free(&l);
    psmsg_buf_free(&b);
}

UNIT_SUITE(psi_tasklist, UNIT_TEST(test_tasklist))
