/*
 * psstat.c - the cluster as one daemon sees it: `psstat nodes` (id, name, address, state,
 * load, CPUs its tasks hold, CPUs), `psstat tasks` (every task of every node that is up: task id,
 * job, rank, user, state, command) and `psstat rdp` (the daemon's RDP connections to the other
 * nodes: packets, messages, retransmissions, drops by reason, RTT, windows), as a table or as
 * JSON; `psstat sockets`: the node's connections under the preload library (process, user,
 * local and remote address, path, bytes each way). `psstat jobs`: the running jobs (from the
 * task list: job, name, user, tasks, nodes); `psstat jobs --done`: the last jobs whose psrun
 * ran on the asked node, with their usage (psid.done_jobs of them), sacct's field names.
 *
 * usage: psstat [--json] nodes|tasks|jobs [--done]|rdp|sockets
 */
#include "../logger/stats.h"
#include "psi.h"
#include "psversion.h"
#include "psi_nodes.h"
#include "psi_tasklist.h"
#include "psi_tid.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: psstat [--json] nodes|tasks|jobs [--done]|rdp|sockets\n"
    "\n"
    "  nodes         every configured node: id, name, address, "
    "state, load, CPUs used\n"
    "                (by its tasks: each counts its -c), CPUs\n"
    "  tasks         every task on the nodes that are up: task id (NODE:PID), job, rank,\n"
    "                user, state, command\n"
    "  jobs          the running jobs: job id, name, user, tasks, nodes; with gang\n"
    "                scheduling also each job's row, state (running, frozen) and share of\n"
    "                the quanta, and the node's queued spawns (state queued, time waited)\n"
    "  jobs --done   the last jobs whose psrun ran on this node (psid.done_jobs of them):\n"
    "                job id, name, user, ranks, start, end, elapsed, user and system CPU,\n"
    "                max RSS, bytes read and written, the first failed rank's status\n"
    "  rdp           this daemon's RDP connections to the other nodes: state, packets and\n"
    "                messages each way, retransmissions, timeouts, connections lost, smoothed\n"
    "                RTT and retransmission timeout (us), congestion window, packets dropped\n"
    "                (by reason in --json), and the endpoint's totals\n"
    "  sockets       this node's connections under the preload library (pspreload(1)):\n"
    "                process, user, local and remote address, path, bytes sent and received\n"
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
    return s == PSNODE_UP ? "up" : s == PSNODE_UNREACHABLE ? "unreachable" : "down";
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

static int nodes(struct psi *c, int json)
{
    struct psi_nodetab t;
    if (psi_nodes(c, &t) < 0) {
        fprintf(stderr, "psstat: nodes: %s\n", strerror(errno));
        return 1;
    }
    if (json)
        printf("{\"self\":%u,\"nodes\":[", t.self);
    else
        printf("%-5s %-16s %-16s %-11s %6s %6s %5s\n", "ID", "NAME", "ADDRESS", "STATE", "LOAD",
               "USED", "CPUS");
    for (size_t i = 0; i < t.n; i++) {
        const struct psi_node *nd = &t.v[i];
        const char *name = nd->name[0] ? nd->name : "?", *addr = nd->addr[0] ? nd->addr : "?";
        if (json) { /* names and addresses come from psid's message: escaped as any string */
            printf("%s{\"id\":%u,\"name\":", i ? "," : "", nd->id);
            json_str(name);
            printf(",\"address\":");
            json_str(addr);
            printf(",\"state\":\"%s\",\"load\":%.2f,\"cpus_used\":%u,\"cpus\":%u",
                   state_name(nd->state), nd->load / 1000.0, nd->used, nd->cpus);
            if (nd->has_age) printf(",\"heard_ms_ago\":%u", nd->age_ms);
            printf("}");
        } else {
            printf("%-5u %-16s %-16s %-11s %6.2f %6u %5u\n", nd->id, name, addr,
                   state_name(nd->state), nd->load / 1000.0, nd->used, nd->cpus);
        }
    }
    if (json) printf("]}\n");
    psi_nodetab_free(&t);
    return 0;
}

static int task_cmp(const void *a, const void *b)
{
    const struct psi_task *x = a, *y = b;
    if (PSTID_NODE(x->tid) != PSTID_NODE(y->tid))
        return PSTID_NODE(x->tid) < PSTID_NODE(y->tid) ? -1 : 1;
    return PSTID_PID(x->tid) < PSTID_PID(y->tid) ? -1 : PSTID_PID(x->tid) > PSTID_PID(y->tid);
}

static const char *task_state(uint32_t s)
{
    return s == PSTASK_RUNNING ? "running" : s == PSTASK_EXITED ? "exited" : "?";
}

static int tasks(struct psi *c, int json)
{
    struct psi_tasklist l;
    if (psi_tasks(c, &l) < 0) {
        fprintf(stderr, "psstat: tasks: %s\n", strerror(errno));
        return 1;
    }
    size_t n = l.n;
    struct psi_task *v = l.v;
    if (n) qsort(v, n, sizeof *v, task_cmp);
    if (json)
        printf("{\"tasks\":[");
    else
        printf("%-16s %-16s %5s %-10s %-8s %-12s %s\n", "TID", "JOB", "RANK", "USER", "STATE",
               "NAME", "COMMAND");
    for (size_t i = 0; i < n; i++) {
        const struct psi_task *t = &v[i];
        char tid[32], job[32] = "-", rank[16] = "-", user[32];
        psi_tid_str(t->tid, tid, sizeof tid);
        if (t->has_job) psi_tid_str(t->job, job, sizeof job);
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
            printf(",\"state\":\"%s\",\"name\":", task_state(t->state));
            if (t->name[0])
                json_str(t->name);
            else
                printf("null");
            printf(",\"command\":");
            json_str(t->cmd);
            printf("}");
        } else {
            printf("%-16s %-16s %5s %-10s %-8s %-12s %s\n", tid, job, rank, user,
                   task_state(t->state), t->name[0] ? t->name : "-", t->cmd);
        }
    }
    if (json) printf("]");
    psi_tasklist_free(&l);
    /* an unreachable node does not answer: its tasks run on, but are not in the list */
    struct psi_nodetab t;
    if (json) printf(",\"unreachable\":[");
    if (psi_nodes(c, &t) == 0) {
        unsigned k = 0;
        for (size_t i = 0; i < t.n; i++) {
            if (t.v[i].state != PSNODE_UNREACHABLE) continue;
            if (json)
                printf("%s%u", k++ ? "," : "", t.v[i].id);
            else
                fprintf(stderr, "psstat: node %s (%u) is unreachable: its tasks are not listed\n",
                        t.v[i].name[0] ? t.v[i].name : "?", t.v[i].id);
        }
        psi_nodetab_free(&t);
    }
    if (json) printf("]}\n");
    return 0;
}

/* `psstat rdp`: one row (or JSON object) per peer. The counters a peer record carries, in
 * column order; u64 unless u32. */
static const struct rdp_col {
    uint16_t tag;
    const char *head, *json;
    int u32;
} rdp_cols[] = {
    {PSF_PKTS_SENT, "PKTS_OUT", "packets_sent", 0},
    {PSF_PKTS_RECV, "PKTS_IN", "packets_received", 0},
    {PSF_MSGS_SENT, "MSGS_OUT", "messages_sent", 0},
    {PSF_MSGS_RECV, "MSGS_IN", "messages_received", 0},
    {PSF_RETRANSMITS, "RETRANS", "retransmits", 0},
    {PSF_TIMEOUTS, "TIMEOUTS", "timeouts", 0},
    {PSF_LOSSES, "LOST", "losses", 0},
    {PSF_SRTT_US, "SRTT_US", "srtt_us", 1},
    {PSF_RTO_US, "RTO_US", "rto_us", 1},
    {PSF_CWND, "CWND", "cwnd", 1},
    {PSF_CONNECTS, NULL, "connects", 0},
    {PSF_OUT_OF_ORDER, NULL, "out_of_order", 0},
    {PSF_RTTVAR_US, NULL, "rttvar_us", 1},
    {PSF_PEER_WND, NULL, "peer_window", 1},
    {PSF_RCV_WND, NULL, "receive_window", 1},
    {PSF_INFLIGHT, NULL, "inflight", 1},
    {PSF_QUEUED, NULL, "queued_bytes", 0},
    {PSF_PAYLOAD, NULL, "payload", 1},
};

static uint64_t get_num(const struct psmsg_view *v, uint16_t tag, int u32)
{
    uint64_t x = 0;
    uint32_t y = 0;
    if (u32) return psmsg_get_u32(v, tag, &y) == 0 ? y : 0;
    return psmsg_get_u64(v, tag, &x) == 0 ? x : 0;
}

/* The PSF_DROP records of v: their sum, and as JSON ("drops":{...}) if json. */
static uint64_t drops(const struct psmsg_view *v, int json)
{
    size_t pos = 0;
    struct psmsg_field f;
    uint64_t sum = 0;
    int first = 1;
    if (json) printf(",\"drops\":{");
    while (psmsg_next(v, &pos, &f)) {
        if (f.tag != PSF_DROP) continue;
        struct psmsg_view r = psmsg_record(&f);
        char why[32] = "?";
        uint64_t n = 0;
        psmsg_get_str(&r, PSF_TEXT, why, sizeof why);
        psmsg_get_u64(&r, PSF_N, &n);
        sum += n;
        if (json) {
            printf("%s", first ? "" : ",");
            json_str(why);
            printf(":%" PRIu64, n);
        }
        first = 0;
    }
    if (json) printf("}");
    return sum;
}

static const char *rdp_state(uint32_t s)
{
    return s == PSRDP_ESTABLISHED ? "established" : s == PSRDP_CONNECTING ? "connecting" : "closed";
}

static int rdp(struct psi *c, int json)
{
    struct psmsg rep;
    struct psi_nodetab names; /* best effort: "?" where unknown */
    if (psi_nodes(c, &names) < 0) names = (struct psi_nodetab){0};
    if (psi_ask(c, PSM_RDP, &rep) < 0) {
        fprintf(stderr, "psstat: rdp: %s\n", strerror(errno));
        psi_nodetab_free(&names);
        return 1;
    }
    uint32_t self = 0;
    char impl[64] = "?";
    psmsg_get_u32(&rep.body, PSF_SELF, &self);
    psmsg_get_str(&rep.body, PSF_MAC_IMPL, impl, sizeof impl);
    uint64_t sent = get_num(&rep.body, PSF_PKTS_SENT, 0),
             recv = get_num(&rep.body, PSF_PKTS_RECV, 0),
             re = get_num(&rep.body, PSF_RETRANSMITS, 0);
    if (json) {
        printf("{\"self\":%u,\"mac_impl\":", self);
        json_str(impl);
        printf(",\"packets_sent\":%" PRIu64 ",\"packets_received\":%" PRIu64
               ",\"retransmits\":%" PRIu64,
               sent, recv, re);
        drops(&rep.body, 1);
        printf(",\"peers\":[");
    } else {
        uint64_t dropped = drops(&rep.body, 0);
        printf("node %u: packets %" PRIu64 " out, %" PRIu64 " in, %" PRIu64
               " retransmitted, %" PRIu64 " dropped (all reasons, also of no connection); "
               "MACs by %s\n",
               self, sent, recv, re, dropped, impl);
        printf("%-5s %-12s %-12s", "NODE", "NAME", "STATE");
        for (size_t k = 0; k < sizeof rdp_cols / sizeof rdp_cols[0]; k++)
            if (rdp_cols[k].head) printf(" %10s", rdp_cols[k].head);
        printf(" %8s %s\n", "DROPPED", "MAC");
    }
    size_t pos = 0;
    struct psmsg_field f;
    int first = 1;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_PEER) continue;
        struct psmsg_view v = psmsg_record(&f);
        uint32_t id = 0, state = 0;
        char mac[32] = "-";
        psmsg_get_u32(&v, PSF_NODE_ID, &id);
        psmsg_get_u32(&v, PSF_STATE, &state);
        psmsg_get_str(&v, PSF_MAC, mac, sizeof mac);
        const struct psi_node *nd = psi_nodetab_id(&names, id);
        const char *name = nd && nd->name[0] ? nd->name : "?";
        if (json) {
            printf("%s{\"node\":%u,\"name\":", first ? "" : ",", id);
            json_str(name);
            printf(",\"state\":\"%s\"", rdp_state(state));
            for (size_t k = 0; k < sizeof rdp_cols / sizeof rdp_cols[0]; k++)
                printf(",\"%s\":%" PRIu64, rdp_cols[k].json,
                       get_num(&v, rdp_cols[k].tag, rdp_cols[k].u32));
            if (strcmp(mac, "-") != 0) {
                printf(",\"mac\":");
                json_str(mac);
            }
            drops(&v, 1);
            printf("}");
        } else {
            printf("%-5u %-12s %-12s", id, name, rdp_state(state));
            for (size_t k = 0; k < sizeof rdp_cols / sizeof rdp_cols[0]; k++)
                if (rdp_cols[k].head)
                    printf(" %10" PRIu64, get_num(&v, rdp_cols[k].tag, rdp_cols[k].u32));
            printf(" %8" PRIu64 " %s\n", drops(&v, 0), mac);
        }
        first = 0;
    }
    if (json) printf("]}\n");
    psi_nodetab_free(&names);
    return 0;
}

static void user_name(uint32_t uid, char *out, size_t len)
{
    struct passwd *pw = getpwuid((uid_t)uid);
    if (pw)
        snprintf(out, len, "%s", pw->pw_name);
    else
        snprintf(out, len, "%" PRIu32, uid);
}

static int job_cmp(const void *a, const void *b)
{
    const struct psi_task *x = a, *y = b;
    if (x->job != y->job) return x->job < y->job ? -1 : 1;
    return task_cmp(a, b);
}

/* The gang matrix (PSM_GANG): the reply, or quantum 0 when off (or psid does not know) */
struct gangview {
    struct psmsg reply;
    uint32_t quantum, rows, row, sched;
    bool has_sched;
};

static void gang_view(struct psi *c, struct gangview *g)
{
    memset(g, 0, sizeof *g);
    if (psi_ask(c, PSM_GANG, &g->reply) < 0 ||
        psmsg_get_u32(&g->reply.body, PSF_QUANTUM_MS, &g->quantum) < 0) {
        g->quantum = 0;
        return;
    }
    psmsg_get_u32(&g->reply.body, PSF_ROWS, &g->rows);
    psmsg_get_u32(&g->reply.body, PSF_ROW, &g->row);
    g->has_sched = psmsg_get_u32(&g->reply.body, PSF_NODE_ID, &g->sched) == 0;
}

/* A job's row, state and share in the matrix; false if it is not in it. */
static bool gang_job(const struct gangview *g, uint64_t job, uint32_t *row, const char **state,
                     double *share)
{
    size_t pos = 0;
    struct psmsg_field f;
    while (g->quantum && psmsg_next(&g->reply.body, &pos, &f)) {
        if (f.tag != PSF_GANG_JOB) continue;
        struct psmsg_view v = {f.val, f.len};
        uint64_t id = 0;
        uint32_t quanta = 0, ran = 0;
        if (psmsg_get_u64(&v, PSF_JOB, &id) < 0 || id != job) continue;
        psmsg_get_u32(&v, PSF_ROW, row);
        psmsg_get_u32(&v, PSF_QUANTA, &quanta);
        psmsg_get_u32(&v, PSF_RAN, &ran);
        *state = *row == g->row ? "running" : "frozen";
        *share = quanta ? 100.0 * ran / quanta : 0;
        return true;
    }
    return false;
}

/* `psstat jobs`: the tasks of the list grouped by job; with gang scheduling, each job's row,
 * state and share of the quanta, and the asked node's queue */
static int running_jobs(struct psi *c, int json)
{
    struct psi_tasklist l;
    if (psi_tasks(c, &l) < 0) {
        fprintf(stderr, "psstat: jobs: %s\n", strerror(errno));
        return 1;
    }
    struct gangview g;
    gang_view(c, &g);
    if (l.n) qsort(l.v, l.n, sizeof *l.v, job_cmp);
    if (json) {
        printf("{");
        if (g.quantum) {
            printf("\"gang\":{\"quantum_ms\":%" PRIu32 ",\"rows\":%" PRIu32
                   ",\"running_row\":%" PRIu32,
                   g.quantum, g.rows, g.row);
            if (g.has_sched) printf(",\"scheduler\":%" PRIu32, g.sched);
            printf("},");
        }
        printf("\"jobs\":[");
    } else if (g.quantum) {
        printf("gang scheduling: quantum %" PRIu32 " ms, %" PRIu32 " rows, row %" PRIu32 " running",
               g.quantum, g.rows, g.row);
        if (g.has_sched) printf(" (scheduler: node %" PRIu32 ")", g.sched);
        printf("\n%-16s %-16s %-10s %6s %6s %4s %-8s %6s\n", "JOB", "NAME", "USER", "TASKS",
               "NODES", "ROW", "STATE", "SHARE");
    } else {
        printf("%-16s %-16s %-10s %6s %6s\n", "JOB", "NAME", "USER", "TASKS", "NODES");
    }
    size_t k = 0;
    for (size_t i = 0; i < l.n;) {
        size_t e = i;
        unsigned nodes = 0;
        while (e < l.n && l.v[e].has_job == l.v[i].has_job && l.v[e].job == l.v[i].job) {
            nodes += e == i || PSTID_NODE(l.v[e].tid) != PSTID_NODE(l.v[e - 1].tid);
            e++;
        }
        if (l.v[i].has_job) {
            char job[32], user[32];
            psi_tid_str(l.v[i].job, job, sizeof job);
            user_name(l.v[i].uid, user, sizeof user);
            if (json) {
                printf("%s{\"job\":\"%s\",\"name\":", k++ ? "," : "", job);
                if (l.v[i].name[0])
                    json_str(l.v[i].name);
                else
                    printf("null");
                printf(",\"uid\":%" PRIu32 ",\"user\":", l.v[i].uid);
                json_str(user);
                printf(",\"tasks\":%zu,\"nodes\":%u", e - i, nodes);
                uint32_t row = 0;
                const char *state;
                double share;
                if (gang_job(&g, l.v[i].job, &row, &state, &share))
                    printf(",\"row\":%" PRIu32 ",\"state\":\"%s\",\"share_pct\":%.1f", row, state,
                           share);
                printf("}");
            } else {
                printf("%-16s %-16s %-10s %6zu %6u", job, l.v[i].name[0] ? l.v[i].name : "-", user,
                       e - i, nodes);
                uint32_t row = 0;
                const char *state = "-";
                double share = 0;
                if (gang_job(&g, l.v[i].job, &row, &state, &share))
                    printf(" %4" PRIu32 " %-8s %5.1f%%", row, state, share);
                else if (g.quantum)
                    printf(" %4s %-8s %6s", "-", "new", "-"); /* not in a switch yet */
                printf("\n");
            }
        }
        i = e;
    }
    /* the asked node's queue (its psruns' spawns that wait for a row) */
    size_t pos = 0;
    struct psmsg_field f;
    while (g.quantum && psmsg_next(&g.reply.body, &pos, &f)) {
        if (f.tag != PSF_GANG_QUEUED) continue;
        struct psmsg_view v = {f.val, f.len};
        uint32_t place = 0, uid = 0, np = 0, waited = 0;
        psmsg_get_u32(&v, PSF_N, &place);
        psmsg_get_u32(&v, PSF_UID, &uid);
        psmsg_get_u32(&v, PSF_NP, &np);
        psmsg_get_u32(&v, PSF_WAITED_MS, &waited);
        char user[32];
        user_name(uid, user, sizeof user);
        if (json) {
            printf("%s{\"queued\":%" PRIu32 ",\"uid\":%" PRIu32 ",\"user\":", k++ ? "," : "", place,
                   uid);
            json_str(user);
            printf(",\"tasks\":%" PRIu32 ",\"state\":\"queued\",\"waited_ms\":%" PRIu32 "}", np,
                   waited);
        } else {
            char what[32];
            snprintf(what, sizeof what, "(queued %" PRIu32 ")", place);
            printf("%-16s %-16s %-10s %6" PRIu32 " %6s %4s %-8s %5.1fs\n", what, "-", user, np, "-",
                   "-", "queued", waited / 1000.0);
        }
    }
    if (json) printf("]}\n");
    psi_tasklist_free(&l);
    return 0;
}

static void fmt_time(uint64_t s, char *out, size_t len)
{
    time_t t = (time_t)s;
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm))
        snprintf(out, len, "%" PRIu64, s);
}

/* `psstat jobs --done`: the node's ring of ended jobs */
static int done_jobs(struct psi *c, int json)
{
    struct psmsg rep;
    if (psi_ask(c, PSM_JOBS_DONE, &rep) < 0) {
        fprintf(stderr, "psstat: jobs --done: %s\n", strerror(errno));
        return 1;
    }
    if (json)
        printf("{\"done\":[");
    else
        printf("%-16s %-16s %-10s %6s %-19s %-19s %10s %12s %12s %10s %12s %12s %6s\n", "JobID",
               "JobName", "User", "NTasks", "Start", "End", "Elapsed", "UserCPU", "SystemCPU",
               "MaxRSS", "DiskRead", "DiskWrite", "Status");
    size_t pos = 0, n = 0;
    struct psmsg_field f;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_DONE) continue;
        struct psmsg_view v = psmsg_record(&f);
        uint64_t job = 0, st = 0, en = 0, el = 0, us = 0, sy = 0, rss = 0, rd = 0, wr = 0;
        uint32_t uid = 0, np = 0, status = 0;
        char name[64] = "", user[32], jid[32], a[32], b[32], e[32], u[32], s[32], r[32];
        psmsg_get_u64(&v, PSF_JOB, &job);
        psmsg_get_str(&v, PSF_JOB_NAME, name, sizeof name);
        psmsg_get_u32(&v, PSF_UID, &uid);
        psmsg_get_u32(&v, PSF_NP, &np);
        psmsg_get_u32(&v, PSF_STATUS, &status);
        psmsg_get_u64(&v, PSF_START_S, &st);
        psmsg_get_u64(&v, PSF_END_S, &en);
        psmsg_get_u64(&v, PSF_ELAPSED_US, &el);
        psmsg_get_u64(&v, PSF_USER_US, &us);
        psmsg_get_u64(&v, PSF_SYS_US, &sy);
        psmsg_get_u64(&v, PSF_MAXRSS, &rss);
        psmsg_get_u64(&v, PSF_READ_BYTES, &rd);
        psmsg_get_u64(&v, PSF_WRITE_BYTES, &wr);
        psi_tid_str(job, jid, sizeof jid);
        user_name(uid, user, sizeof user);
        if (json) {
            printf("%s{\"job\":\"%s\",\"name\":", n ? "," : "", jid);
            json_str(name);
            printf(",\"uid\":%" PRIu32 ",\"user\":", uid);
            json_str(user);
            printf(",\"ntasks\":%" PRIu32 ",\"start\":%" PRIu64 ",\"end\":%" PRIu64
                   ",\"elapsed_us\":%" PRIu64 ",\"user_cpu_us\":%" PRIu64
                   ",\"system_cpu_us\":%" PRIu64 ",\"max_rss\":%" PRIu64 ",\"disk_read\":%" PRIu64
                   ",\"disk_write\":%" PRIu64 ",\"status\":%" PRIu32 "}",
                   np, st, en, el, us, sy, rss, rd, wr, status);
        } else {
            fmt_time(st, a, sizeof a);
            fmt_time(en, b, sizeof b);
            lg_fmt_elapsed(el, e, sizeof e);
            lg_fmt_cpu(us, u, sizeof u);
            lg_fmt_cpu(sy, s, sizeof s);
            lg_fmt_kib(rss, r, sizeof r);
            char rdm[32], wrm[32];
            lg_fmt_mib(rd, rdm, sizeof rdm);
            lg_fmt_mib(wr, wrm, sizeof wrm);
            printf("%-16s %-16s %-10s %6" PRIu32 " %-19s %-19s %10s %12s %12s %10s %12s %12s "
                   "%6" PRIu32 "\n",
                   jid, name[0] ? name : "-", user, np, a, b, e, u, s, r, rdm, wrm, status);
        }
        n++;
    }
    if (json) printf("]}\n");
    return 0;
}

/* `psstat sockets`: the accelerated connections of this node's processes */
static int sockets(struct psi *c, int json)
{
    struct psmsg rep;
    if (psi_ask(c, PSM_PL_SOCKETS, &rep) < 0) {
        fprintf(stderr, "psstat: sockets: %s\n", strerror(errno));
        return 1;
    }
    if (json)
        printf("{\"sockets\":[");
    else
        printf("%-8s %-10s %-22s %-22s %-5s %14s %14s\n", "PID", "USER", "LOCAL", "REMOTE", "PATH",
               "TX_BYTES", "RX_BYTES");
    size_t pos = 0, n = 0;
    struct psmsg_field f;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_SOCKET) continue;
        struct psmsg_view v = psmsg_record(&f);
        uint32_t pid = 0, uid = 0;
        uint64_t tx = 0, rx = 0;
        char local[80] = "?", remote[80] = "?", path[16] = "?", user[32];
        psmsg_get_u32(&v, PSF_PID, &pid);
        psmsg_get_u32(&v, PSF_UID, &uid);
        psmsg_get_str(&v, PSF_LOCAL, local, sizeof local);
        psmsg_get_str(&v, PSF_REMOTE, remote, sizeof remote);
        psmsg_get_str(&v, PSF_PATH, path, sizeof path);
        psmsg_get_u64(&v, PSF_TX_BYTES, &tx);
        psmsg_get_u64(&v, PSF_RX_BYTES, &rx);
        struct passwd *pw = getpwuid((uid_t)uid);
        if (pw)
            snprintf(user, sizeof user, "%s", pw->pw_name);
        else
            snprintf(user, sizeof user, "%" PRIu32, uid);
        if (json) {
            printf("%s{\"pid\":%" PRIu32 ",\"uid\":%" PRIu32 ",\"user\":", n ? "," : "", pid, uid);
            json_str(user);
            printf(",\"local\":");
            json_str(local);
            printf(",\"remote\":");
            json_str(remote);
            printf(",\"path\":");
            json_str(path);
            printf(",\"tx_bytes\":%" PRIu64 ",\"rx_bytes\":%" PRIu64 "}", tx, rx);
        } else {
            printf("%-8" PRIu32 " %-10s %-22s %-22s %-5s %14" PRIu64 " %14" PRIu64 "\n", pid, user,
                   local, remote, path, tx, rx);
        }
        n++;
    }
    if (json) printf("]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "psstat")) return 0;
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"done", no_argument, 0, 'd'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int json = 0, done = 0, o;
    while ((o = getopt_long(argc, argv, "jdh", opts, NULL)) != -1) {
        if (o == 'j')
            json = 1;
        else if (o == 'd')
            done = 1;
        else if (o == 'h')
            return usage(stdout, 0);
        else
            return usage(stderr, 2);
    }
    if (optind != argc - 1 ||
        (strcmp(argv[optind], "nodes") != 0 && strcmp(argv[optind], "tasks") != 0 &&
         strcmp(argv[optind], "rdp") != 0 && strcmp(argv[optind], "sockets") != 0 &&
         strcmp(argv[optind], "jobs") != 0) ||
        (done && strcmp(argv[optind], "jobs") != 0))
        return usage(stderr, 2);
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "psstat: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        return 1;
    }
    const char *what = argv[optind];
    int rc = strcmp(what, "nodes") == 0     ? nodes(&c, json)
             : strcmp(what, "tasks") == 0   ? tasks(&c, json)
             : strcmp(what, "sockets") == 0 ? sockets(&c, json)
             : strcmp(what, "jobs") == 0    ? (done ? done_jobs(&c, json) : running_jobs(&c, json))
                                            : rdp(&c, json);
    psi_close(&c);
    return rc;
}
