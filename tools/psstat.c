/*
 * psstat.c - the cluster as one daemon sees it: `psstat nodes` (id, name, address, state,
 * load, tasks, CPUs) and `psstat tasks` (every task of every node that is up: task id, job,
 * rank, user, state, command), as a table or as JSON.
 *
 * usage: psstat [--json] nodes|tasks
 */
#include "psi.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: psstat [--json] nodes|tasks\n"
    "\n"
    "  nodes         every configured node: id, name, address, "
    "state, load, tasks, CPUs\n"
    "  tasks         every task on the nodes that are up: task id (NODE:PID), job, rank,\n"
    "                user, state, command\n"
    "  -j, --json    JSON instead of a table\n"
    "  -h, --help    this text\n"
    "The daemon asked is the one at $PSID_SOCKET (default " PSI_DEFAULT_SOCKET ").\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

static const char *state_name(uint32_t s)
{
    return s == PSNODE_UP ? "up" : "down";
}

static int nodes(struct psi *c, int json)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_NODES, 0);
    int r = psi_call(c, &req, &rep);
    psmsg_buf_free(&req);
    if (r < 0) {
        fprintf(stderr, "psstat: nodes: %s\n", strerror(errno));
        return 1;
    }
    uint32_t self = 0;
    psmsg_get_u32(&rep.body, PSF_SELF, &self);
    if (json)
        printf("{\"self\":%u,\"nodes\":[", self);
    else
        printf("%-5s %-16s %-16s %-5s %6s %6s %5s\n", "ID", "NAME", "ADDRESS", "STATE", "LOAD",
               "TASKS", "CPUS");
    size_t pos = 0;
    struct psmsg_field f;
    int first = 1;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_NODE) continue;
        struct psmsg_view v = psmsg_record(&f);
        uint32_t id = 0, state = 0, load = 0, tasks = 0, cpus = 0, age = 0;
        char name[64] = "?", addr[64] = "?";
        psmsg_get_u32(&v, PSF_NODE_ID, &id);
        psmsg_get_str(&v, PSF_NAME, name, sizeof name);
        psmsg_get_str(&v, PSF_ADDR, addr, sizeof addr);
        psmsg_get_u32(&v, PSF_STATE, &state);
        psmsg_get_u32(&v, PSF_LOAD, &load);
        psmsg_get_u32(&v, PSF_TASKS, &tasks);
        psmsg_get_u32(&v, PSF_CPUS, &cpus);
        int has_age = psmsg_get_u32(&v, PSF_AGE_MS, &age) == 0;
        if (json) {
            printf("%s{\"id\":%u,\"name\":\"%s\",\"address\":\"%s\",\"state\":\"%s\","
                   "\"load\":%.2f,\"tasks\":%u,\"cpus\":%u",
                   first ? "" : ",", id, name, addr, state_name(state), load / 1000.0, tasks, cpus);
            if (has_age) printf(",\"heard_ms_ago\":%u", age);
            printf("}");
        } else {
            printf("%-5u %-16s %-16s %-5s %6.2f %6u %5u\n", id, name, addr, state_name(state),
                   load / 1000.0, tasks, cpus);
        }
        first = 0;
    }
    if (json) printf("]}\n");
    return 0;
}

struct task {
    uint64_t tid, job;
    uint32_t rank, uid, state;
    int has_rank, has_job;
    char cmd[256];
};

static int task_cmp(const void *a, const void *b)
{
    const struct task *x = a, *y = b;
    if (PSTID_NODE(x->tid) != PSTID_NODE(y->tid))
        return PSTID_NODE(x->tid) < PSTID_NODE(y->tid) ? -1 : 1;
    return PSTID_PID(x->tid) < PSTID_PID(y->tid) ? -1 : PSTID_PID(x->tid) > PSTID_PID(y->tid);
}

static const char *task_state(uint32_t s)
{
    return s == PSTASK_RUNNING ? "running" : s == PSTASK_EXITED ? "exited" : "?";
}

static void json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static int tasks(struct psi *c, int json)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_TASKS, 0);
    int r = psi_call(c, &req, &rep);
    psmsg_buf_free(&req);
    if (r < 0) {
        fprintf(stderr, "psstat: tasks: %s\n", strerror(errno));
        return 1;
    }
    size_t n = 0, cap = 0, pos = 0;
    struct task *v = NULL;
    struct psmsg_field f;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_TASK) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            struct task *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                fprintf(stderr, "psstat: tasks: out of memory\n");
                return 1;
            }
            v = nv;
        }
        struct task *t = &v[n++];
        memset(t, 0, sizeof *t);
        struct psmsg_view rv = psmsg_record(&f);
        psmsg_get_u64(&rv, PSF_TID, &t->tid);
        t->has_job = psmsg_get_u64(&rv, PSF_JOB, &t->job) == 0 && t->job;
        t->has_rank = psmsg_get_u32(&rv, PSF_RANK, &t->rank) == 0 && t->rank != PSI_NO_RANK &&
                      t->rank != PSI_ALL_RANKS;
        psmsg_get_u32(&rv, PSF_UID, &t->uid);
        psmsg_get_u32(&rv, PSF_STATE, &t->state);
        if (psmsg_get_str(&rv, PSF_CMD, t->cmd, sizeof t->cmd) < 0) strcpy(t->cmd, "?");
    }
    if (n) qsort(v, n, sizeof *v, task_cmp);
    if (json)
        printf("{\"tasks\":[");
    else
        printf("%-16s %-16s %5s %-10s %-8s %s\n", "TID", "JOB", "RANK", "USER", "STATE", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        struct task *t = &v[i];
        char tid[32], job[32] = "-", rank[16] = "-", user[32];
        snprintf(tid, sizeof tid, "%" PRIu32 ":%" PRId32, PSTID_NODE(t->tid), PSTID_PID(t->tid));
        if (t->has_job)
            snprintf(job, sizeof job, "%" PRIu32 ":%" PRId32, PSTID_NODE(t->job),
                     PSTID_PID(t->job));
        if (t->has_rank) snprintf(rank, sizeof rank, "%" PRIu32, t->rank);
        struct passwd *pw = getpwuid((uid_t)t->uid);
        if (pw)
            snprintf(user, sizeof user, "%s", pw->pw_name);
        else
            snprintf(user, sizeof user, "%" PRIu32, t->uid);
        if (json) {
            printf("%s{\"tid\":\"%s\",\"node\":%" PRIu32 ",\"pid\":%" PRId32 ",\"job\":",
                   i ? "," : "", tid, PSTID_NODE(t->tid), PSTID_PID(t->tid));
            if (t->has_job)
                printf("\"%s\"", job);
            else
                printf("null");
            if (t->has_rank)
                printf(",\"rank\":%" PRIu32, t->rank);
            else
                printf(",\"rank\":null");
            printf(",\"uid\":%" PRIu32 ",\"user\":", t->uid);
            json_str(user);
            printf(",\"state\":\"%s\",\"command\":", task_state(t->state));
            json_str(t->cmd);
            printf("}");
        } else {
            printf("%-16s %-16s %5s %-10s %-8s %s\n", tid, job, rank, user, task_state(t->state),
                   t->cmd);
        }
    }
    if (json) printf("]}\n");
    free(v);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, o;
    while ((o = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        if (o == 'j')
            json = 1;
        else if (o == 'h')
            return usage(stdout, 0);
        else
            return usage(stderr, 2);
    }
    if (optind != argc - 1 ||
        (strcmp(argv[optind], "nodes") != 0 && strcmp(argv[optind], "tasks") != 0))
        return usage(stderr, 2);
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "psstat: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        return 1;
    }
    int rc = strcmp(argv[optind], "nodes") == 0 ? nodes(&c, json) : tasks(&c, json);
    psi_close(&c);
    return rc;
}
