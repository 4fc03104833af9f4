/*
 * test_psi_nodes.c - unit tests for libpsi's naming helpers: hostlist expansion and host
 * files (psi/hostlist.c), the node table with malformed replies and name lookup
 * (psi/nodetab.c), task ids (psi/tid.c) and signal names (psi/signames.c).
 */
#include "psi_hostlist.h"
#include "psi_nodes.h"
#include "psi_signames.h"
#include "psi_tid.h"
#include "unit.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* expand s and join the names with spaces */
static const char *expand(const char *s)
{
    static char out[1024];
    struct psi_names v = {0};
    char err[256] = "";
    if (psi_hostlist_expand(s, &v, err, sizeof err) < 0) {
        snprintf(out, sizeof out, "ERROR %s", err);
    } else {
        out[0] = '\0';
        for (size_t i = 0; i < v.n; i++) {
            strcat(out, i ? " " : "");
            strcat(out, v.v[i]);
        }
    }
    psi_names_free(&v);
    return out;
}

static void test_hostlist(void)
{
    CU_ASSERT_STRING_EQUAL(expand("n[0-3,7],m5"), "n0 n1 n2 n3 n7 m5");
    CU_ASSERT_STRING_EQUAL(expand("0-3,5"), "0 1 2 3 5");
    CU_ASSERT_STRING_EQUAL(expand("n[0-3]"), "n0 n1 n2 n3");
    CU_ASSERT_STRING_EQUAL(expand("node[08-11]-ib"), "node08-ib node09-ib node10-ib node11-ib");
    CU_ASSERT_STRING_EQUAL(expand("r[1-2]n[1-2]"), "r1n1 r1n2 r2n1 r2n2");
    CU_ASSERT_STRING_EQUAL(expand(" a  b,c ,, d\n"), "a b c d");
    CU_ASSERT_STRING_EQUAL(expand("n1,2"), "n1 2");
    CU_ASSERT_STRING_EQUAL(expand("node-1"), "node-1");
    CU_ASSERT_STRING_EQUAL(expand("n[5]"), "n5");
    CU_ASSERT_STRING_EQUAL(expand(""), "");
    CU_ASSERT(strncmp(expand("n[1-"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[3-1]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[a]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n1]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[1,]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[[1]]"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("5-3"), "ERROR", 5) == 0);
    CU_ASSERT(strncmp(expand("n[0-99999999]"), "ERROR", 5) == 0); /* too many */
}

/* A host file with this text, as a path: a memfd's /proc/self/fd/N (closed by the caller). */
static int host_file(const char *text, char *path, size_t n)
{
    int fd = memfd_create("hosts", MFD_CLOEXEC);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

static void test_hostfile(void)
{
    char p[64], err[256];
    int fd = host_file("# nodes\nn0\nn1 # the second\n\n  n[2-3]\nn0\n", p, sizeof p);
    struct psi_names v = {0};
    CU_ASSERT_EQUAL(psi_hostfile_read(p, &v, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(v.n, 5);
    CU_ASSERT_STRING_EQUAL(v.v[0], "n0");
    CU_ASSERT_STRING_EQUAL(v.v[3], "n3");
    CU_ASSERT_STRING_EQUAL(v.v[4], "n0");
    CU_ASSERT_PTR_NULL(v.v[5]);
    psi_names_free(&v);
    close(fd);
    CU_ASSERT_EQUAL(psi_hostfile_read("/nonexistent/x", &v, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "/nonexistent/x") != NULL);
    fd = host_file("n0\nn[1-\n", p, sizeof p);
    CU_ASSERT_EQUAL(psi_hostfile_read(p, &v, err, sizeof err), -1);
    CU_ASSERT(strstr(err, ":2: ") != NULL); /* the line of the error */
    psi_names_free(&v);
    close(fd);
}

/* a 6-node table: n0..n5, n4 down, n5 named "n5.cluster" */
static void make_table(struct psi_nodetab *t)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NODES_REPLY, 1);
    psmsg_put_u32(&b, PSF_SELF, 2);
    for (uint32_t i = 0; i < 6; i++) {
        char name[32], addr[32];
        snprintf(name, sizeof name, i == 5 ? "n%u.cluster" : "n%u", i);
        snprintf(addr, sizeof addr, "127.0.0.%u", i + 1);
        psmsg_record_begin(&b, PSF_NODE);
        psmsg_put_u32(&b, PSF_NODE_ID, i);
        psmsg_put_str(&b, PSF_NAME, name);
        psmsg_put_str(&b, PSF_ADDR, addr);
        psmsg_put_u32(&b, PSF_STATE, i == 4 ? PSNODE_DOWN : PSNODE_UP);
        psmsg_put_u32(&b, PSF_CPUS, 2);
        psmsg_record_end(&b);
    }
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    struct psmsg m;
    CU_ASSERT_FATAL(psmsg_parse(b.data, b.len, &m) == 0);
    CU_ASSERT_FATAL(psi_nodetab_parse(&m, t) == 0);
    psmsg_buf_free(&b);
}

static void test_nodetab(void)
{
    struct psi_nodetab t;
    make_table(&t);
    CU_ASSERT_EQUAL(t.n, 6);
    CU_ASSERT_EQUAL(t.self, 2);
    CU_ASSERT_EQUAL(psi_nodetab_lookup(&t, "3")->id, 3);
    CU_ASSERT_EQUAL(psi_nodetab_lookup(&t, "n3")->id, 3);
    CU_ASSERT_EQUAL(psi_nodetab_lookup(&t, "n3.cluster")->id, 3);
    CU_ASSERT_EQUAL(psi_nodetab_lookup(&t, "n5")->id, 5);
    CU_ASSERT_EQUAL(psi_nodetab_lookup(&t, "127.0.0.2")->id, 1);
    CU_ASSERT_PTR_NULL(psi_nodetab_lookup(&t, "n9"));
    CU_ASSERT_PTR_NULL(psi_nodetab_lookup(&t, "9"));
    CU_ASSERT_PTR_NULL(psi_nodetab_lookup(&t, ""));
    char b[64], err[256];
    CU_ASSERT_STRING_EQUAL(psi_nodetab_name(&t, 1, b, sizeof b), "n1");
    CU_ASSERT_STRING_EQUAL(psi_nodetab_name(&t, 77, b, sizeof b), "77");

    uint64_t tid;
    CU_ASSERT_EQUAL(psi_tid_parse("2:4711", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(2, 4711));
    CU_ASSERT_EQUAL(psi_tid_parse("n3:17", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(3, 17));
    CU_ASSERT_STRING_EQUAL(psi_tid_str(tid, b, sizeof b), "3:17");
    CU_ASSERT_EQUAL(psi_tid_parse("8589934609", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(2, 17));
    CU_ASSERT_EQUAL(psi_tid_parse("n9:17", &t, &tid, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "n9") != NULL);
    CU_ASSERT_EQUAL(psi_tid_parse("9:17", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse("2:", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse("2:0", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse(":5", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse("2:x", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse("abc", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(psi_tid_parse("2:99999999999", &t, &tid, err, sizeof err), -1);
    psi_nodetab_free(&t);

    /* the form alone, without the table (pskill and pswait check it first: exit 2): any
     * node name passes, a malformed id fails with psi_tid_parse's message */
    CU_ASSERT_EQUAL(psi_tid_check("2:4711", err, sizeof err), 0);
    CU_ASSERT_EQUAL(psi_tid_check("n9:17", err, sizeof err), 0);
    CU_ASSERT_EQUAL(psi_tid_check("8589934609", err, sizeof err), 0);
    const char *bad[] = {"2:", "2:0", ":5", "2:x", "abc", "2:99999999999", "", "2:-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        CU_ASSERT_EQUAL(psi_tid_check(bad[i], err, sizeof err), -1);
        CU_ASSERT(strstr(err, "not a task id") != NULL);
    }
}

/* A reply psid never sends still decodes: records without fields or with unknown ones, a
 * field of the wrong kind, a string too long for its buffer, and another message's body.
 * (A frame psmsg_parse rejects never reaches the decoder: test_psmsg.c.) */
static void test_nodetab_malformed(void)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_NODES_REPLY, 1);
    psmsg_record_begin(&b, PSF_NODE); /* a record of unknown fields only */
    psmsg_put_u32(&b, 0x0777, 7);
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_NODE); /* an empty record */
    psmsg_record_end(&b);
    psmsg_record_begin(&b, PSF_NODE);
    psmsg_put_u32(&b, PSF_NODE_ID, 3);
    psmsg_put_str(&b, PSF_NAME,
                  "a-name-longer-than-sixty-four-bytes-0123456789-0123456789-0123456789");
    psmsg_put_str(&b, PSF_STATE, "up"); /* a string where a u32 belongs */
    psmsg_put_u32(&b, PSF_AGE_MS, 12);
    psmsg_record_end(&b);
    psmsg_put_str(&b, PSF_TEXT, "not a node");
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    struct psmsg m;
    CU_ASSERT_FATAL(psmsg_parse(b.data, b.len, &m) == 0);
    struct psi_nodetab t;
    CU_ASSERT_EQUAL_FATAL(psi_nodetab_parse(&m, &t), 0);
    CU_ASSERT_EQUAL(t.self, 0); /* no PSF_SELF */
    CU_ASSERT_EQUAL_FATAL(t.n, 3);
    CU_ASSERT_EQUAL(t.v[0].id, 0);
    CU_ASSERT_STRING_EQUAL(t.v[0].name, "");
    CU_ASSERT_EQUAL(t.v[2].id, 3);
    CU_ASSERT_EQUAL(t.v[2].state, 0);
    CU_ASSERT(t.v[2].has_age);
    CU_ASSERT_EQUAL(t.v[2].age_ms, 12);
    CU_ASSERT_STRING_EQUAL(t.v[2].name, ""); /* too long for the table: left empty */
    CU_ASSERT_EQUAL(strlen(t.v[2].addr), 0);
    char nb[64];
    CU_ASSERT_STRING_EQUAL(psi_nodetab_name(&t, 0, nb, sizeof nb), "0"); /* no name */
    CU_ASSERT_STRING_EQUAL(psi_nodetab_name(NULL, 5, nb, sizeof nb), "5");
    CU_ASSERT_PTR_NULL(psi_nodetab_lookup(&t, "")); /* the empty names match nothing */
    psi_nodetab_free(&t);
    psmsg_buf_free(&b);

    /* another message type's body: no nodes, no error */
    psmsg_begin(&b, PSM_ERROR, 1);
    psmsg_put_u32(&b, PSF_ERRNO, 5);
    CU_ASSERT_FATAL(psmsg_end(&b) == 0);
    CU_ASSERT_FATAL(psmsg_parse(b.data, b.len, &m) == 0);
    CU_ASSERT_EQUAL(psi_nodetab_parse(&m, &t), 0);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_PTR_NULL(psi_nodetab_id(&t, 0));
    psi_nodetab_free(&t);
    psmsg_buf_free(&b);
}

static void test_signames(void)
{
    char b[32];
    CU_ASSERT_EQUAL(psi_sig_parse("TERM"), SIGTERM);
    CU_ASSERT_EQUAL(psi_sig_parse("SIGTERM"), SIGTERM);
    CU_ASSERT_EQUAL(psi_sig_parse("sigkill"), SIGKILL);
    CU_ASSERT_EQUAL(psi_sig_parse("9"), 9);
    CU_ASSERT_EQUAL(psi_sig_parse("0"), 0);
    CU_ASSERT_EQUAL(psi_sig_parse("USR1"), SIGUSR1);
    CU_ASSERT_EQUAL(psi_sig_parse("RTMIN"), SIGRTMIN);
    CU_ASSERT_EQUAL(psi_sig_parse("RTMIN+2"), SIGRTMIN + 2);
    CU_ASSERT_EQUAL(psi_sig_parse("RTMAX-1"), SIGRTMAX - 1);
    CU_ASSERT_EQUAL(psi_sig_parse("IOT"), SIGABRT);
    CU_ASSERT_EQUAL(psi_sig_parse("NOPE"), -1);
    CU_ASSERT_EQUAL(psi_sig_parse("SIG"), -1);
    CU_ASSERT_EQUAL(psi_sig_parse(""), -1);
    CU_ASSERT_EQUAL(psi_sig_parse("99"), -1);
    CU_ASSERT_EQUAL(psi_sig_parse("9x"), -1);
    CU_ASSERT_EQUAL(psi_sig_parse("RTMIN+99"), -1);
    CU_ASSERT_STRING_EQUAL(psi_sig_name(SIGSEGV, b, sizeof b), "SIGSEGV");
    CU_ASSERT_STRING_EQUAL(psi_sig_name(SIGRTMIN + 1, b, sizeof b), "SIGRTMIN+1");
    CU_ASSERT_STRING_EQUAL(psi_sig_name(0, b, sizeof b), "SIG0");
}

UNIT_SUITE(psi_nodes, UNIT_TEST(test_hostlist), UNIT_TEST(test_hostfile), UNIT_TEST(test_nodetab),
           UNIT_TEST(test_nodetab_malformed), UNIT_TEST(test_signames))
