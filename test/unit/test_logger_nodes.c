/*
 * test_logger_nodes.c - unit tests for the pure parts of psrun's setup: the partition's
 * source and resolution (logger/partition.c) and the exported environment
 * (logger/envsel.c). Hostlists, the node table and task ids are libpsi's: test_psi_nodes.c.
 */
#include "../../logger/envsel.h"
#include "../../logger/partition.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* a 6-node table: n0..n5, n4 down, n5 named "n5.cluster" (built directly: decoding it is
 * test_psi_nodes.c's business) */
static void make_table(struct psi_nodetab *t)
{
    *t = (struct psi_nodetab){.n = 6, .self = 2};
    t->v = calloc(t->n, sizeof *t->v);
    CU_ASSERT_FATAL(t->v != NULL);
    for (uint32_t i = 0; i < t->n; i++) {
        struct psi_node *nd = &t->v[i];
        nd->id = i;
        nd->state = i == 4 ? PSNODE_DOWN : PSNODE_UP;
        nd->cpus = 2;
        snprintf(nd->name, sizeof nd->name, i == 5 ? "n%u.cluster" : "n%u", i);
        snprintf(nd->addr, sizeof nd->addr, "127.0.0.%u", i + 1);
    }
}

/* the partition for this environment and -w, as "ids" or "ERROR message" */
static const char *partition(const char *w)
{
    static char out[512];
    struct psi_nodetab t;
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
    psi_nodetab_free(&t);
    return out;
}

static void test_partition(void)
{
    CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
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

UNIT_SUITE(logger_nodes, UNIT_TEST(test_partition), UNIT_TEST(test_envsel))
