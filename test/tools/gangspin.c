/*
 * gangspin.c - a CPU-bound task for the gang scheduling tests (test/shell/gang_*.sh):
 *
 *   gangspin [--cpu] FILE SECONDS   spin for SECONDS of wall time (--cpu: until the task's
 *                            own CPU time reaches SECONDS: a fixed amount of work, for
 *                            makespans); after every ~2 ms of its own CPU time append "MS"
 *                            (CLOCK_REALTIME milliseconds) to FILE, so that FILE shows when
 *                            the task made progress (a frozen task writes nothing). Prints
 *                            "pid PID" first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long ns_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int cpu_mode = argc == 4 && strcmp(argv[1], "--cpu") == 0;
    if (cpu_mode) {
        argv++;
        argc--;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: gangspin [--cpu] FILE SECONDS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "a");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    clockid_t clk = cpu_mode ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    long long end = ns_of(clk) + (long long)(atof(argv[2]) * 1e9);
    long long next = ns_of(CLOCK_PROCESS_CPUTIME_ID) + 2000000;
    volatile unsigned long x = 0;
    while (ns_of(clk) < end) {
        for (int i = 0; i < 20000; i++) x += (unsigned long)i;
        long long cpu = ns_of(CLOCK_PROCESS_CPUTIME_ID);
        if (cpu >= next) {
            fprintf(f, "%lld\n", ns_of(CLOCK_REALTIME) / 1000000);
            next = cpu + 2000000;
        }
    }
    fclose(f);
    return 0;
}
