/*
 * test_logger_nodes.c - unit tests for the pure parts of psrun's setup: hostlist expansion
 * (logger/hostlist.c), the partition's source and resolution (logger/partition.c), node
 * lookup and task ids (logger/nodetab.c), and the exported environment (logger/envsel.c).
 */
#include "../../logger/envsel.h"
#include "../../logger/hostlist.h"
#include "../../logger/nodetab.h"
#include "../../logger/partition.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* expand s and join the names with spaces */
static const char *expand(const char *s)
{
    static char out[1024];
    struct lg_strv v = {0};
    char err[256] = "";
    if (lg_hostlist_expand(s, &v, err, sizeof err) < 0) {
        snprintf(out, sizeof out, "ERROR %s", err);
    } else {
        out[0] = '\0';
        for (size_t i = 0; i < v.n; i++) {
            strcat(out, i ? " " : "");
            strcat(out, v.v[i]);
        }
    }
    lg_strv_free(&v);
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

static char tmpdir[] = "/tmp/lgtest.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_hostfile(void)
{
    CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
    const char *p = write_file("hosts", "# nodes\nn0\nn1 # the second\n\n  n[2-3]\nn0\n");
    struct lg_strv v = {0};
    char err[256];
    CU_ASSERT_EQUAL(lg_hostfile_read(p, &v, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(v.n, 5);
    CU_ASSERT_STRING_EQUAL(v.v[0], "n0");
    CU_ASSERT_STRING_EQUAL(v.v[3], "n3");
    CU_ASSERT_STRING_EQUAL(v.v[4], "n0");
    lg_strv_free(&v);
    CU_ASSERT_EQUAL(lg_hostfile_read("/nonexistent/x", &v, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "/nonexistent/x") != NULL);
    p = write_file("bad", "n0\nn[1-\n");
    CU_ASSERT_EQUAL(lg_hostfile_read(p, &v, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "bad:2:") != NULL);
    lg_strv_free(&v);
}

/* a fake environment for the partition */
static const char *fake_env[16];

static char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; fake_env[i]; i++)
        if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
            return (char *)fake_env[i] + n + 1;
    return NULL;
}

/* a 6-node table: n0..n5, n4 down, n5 named "n5.cluster" */
static void make_table(struct lg_nodetab *t)
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
    CU_ASSERT_FATAL(lg_nodetab_parse(&m, t) == 0);
    psmsg_buf_free(&b);
}

static void test_nodetab(void)
{
    struct lg_nodetab t;
    make_table(&t);
    CU_ASSERT_EQUAL(t.n, 6);
    CU_ASSERT_EQUAL(t.self, 2);
    CU_ASSERT_EQUAL(lg_nodetab_lookup(&t, "3")->id, 3);
    CU_ASSERT_EQUAL(lg_nodetab_lookup(&t, "n3")->id, 3);
    CU_ASSERT_EQUAL(lg_nodetab_lookup(&t, "n3.cluster")->id, 3);
    CU_ASSERT_EQUAL(lg_nodetab_lookup(&t, "n5")->id, 5);
    CU_ASSERT_EQUAL(lg_nodetab_lookup(&t, "127.0.0.2")->id, 1);
    CU_ASSERT_PTR_NULL(lg_nodetab_lookup(&t, "n9"));
    CU_ASSERT_PTR_NULL(lg_nodetab_lookup(&t, "9"));
    CU_ASSERT_PTR_NULL(lg_nodetab_lookup(&t, ""));
    char b[64], err[256];
    CU_ASSERT_STRING_EQUAL(lg_nodetab_name(&t, 1, b, sizeof b), "n1");
    CU_ASSERT_STRING_EQUAL(lg_nodetab_name(&t, 77, b, sizeof b), "77");

    uint64_t tid;
    CU_ASSERT_EQUAL(lg_tid_parse("2:4711", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(2, 4711));
    CU_ASSERT_EQUAL(lg_tid_parse("n3:17", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(3, 17));
    CU_ASSERT_STRING_EQUAL(lg_tid_str(tid, b, sizeof b), "3:17");
    CU_ASSERT_EQUAL(lg_tid_parse("8589934609", &t, &tid, err, sizeof err), 0);
    CU_ASSERT_EQUAL(tid, PSTID(2, 17));
    CU_ASSERT_EQUAL(lg_tid_parse("n9:17", &t, &tid, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "n9") != NULL);
    CU_ASSERT_EQUAL(lg_tid_parse("9:17", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse("2:", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse("2:0", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse(":5", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse("2:x", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse("abc", &t, &tid, err, sizeof err), -1);
    CU_ASSERT_EQUAL(lg_tid_parse("2:99999999999", &t, &tid, err, sizeof err), -1);
    lg_nodetab_free(&t);

    /* the form alone, without the table (pskill and pswait check it first: exit 2): any
     * node name passes, a malformed id fails with lg_tid_parse's message */
    CU_ASSERT_EQUAL(lg_tid_check("2:4711", err, sizeof err), 0);
    CU_ASSERT_EQUAL(lg_tid_check("n9:17", err, sizeof err), 0);
    CU_ASSERT_EQUAL(lg_tid_check("8589934609", err, sizeof err), 0);
    const char *bad[] = {"2:", "2:0", ":5", "2:x", "abc", "2:99999999999", "", "2:-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        CU_ASSERT_EQUAL(lg_tid_check(bad[i], err, sizeof err), -1);
        CU_ASSERT(strstr(err, "not a task id") != NULL);
    }
}

/* the partition for this environment and -w, as "ids" or "ERROR message" */
static const char *partition(const char *w)
{
    static char out[512];
    struct lg_nodetab t;
    make_table(&t);
    struct lg_partition p;
    struct lg_strv skipped = {0};
    uint32_t *ids = NULL;
    size_t n = 0;
    char err[256];
    if (lg_partition_get(w, fake_getenv, &p, err, sizeof err) < 0 ||
        lg_partition_resolve(&p, &t, &ids, &n, &skipped, err, sizeof err) < 0) {
        snprintf(out, sizeof out, "ERROR %s", err);
    } else {
        snprintf(out, sizeof out, "%s:", p.source ? p.source : "all");
        for (size_t i = 0; i < n; i++) snprintf(out + strlen(out), 16, " %u", ids[i]);
        for (size_t i = 0; i < skipped.n; i++)
            snprintf(out + strlen(out), 64, " -%s", skipped.v[i]);
    }
    free(ids);
    lg_strv_free(&skipped);
    lg_partition_free(&p);
    lg_nodetab_free(&t);
    return out;
}

static void test_partition(void)
{
    memset(fake_env, 0, sizeof fake_env);
    CU_ASSERT_STRING_EQUAL(partition(NULL), "all:");
    CU_ASSERT_STRING_EQUAL(partition("0-2,n5"), "-w: 0 1 2 5");
    CU_ASSERT_STRING_EQUAL(partition("n[3-1]"), "ERROR -w: 'n[3-1]': bad range in brackets");
    CU_ASSERT_STRING_EQUAL(partition("n1,1,n1.cluster"), "-w: 1");
    CU_ASSERT_STRING_EQUAL(partition("n2,n0"), "-w: 2 0");
    CU_ASSERT_STRING_EQUAL(partition("n[3-4]"), "ERROR -w: node 'n4' is down");
    CU_ASSERT_STRING_EQUAL(partition("n7"), "ERROR -w: node 'n7' is not in the cluster");
    CU_ASSERT_STRING_EQUAL(partition("9"), "ERROR -w: node '9' is not in the cluster");
    CU_ASSERT_STRING_EQUAL(partition(""), "ERROR -w: no nodes given");

    fake_env[0] = "SLURM_JOB_NODELIST=n[2-4],n0";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "SLURM_JOB_NODELIST: 2 3 0 -n4");
    CU_ASSERT_STRING_EQUAL(partition("1"), "-w: 1"); /* the command line wins */
    fake_env[1] = "PSI_NODES=3,1";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "PSI_NODES: 3 1");
    fake_env[1] = "PSI_NODES=";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "SLURM_JOB_NODELIST: 2 3 0 -n4");
    fake_env[1] = "PSI_HOSTS=n1 n2";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "PSI_HOSTS: 1 2");
    fake_env[1] = "PSI_HOSTS=n1 bogus";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "ERROR PSI_HOSTS: node 'bogus' is not in the cluster");
    fake_env[1] = "PSI_NODES=4";
    CU_ASSERT_STRING_EQUAL(partition(NULL), "ERROR PSI_NODES: no node of the partition is up");

    fake_env[0] = NULL;
    fake_env[1] = NULL;
    static char pbs[300];
    snprintf(pbs, sizeof pbs, "PBS_NODEFILE=%s", write_file("pbs", "n1\nn1\nn3\nn3\n"));
    fake_env[0] = pbs;
    CU_ASSERT_STRING_EQUAL(partition(NULL), "PBS_NODEFILE: 1 3");
    static char hf[300];
    snprintf(hf, sizeof hf, "PSI_HOSTFILE=%s", write_file("hf", "n5\n"));
    fake_env[1] = hf;
    CU_ASSERT_STRING_EQUAL(partition(NULL), "PSI_HOSTFILE: 5");
    fake_env[1] = "PSI_HOSTFILE=/nonexistent/hosts";
    CU_ASSERT(strstr(partition(NULL), "ERROR PSI_HOSTFILE: /nonexistent/hosts:") != NULL);
    fake_env[0] = fake_env[1] = NULL;
    unlink(write_file("hosts", ""));
    unlink(write_file("bad", ""));
    unlink(write_file("pbs", ""));
    unlink(write_file("hf", ""));
    rmdir(tmpdir);
}

static int has(const struct lg_strv *v, const char *e)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->v[i], e) == 0) return 1;
    return 0;
}

static void test_envsel(void)
{
    char *envp[] = {"PATH=/bin",
                    "HOME=/root",
                    "SECRET=1",
                    "PSI_FOO=a",
                    "PSP_X=b",
                    "OMP_NUM_THREADS=4",
                    "PSI_RANK=3",
                    "PSID_SOCKET=/x",
                    "MYVAR=hello",
                    "OTHER=o",
                    "PSI_EXPORTS=OTHER,NOPE",
                    "PSIX=no",
                    "NOEQUALS",
                    NULL};
    struct lg_strv v = {0};
    CU_ASSERT_EQUAL(lg_env_select(envp, NULL, 0, false, &v), 0);
    CU_ASSERT(has(&v, "PATH=/bin"));
    CU_ASSERT(has(&v, "HOME=/root"));
    CU_ASSERT(has(&v, "PSI_FOO=a"));
    CU_ASSERT(has(&v, "PSP_X=b"));
    CU_ASSERT(has(&v, "OMP_NUM_THREADS=4"));
    CU_ASSERT(has(&v, "OTHER=o")); /* PSI_EXPORTS */
    CU_ASSERT(has(&v, "PSI_EXPORTS=OTHER,NOPE"));
    CU_ASSERT(!has(&v, "SECRET=1"));
    CU_ASSERT(!has(&v, "PSI_RANK=3"));
    CU_ASSERT(!has(&v, "PSID_SOCKET=/x"));
    CU_ASSERT(!has(&v, "PSIX=no"));
    CU_ASSERT(!has(&v, "MYVAR=hello"));
    lg_strv_free(&v);

    const char *xs[] = {"MYVAR", "PATH=/usr/bin", "NEW=1", "SECRET,UNSET"};
    CU_ASSERT_EQUAL(lg_env_select(envp, xs, 4, false, &v), 0);
    CU_ASSERT(has(&v, "MYVAR=hello"));
    CU_ASSERT(has(&v, "PATH=/usr/bin"));
    CU_ASSERT(!has(&v, "PATH=/bin"));
    CU_ASSERT(has(&v, "NEW=1"));
    CU_ASSERT(has(&v, "SECRET=1"));
    size_t paths = 0;
    for (size_t i = 0; i < v.n; i++) paths += strncmp(v.v[i], "PATH=", 5) == 0;
    CU_ASSERT_EQUAL(paths, 1);
    lg_strv_free(&v);

    CU_ASSERT_EQUAL(lg_env_select(envp, NULL, 0, true, &v), 0);
    CU_ASSERT(has(&v, "SECRET=1"));
    CU_ASSERT(has(&v, "MYVAR=hello"));
    CU_ASSERT(!has(&v, "PSI_RANK=3"));
    CU_ASSERT(!has(&v, "NOEQUALS"));
    lg_strv_free(&v);
}

UNIT_SUITE(logger_nodes, UNIT_TEST(test_hostlist), UNIT_TEST(test_hostfile),
           UNIT_TEST(test_nodetab), UNIT_TEST(test_partition), UNIT_TEST(test_envsel))
