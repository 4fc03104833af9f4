/*
 * cpus.c - CPU sets, --cpu-bind and sizes (see pscpus.h).
 */
#include "pscpus.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

unsigned pscpu_count(const struct pscpuset *s)
{
    unsigned n = 0;
    for (size_t i = 0; i < PSCPU_BYTES; i++) n += (unsigned)__builtin_popcount(s->b[i]);
    return n;
}

bool pscpu_subset(const struct pscpuset *a, const struct pscpuset *b)
{
    return pscpu_first_outside(a, b) < 0;
}

int pscpu_first_outside(const struct pscpuset *a, const struct pscpuset *b)
{
    for (unsigned c = 0; c < PSCPU_MAX; c++)
        if (pscpu_isset(a, c) && !pscpu_isset(b, c)) return (int)c;
    return -1;
}

/* a decimal number below PSCPU_MAX at *p: 0 and *p past it, or -1 */
static int cpu_number(const char **p, unsigned *out)
{
    if (!isdigit((unsigned char)**p)) return -1;
    unsigned long v = 0;
    while (isdigit((unsigned char)**p)) {
        v = v * 10 + (unsigned long)(**p - '0');
        if (v >= PSCPU_MAX) return -1;
        (*p)++;
    }
    *out = (unsigned)v;
    return 0;
}

int pscpu_parse_list(const char *str, struct pscpuset *s, char *why, size_t whylen)
{
    memset(s, 0, sizeof *s);
    const char *p = str;
    if (!*p) return fail(why, whylen, "an empty CPU list");
    for (;;) {
        unsigned a, b;
        if (cpu_number(&p, &a) < 0)
            return fail(why, whylen, "'%s': not a CPU list (CPUs 0 to %d, ranges A-B, commas)", str,
                        PSCPU_MAX - 1);
        b = a;
        if (*p == '-') {
            p++;
            if (cpu_number(&p, &b) < 0 || b < a)
                return fail(why, whylen, "'%s': a bad range of CPUs", str);
        }
        for (unsigned c = a; c <= b; c++) pscpu_set(s, c);
        if (!*p) return 0;
        if (*p++ != ',' || !*p) return fail(why, whylen, "'%s': not a CPU list", str);
    }
}

int pscpu_format_list(const struct pscpuset *s, char *out, size_t len)
{
    size_t off = 0;
    if (len == 0) return -1;
    out[0] = 0;
    for (unsigned c = 0; c < PSCPU_MAX;) {
        if (!pscpu_isset(s, c)) {
            c++;
            continue;
        }
        unsigned e = c;
        while (e + 1 < PSCPU_MAX && pscpu_isset(s, e + 1)) e++;
        int n = e == c ? snprintf(out + off, len - off, "%s%u", off ? "," : "", c)
                       : snprintf(out + off, len - off, "%s%u-%u", off ? "," : "", c, e);
        if (n < 0 || (size_t)n >= len - off) return -1;
        off += (size_t)n;
        c = e + 1;
    }
    return 0;
}

/* One entry of a map or mask list, [p, end): its CPUs into *s and its repeat count. */
static int map_entry(const char *p, const char *end, bool mask, struct pscpuset *s,
                     unsigned long *rep)
{
    memset(s, 0, sizeof *s);
    *rep = 1;
    const char *star = memchr(p, '*', (size_t)(end - p));
    const char *vend = star ? star : end;
    if (star) {
        char *e;
        errno = 0;
        if (!isdigit((unsigned char)star[1])) return -1;
        *rep = strtoul(star + 1, &e, 10);
        if (errno || e != end || *rep == 0 || *rep > PSCPU_MAP_MAX) return -1;
    }
    bool hex = vend - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    if (hex) p += 2;
    if (p == vend) return -1;
    if (!mask) { /* map_cpu: one CPU, decimal or 0x hexadecimal */
        unsigned long v = 0;
        for (const char *q = p; q < vend; q++) {
            int d = (unsigned char)*q;
            unsigned x = isdigit(d)           ? (unsigned)(d - '0')
                         : hex && isxdigit(d) ? (unsigned)(tolower(d) - 'a' + 10)
                                              : 99;
            if (x == 99) return -1;
            v = v * (hex ? 16 : 10) + x;
            if (v >= PSCPU_MAX) return -1;
        }
        pscpu_set(s, (unsigned)v);
        return 0;
    }
    /* mask_cpu: always hexadecimal; the last digit is CPUs 0-3 */
    unsigned bit = 0;
    for (const char *q = vend; q > p; q--, bit += 4) {
        int d = (unsigned char)q[-1];
        if (!isxdigit(d)) return -1;
        unsigned v = isdigit(d) ? (unsigned)(d - '0') : (unsigned)(tolower(d) - 'a' + 10);
        for (unsigned k = 0; k < 4; k++)
            if (v >> k & 1) {
                if (bit + k >= PSCPU_MAX) return -1;
                pscpu_set(s, bit + k);
            }
    }
    return pscpu_count(s) ? 0 : -1;
}

int pscpu_map_check(const char *list, bool mask, struct pscpuset *all, char *why, size_t whylen)
{
    const char *what = mask ? "mask_cpu" : "map_cpu";
    if (all) memset(all, 0, sizeof *all);
    if (!list || !*list) return fail(why, whylen, "%s: an empty list", what);
    unsigned long total = 0;
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        struct pscpuset s;
        unsigned long rep;
        if (map_entry(p, end, mask, &s, &rep) < 0)
            return fail(why, whylen, "%s: '%.*s': not %s", what, (int)(end - p), p,
                        mask ? "a hexadecimal CPU mask (0x3, f, ...), optionally *COUNT"
                             : "a CPU number (decimal or 0x hex), optionally *COUNT");
        total += rep;
        if (total > PSCPU_MAP_MAX)
            return fail(why, whylen, "%s: more than %d entries", what, PSCPU_MAP_MAX);
        for (size_t i = 0; all && i < PSCPU_BYTES; i++) all->b[i] |= s.b[i];
        if (!*end) break;
        p = end + 1;
        if (!*p) return fail(why, whylen, "%s: a trailing comma", what);
    }
    return (int)total;
}

int pscpu_map_entry(const char *list, bool mask, uint32_t idx, struct pscpuset *s)
{
    int n = pscpu_map_check(list, mask, NULL, NULL, 0);
    if (n <= 0) return -1;
    unsigned long want = idx % (unsigned)n, at = 0;
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        unsigned long rep;
        if (map_entry(p, end, mask, s, &rep) < 0) return -1;
        if (want < at + rep) return 0;
        at += rep;
        if (!*end) return -1;
        p = end + 1;
    }
}

int pscpu_parse_bind(const char *str, uint32_t *mode, const char **list, char *why, size_t whylen)
{
    *mode = PSBIND_AUTO;
    *list = NULL;
    bool have = false;
    for (const char *p = str; *p;) {
        size_t n = strcspn(p, ",");
        uint32_t m = PSBIND_AUTO;
        if (n == 7 && !strncmp(p, "verbose", n)) {
            *mode |= PSBIND_VERBOSE;
        } else if (n == 5 && !strncmp(p, "quiet", n)) {
            *mode &= ~(uint32_t)PSBIND_VERBOSE;
        } else if ((n == 4 && !strncmp(p, "none", n)) || (n == 2 && !strncmp(p, "no", n))) {
            m = PSBIND_NONE;
        } else if (n == 5 && !strncmp(p, "cores", n)) {
            m = PSBIND_CORES;
        } else if (n == 7 && !strncmp(p, "threads", n)) {
            m = PSBIND_THREADS;
        } else if (!strncmp(p, "map_cpu:", 8) || !strncmp(p, "mask_cpu:", 9)) {
            bool mask = p[1] == 'a' && p[2] == 's';
            const char *l = p + (mask ? 9 : 8);
            if (have) return fail(why, whylen, "--cpu-bind=%s: more than one binding", str);
            if (pscpu_map_check(l, mask, NULL, why, whylen) < 0) return -1;
            *mode |= mask ? PSBIND_MASK_CPU : PSBIND_MAP_CPU;
            *list = l;
            return 0; /* the list takes the rest, commas and all */
        } else {
            return fail(why, whylen,
                        "--cpu-bind=%s: '%.*s' is not none, cores, threads, map_cpu:LIST, "
                        "mask_cpu:LIST or verbose",
                        str, (int)n, p);
        }
        if (m != PSBIND_AUTO) {
            if (have) return fail(why, whylen, "--cpu-bind=%s: more than one binding", str);
            have = true;
            *mode |= m;
        }
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

int ps_parse_size(const char *str, uint64_t def_unit, uint64_t *bytes)
{
    if (!str || !isdigit((unsigned char)*str)) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(str, &end, 10);
    if (errno) return -1;
    uint64_t unit = def_unit;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            unit = 1ull << 10;
            break;
        case 'M':
            unit = 1ull << 20;
            break;
        case 'G':
            unit = 1ull << 30;
            break;
        case 'T':
            unit = 1ull << 40;
            break;
        default:
            return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I') end++; /* "2GiB", "2GB" */
        if (*end == 'b' || *end == 'B') end++;
        if (*end) return -1;
    }
    if (v > UINT64_MAX / unit) return -1;
    *bytes = (uint64_t)v * unit;
    return 0;
}

void ps_format_size(uint64_t bytes, char *out, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    unsigned u = 0;
    double v = (double)bytes;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0 || v == (double)(uint64_t)v)
        snprintf(out, len, "%.0f %s", v, units[u]);
    else
        snprintf(out, len, "%.1f %s", v, units[u]);
}
