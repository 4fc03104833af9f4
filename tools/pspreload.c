/*
 * pspreload.c - run a program under libpspreload, like SMC's smc_run:
 *
 *   pspreload [-s|--stats[=FILE]] [--strict] [--sync] [-r|--rules RULES] [-d|--disable]
 *             [--] PROGRAM [ARGS...]
 *
 * Sets the library's variables (PSP_STATS, PSP_STRICT, PSP_SYNC, PSP_RULES, PSP_DISABLE),
 * puts the library first in LD_PRELOAD (keeping what is there) and execs PROGRAM. The
 * library is $PSPRELOAD_LIB, else ../lib/libpspreload.so next to this program's own
 * directory (the build tree's build/bin and build/lib; PREFIX/bin and PREFIX/lib when
 * installed). A bad command line prints the usage and exits 2; a program that cannot be
 * run exits 127 (126 when it is not executable), as a shell does. Manual:
 * docs/man/pspreload.1.
 */
#include "../logger/preloadlib.h"
#include "psversion.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: pspreload [-s|--stats[=FILE]] [--strict] [--sync] [-r|--rules RULES]\n"
    "                 [-d|--disable] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM with libpspreload: its TCP connections to listeners under the library on\n"
    "other cluster nodes travel over RDP; everything else stays with the kernel.\n"
    "  -s, --stats[=FILE]  at exit, one line of counters per process to stderr (or FILE)\n"
    "      --strict        a connection between nodes that would stay on TCP fails instead\n"
    "      --sync          a connection's first use waits for its negotiation, so that all\n"
    "                      of an accelerated one's bytes take the fast path\n"
    "  -r, --rules RULES   which destinations: [!]ADDR[/LEN][:PORT[-PORT]],... first match\n"
    "                      wins, ! keeps TCP, the default accelerates\n"
    "  -d, --disable       load the library but pass everything through\n"
    "  -h, --help          this text\n"
    "The node's psid is $PSID_SOCKET, else /run/pscluster/psid.sock. See pspreload(1).\n";

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "pspreload")) return 0;
    static const struct option opts[] = {{"stats", optional_argument, 0, 's'},
                                         {"strict", no_argument, 0, 'S'},
                                         {"sync", no_argument, 0, 'Y'},
                                         {"rules", required_argument, 0, 'r'},
                                         {"disable", no_argument, 0, 'd'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "+s::r:dh", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            setenv("PSP_STATS", optarg && *optarg ? optarg : "1", 1);
            break;
        case 'S':
            setenv("PSP_STRICT", "1", 1);
            break;
        case 'Y':
            setenv("PSP_SYNC", "1", 1);
            break;
        case 'r':
            setenv("PSP_RULES", optarg, 1);
            break;
        case 'd':
            setenv("PSP_DISABLE", "1", 1);
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    char lib[PATH_MAX];
    if (lg_preload_lib(lib, sizeof lib) < 0) {
        fprintf(stderr, "pspreload: libpspreload.so not found (%s); set PSPRELOAD_LIB\n", lib);
        return 1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t need = strlen(lib) + (old ? strlen(old) + 2 : 1);
    char *pre = malloc(need);
    if (!pre) return 1;
    snprintf(pre, need, "%s%s%s", lib, old && *old ? " " : "", old ? old : "");
    setenv("LD_PRELOAD", pre, 1);
    execvp(argv[optind], argv + optind);
    int e = errno;
    fprintf(stderr, "pspreload: %s: %s\n", argv[optind], strerror(e));
    return e == EACCES || e == ENOEXEC ? 126 : 127;
}
