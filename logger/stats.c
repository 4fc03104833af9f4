/*
 * stats.c - the accounting table of psrun --stats (see stats.h).
 */
#include "stats.h"

#include "psi_tid.h"

#include <inttypes.h>
#include <string.h>

void lg_fmt_elapsed(uint64_t us, char *out, size_t len)
{
    uint64_t s = us / 1000000u, d = s / 86400u;
    s %= 86400u;
    if (d)
        snprintf(out, len, "%" PRIu64 "-%02u:%02u:%02u", d, (unsigned)(s / 3600),
                 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
    else
        snprintf(out, len, "%02u:%02u:%02u", (unsigned)(s / 3600), (unsigned)(s / 60 % 60),
                 (unsigned)(s % 60));
}

void lg_fmt_cpu(uint64_t us, char *out, size_t len)
{
    uint64_t ms = us / 1000u, s = ms / 1000u, d = s / 86400u;
    unsigned h = (unsigned)(s % 86400u / 3600), m = (unsigned)(s / 60 % 60),
             sec = (unsigned)(s % 60), milli = (unsigned)(ms % 1000);
    if (d)
        snprintf(out, len, "%" PRIu64 "-%02u:%02u:%02u.%03u", d, h, m, sec, milli);
    else if (h)
        snprintf(out, len, "%02u:%02u:%02u.%03u", h, m, sec, milli);
    else
        snprintf(out, len, "%02u:%02u.%03u", m, sec, milli);
}

void lg_fmt_kib(uint64_t bytes, char *out, size_t len)
{
    snprintf(out, len, "%" PRIu64 "K", (bytes + 1023) / 1024);
}

void lg_fmt_mib(uint64_t bytes, char *out, size_t len)
{
    snprintf(out, len, "%.2fM", (double)bytes / (1024.0 * 1024.0));
}

static void line(FILE *f, const char *job, const char *name, const char *rank, const char *node,
                 const char *el, const char *u, const char *s, const char *t, const char *rss,
                 const char *rd, const char *wr)
{
    fprintf(f, "%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n", job, name, rank, node, el, u, s, t, rss, rd,
            wr);
}

void lg_stats_write(FILE *f, const struct lg_job *j, const char *name, uint64_t elapsed_us)
{
    char job[32], nn[64], el[32], u[32], s[32], t[32], rss[32], rd[32], wr[32], rk[16];
    psi_tid_str(j->jobid, job, sizeof job);
    line(f, "JobID", "JobName", "Rank", "NodeList", "Elapsed", "UserCPU", "SystemCPU", "TotalCPU",
         "MaxRSS", "MaxDiskRead", "MaxDiskWrite");
    uint64_t tu = 0, ts = 0, maxrss = 0, trd = 0, twr = 0;
    for (uint32_t r = 0; r < j->cfg.np; r++) {
        const struct lg_rank *x = &j->r[r];
        if (!x->use.have) continue;
        const struct lg_usage *a = &x->use;
        bool node_cpu = false; /* its node's cgroup counts its CPU */
        for (size_t k = 0; k < j->nnodes_use; k++)
            node_cpu |= j->nodes_use[k].node == x->node && j->nodes_use[k].have_cpu;
        if (!node_cpu) {
            tu += a->user_us;
            ts += a->sys_us;
        }
        if (a->maxrss > maxrss) maxrss = a->maxrss;
        trd += a->rbytes;
        twr += a->wbytes;
        snprintf(rk, sizeof rk, "%" PRIu32, r);
        psi_nodetab_name(j->cfg.nodes, x->node, nn, sizeof nn);
        lg_fmt_elapsed(a->elapsed_us, el, sizeof el);
        lg_fmt_cpu(a->user_us, u, sizeof u);
        lg_fmt_cpu(a->sys_us, s, sizeof s);
        lg_fmt_cpu(a->user_us + a->sys_us, t, sizeof t);
        lg_fmt_kib(a->maxrss, rss, sizeof rss);
        lg_fmt_mib(a->rbytes, rd, sizeof rd);
        lg_fmt_mib(a->wbytes, wr, sizeof wr);
        line(f, job, name, rk, nn, el, u, s, t, rss, rd, wr);
    }
    for (size_t k = 0; k < j->nnodes_use; k++) {
        const struct lg_usage *a = &j->nodes_use[k];
        if (!a->have_cpu && !a->have_rss && !a->have_io) continue;
        psi_nodetab_name(j->cfg.nodes, a->node, nn, sizeof nn);
        u[0] = s[0] = t[0] = rss[0] = rd[0] = wr[0] = 0;
        if (a->have_cpu) {
            tu += a->user_us;
            ts += a->sys_us;
            lg_fmt_cpu(a->user_us, u, sizeof u);
            lg_fmt_cpu(a->sys_us, s, sizeof s);
            lg_fmt_cpu(a->user_us + a->sys_us, t, sizeof t);
        }
        if (a->have_rss) {
            if (a->maxrss > maxrss) maxrss = a->maxrss;
            lg_fmt_kib(a->maxrss, rss, sizeof rss);
        }
        if (a->have_io) {
            lg_fmt_mib(a->rbytes, rd, sizeof rd);
            lg_fmt_mib(a->wbytes, wr, sizeof wr);
        }
        line(f, job, name, "node", nn, "", u, s, t, rss, rd, wr);
    }
    lg_fmt_elapsed(elapsed_us, el, sizeof el);
    lg_fmt_cpu(tu, u, sizeof u);
    lg_fmt_cpu(ts, s, sizeof s);
    lg_fmt_cpu(tu + ts, t, sizeof t);
    lg_fmt_kib(maxrss, rss, sizeof rss);
    lg_fmt_mib(trd, rd, sizeof rd);
    lg_fmt_mib(twr, wr, sizeof wr);
    line(f, job, name, "total", "", el, u, s, t, rss, rd, wr);
}
