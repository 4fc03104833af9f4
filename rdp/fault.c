/*
 * fault.c - the fault injector's decisions and the RDP_FAULTS parser (see fault.h).
 */
#include "fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

uint64_t rdp_rand64(uint64_t *s)
{
    /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static bool chance(uint64_t *s, double p)
{
    if (p <= 0) return false;
    return (double)(rdp_rand64(s) >> 11) * (1.0 / 9007199254740992.0) < p;
}

void rdp_injector_set(struct rdp_injector *in, const struct rdp_faults *f)
{
    in->f = *f;
    in->on = f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0;
    uint64_t seed = f->seed;
    if (!seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
    }
    in->rng = seed | 1;
}

struct rdp_fault_verdict rdp_injector_decide(struct rdp_injector *in, unsigned dir)
{
    struct rdp_fault_verdict v = {0};
    if (!in->on || !(in->f.dir & dir)) return v;
    if ((v.drop = chance(&in->rng, in->f.drop))) {
        in->drop++;
        return v;
    }
    if ((v.dup = chance(&in->rng, in->f.dup))) in->dup++;
    if ((v.reorder = chance(&in->rng, in->f.reorder))) in->reorder++;
    if ((v.corrupt = chance(&in->rng, in->f.corrupt))) {
        in->corrupt++;
        v.bit = (uint32_t)rdp_rand64(&in->rng);
    }
    return v;
}

static int parse_prob(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= 0 && d <= 1)) return -1;
    *out = d;
    return 0;
}

int rdp_parse_faults(const char *spec, struct rdp_faults *f)
{
    memset(f, 0, sizeof *f);
    f->dir = RDP_FAULT_BOTH;
    if (!spec) goto bad;
    char buf[256];
    if (strlen(spec) >= sizeof buf) goto bad;
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) goto bad;
        *eq = 0;
        const char *k = item, *v = eq + 1;
        if (!strcmp(k, "drop") || !strcmp(k, "loss")) {
            if (parse_prob(v, &f->drop)) goto bad;
        } else if (!strcmp(k, "dup")) {
            if (parse_prob(v, &f->dup)) goto bad;
        } else if (!strcmp(k, "reorder")) {
            if (parse_prob(v, &f->reorder)) goto bad;
        } else if (!strcmp(k, "corrupt")) {
            if (parse_prob(v, &f->corrupt)) goto bad;
        } else if (!strcmp(k, "dir")) {
            if (!strcasecmp(v, "tx"))
                f->dir = RDP_FAULT_TX;
            else if (!strcasecmp(v, "rx"))
                f->dir = RDP_FAULT_RX;
            else if (!strcasecmp(v, "both"))
                f->dir = RDP_FAULT_BOTH;
            else
                goto bad;
        } else if (!strcmp(k, "seed")) {
            char *end;
            errno = 0;
            f->seed = strtoull(v, &end, 0);
            if (errno || end == v || *end) goto bad;
        } else {
            goto bad;
        }
    }
    return 0;
bad:
    errno = EINVAL;
    return -1;
}
