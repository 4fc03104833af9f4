/*
 * signames.c - signal names <-> numbers (see psi_signames.h), from glibc's sigabbrev_np plus
 * the real-time range.
 */
#include "psi_signames.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_num(const char *s, int *out)
{
    if (!*s) return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || !isdigit((unsigned char)*s) || v < 0 || v >= NSIG) return -1;
    *out = (int)v;
    return 0;
}

int psi_sig_parse(const char *s)
{
    int sig;
    if (!s) return -1;
    if (isdigit((unsigned char)*s)) return parse_num(s, &sig) == 0 ? sig : -1;
    if (strncasecmp(s, "SIG", 3) == 0) s += 3;
    if (!*s) return -1;
    for (sig = 1; sig < SIGRTMIN; sig++) {
        const char *a = sigabbrev_np(sig);
        if (a && strcasecmp(a, s) == 0) return sig;
    }
    /* a few aliases kill(1) accepts */
    if (strcasecmp(s, "IOT") == 0) return SIGABRT;
    if (strcasecmp(s, "POLL") == 0) return SIGIO;
    if (strncasecmp(s, "RTMIN", 5) == 0 || strncasecmp(s, "RTMAX", 5) == 0) {
        int max = toupper((unsigned char)s[3]) == 'A';
        const char *r = s + 5;
        int off = 0;
        if (*r) {
            if (*r != (max ? '-' : '+') || parse_num(r + 1, &off) < 0) return -1;
        }
        sig = max ? SIGRTMAX - off : SIGRTMIN + off;
        return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
    }
    return -1;
}

const char *psi_sig_name(int sig, char *buf, size_t n)
{
    const char *a = sig > 0 && sig < SIGRTMIN ? sigabbrev_np(sig) : NULL;
    if (a)
        snprintf(buf, n, "SIG%s", a);
    else if (sig == SIGRTMIN)
        snprintf(buf, n, "SIGRTMIN");
    else if (sig > SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, n, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, n, "SIG%d", sig);
    return buf;
}
