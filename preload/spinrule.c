/*
 * spinrule.c - the spin rule (spinrule.h): pure functions, no state of the library.
 */
#include "spinrule.h"

enum spin_mode spin_rule(enum spin_mode cur, unsigned runnable, unsigned ncpu)
{
    if (!runnable || !ncpu) return cur;
    if (runnable > ncpu) return cur == SPIN_FULL ? SPIN_DOUBT : SPIN_SLEEP;
    return cur == SPIN_SLEEP ? SPIN_DOUBT : SPIN_FULL;
}

unsigned spin_runnable(const char *text, size_t len)
{
    /* three load averages, each followed by one space, then RUNNING/TOTAL */
    size_t i = 0;
    for (int field = 0; field < 3; field++) {
        size_t start = i;
        while (i < len && text[i] != ' ') {
            if ((text[i] < '0' || text[i] > '9') && text[i] != '.') return 0;
            i++;
        }
        if (i >= len || i == start) return 0;
        i++;
    }
    unsigned long n = 0;
    size_t digits = 0;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
        n = n * 10 + (unsigned long)(text[i] - '0');
        if (n > 1000000000ul) return 0; /* no node runs that many */
    }
    if (!digits || i >= len || text[i] != '/') return 0;
    return (unsigned)n;
}
