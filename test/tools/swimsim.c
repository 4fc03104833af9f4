/*
 * swimsim.c - the simulation build of SWIM membership (psid/swim.c): N members in one
 * process on a simulated network (test/lib/swimnet.h), measured as issue 33 asks:
 *
 *   1. idle: packets each member sends and receives per second;
 *   2. pauses: a fraction of the members (default 20 %) stopped for PAUSE s (0.3) again
 *      and again, each time after running 0.1-1 s: members declared dead ("unreachable")
 *      by mistake must be 0;
 *   3. kills: K times (50) a random member is killed; the time until the first member and
 *      until every live member holds it dead; then it restarts (a new boot) and rejoins.
 *
 * usage: swimsim [-n N] [-k KILLS] [-f PAUSED_FRACTION] [-p PAUSE_S] [-t PAUSE_PHASE_S]
 *                [-l LOSS] [-s SEED] [-T PERIOD_MS] [-A ACK_TIMEOUT_MS] [-m SUSPECT_MIN_MS]
 *                [-M SUSPECT_MAX_MS] [-g GOSSIP_FANOUT] [-H LHM_MAX]   (defaults:
 * swim_config_default) Prints one line of figures; exits 1 when a target is missed (50 packets/s
 * sent and received per member, first detection p99 <= 1 s, all <= 1.5 s, no false dead).
 */
#include "swimnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ull
#define S  1000000000ull

static int cmp64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, int n, double p)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp64);
    int i = (int)(p * (n - 1) + 0.5);
    return (double)v[i] / (double)MS;
}

static void counts(const struct swimnet *w, uint64_t *sent, uint64_t *recv)
{
    for (uint32_t i = 0; i < w->n; i++) sent[i] = w->m[i].sent, recv[i] = w->m[i].recv;
}

int main(int argc, char **argv)
{
    uint32_t n = 64;
    int kills = 50, opt;
    double frac = 0.2, pause_s = 0.3, phase_s = 20, loss = 0;
    uint64_t seed = 1;
    struct swim_config c;
    swim_config_default(&c, 4, 0);
    while ((opt = getopt(argc, argv, "n:k:f:p:t:l:s:T:A:m:M:g:H:")) != -1) {
        switch (opt) {
        case 'n':
            n = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'k':
            kills = atoi(optarg);
            break;
        case 'f':
            frac = atof(optarg);
            break;
        case 'p':
            pause_s = atof(optarg);
            break;
        case 't':
            phase_s = atof(optarg);
            break;
        case 'l':
            loss = atof(optarg);
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'T':
            c.period_ns = strtoull(optarg, NULL, 10) * MS;
            break;
        case 'A':
            c.ack_timeout_ns = strtoull(optarg, NULL, 10) * MS;
            break;
        case 'm':
            c.suspect_min_ns = strtoull(optarg, NULL, 10) * MS;
            break;
        case 'M':
            c.suspect_max_ns = strtoull(optarg, NULL, 10) * MS;
            break;
        case 'g':
            c.gossip_fanout = (uint32_t)atoi(optarg);
            break;
        case 'H':
            c.lhm_max = (uint32_t)atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: swimsim [-n N] [-k KILLS] [-f PAUSED_FRACTION] [-p PAUSE_S] "
                            "[-t PAUSE_PHASE_S] [-l LOSS] [-s SEED] [-T PERIOD_MS] [-A ACK_MS] "
                            "[-m SUSPECT_MIN_MS] [-M SUSPECT_MAX_MS] [-g FANOUT] [-H LHM_MAX]\n");
            return 2;
        }
    }
    if (n < 4) return 2;
    struct swimnet *w = swimnet_new(n, &c, seed);
    w->loss = loss;
    clock_t cpu0 = clock();
    swimnet_run(w, w->now + 2 * S);

    /* 1. idle traffic over 5 s */
    uint64_t *s0 = calloc(n, 8), *r0 = calloc(n, 8), *s1 = calloc(n, 8), *r1 = calloc(n, 8);
    counts(w, s0, r0);
    swimnet_run(w, w->now + 5 * S);
    counts(w, s1, r1);
    double smax = 0, rmax = 0, tmax = 0, ssum = 0, rsum = 0;
    for (uint32_t i = 0; i < n; i++) {
        double sp = (double)(s1[i] - s0[i]) / 5, rp = (double)(r1[i] - r0[i]) / 5;
        ssum += sp, rsum += rp;
        if (sp > smax) smax = sp;
        if (rp > rmax) rmax = rp;
        if (sp + rp > tmax) tmax = sp + rp;
    }
    uint64_t idle_susp = w->false_suspect;

    /* 2. pauses */
    uint32_t npaused = (uint32_t)(frac * n + 0.5);
    uint32_t *who = calloc(npaused ? npaused : 1, 4);
    uint64_t *next = calloc(npaused ? npaused : 1, 8);
    for (uint32_t k = 0; k < npaused; k++) {
        who[k] = (uint32_t)((uint64_t)k * n / npaused); /* spread over the ids */
        next[k] = w->now + sn_rand(w) % S;
    }
    uint64_t pause = (uint64_t)(pause_s * (double)S), end = w->now + (uint64_t)(phase_s * S);
    uint64_t fd0 = w->false_dead, fs0 = w->false_suspect, rf0 = w->refuted, npauses = 0;
    counts(w, s0, r0);
    uint64_t tp0 = w->now;
    while (w->now < end) {
        for (uint32_t k = 0; k < npaused; k++)
            if (next[k] <= w->now) {
                swimnet_pause(w, who[k], pause);
                npauses++;
                next[k] = w->now + pause + 100 * MS + sn_rand(w) % (900 * MS);
            }
        swimnet_run(w, w->now + 10 * MS);
    }
    counts(w, s1, r1);
    double pmax = 0;
    for (uint32_t i = 0; i < n; i++) {
        double t = (double)(s1[i] - s0[i] + r1[i] - r0[i]) / ((double)(w->now - tp0) / S);
        if (t > pmax) pmax = t;
    }
    swimnet_run(w, w->now + 3 * S); /* the last pauses end and are refuted */
    uint64_t false_dead = w->false_dead - fd0, susp = w->false_suspect - fs0,
             refuted = w->refuted - rf0;

    /* 3. kills, each followed by a restart */
    uint64_t *first = calloc((size_t)kills + 1, 8), *all = calloc((size_t)kills + 1, 8);
    int allknew = 0;
    fd0 = w->false_dead;
    for (int k = 0; k < kills; k++) {
        uint32_t v = (uint32_t)(sn_rand(w) % n);
        w->first_dead[v] = w->last_dead[v] = 0;
        w->ndead[v] = 0;
        uint64_t t0 = w->now;
        swimnet_kill(w, v);
        swimnet_run(w, t0 + 2 * S);
        first[k] = w->first_dead[v] ? w->first_dead[v] - t0 : 2 * S;
        all[k] = w->last_dead[v] ? w->last_dead[v] - t0 : 2 * S;
        if (swimnet_dead_views(w, v) == swimnet_live(w))
            allknew++;
        else
            all[k] = 2 * S;
        swimnet_restart(w, v, swim_member_boot(w->m[v].s, v) + 1000000);
        swimnet_run(w, w->now + S / 2);
    }
    uint64_t kill_false_dead = w->false_dead - fd0;
    double cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
    double simsec = (double)(w->now - 1000000000ull) / S;
    double f50 = pct(first, kills, 0.5), f99 = pct(first, kills, 0.99),
           fmax = pct(first, kills, 1.0);
    double a50 = pct(all, kills, 0.5), a99 = pct(all, kills, 0.99), amax = pct(all, kills, 1.0);
    printf("N=%u idle pkts/s/member: sent mean %.1f max %.1f, recv mean %.1f max %.1f, "
           "sent+recv max %.1f; idle suspicions %llu | pauses (%u members x %.1f s, %llu "
           "pauses, sent+recv max %.1f/s): suspicions %llu refuted %llu false unreachable %llu | "
           "%d kills: first p50 %.0f p99 %.0f max %.0f ms, all p50 %.0f p99 %.0f max %.0f ms, "
           "all knew %d/%d, false unreachable %llu | sim CPU %.1f us per member-second\n",
           n, ssum / n, smax, rsum / n, rmax, tmax, (unsigned long long)idle_susp, npaused, pause_s,
           (unsigned long long)npauses, pmax, (unsigned long long)susp, (unsigned long long)refuted,
           (unsigned long long)false_dead, kills, f50, f99, fmax, a50, a99, amax, allknew, kills,
           (unsigned long long)kill_false_dead, cpu * 1e6 / (simsec * n));
    bool ok = tmax <= 50 && f99 <= 1000 && amax <= 1500 && false_dead == 0 &&
              kill_false_dead == 0 && allknew == kills;
    swimnet_free(w);
    free(s0), free(r0), free(s1), free(r1), free(who), free(next), free(first), free(all);
    return ok ? 0 : 1;
}
