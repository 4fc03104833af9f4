/*
 * exitcodes.c - wait statuses and spawn errors to exit codes and phrases (see exitcodes.h).
 */
#include "exitcodes.h"

#include "psi_signames.h"

#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>

int lg_status_code(uint32_t st)
{
    int s = (int)st;
    if (WIFEXITED(s)) return WEXITSTATUS(s);
    if (WIFSIGNALED(s)) return 128 + WTERMSIG(s);
    return 1;
}

int lg_spawn_code(int err)
{
    switch (err) {
    case 0:
        return 0;
    case ENOENT:
    case ENOTDIR:
    case ELOOP:
    case ENAMETOOLONG:
        return LG_EXIT_NOTFOUND;
    case EACCES:
    case EPERM:
    case ENOEXEC:
    case EISDIR:
    case ETXTBSY:
    case ELIBBAD:
        return LG_EXIT_NOEXEC;
    default:
        return 1;
    }
}

const char *lg_status_text(uint32_t st, char *buf, size_t n)
{
    int s = (int)st;
    char sn[32];
    if (WIFEXITED(s))
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(s));
    else if (WIFSIGNALED(s))
        snprintf(buf, n, "killed by signal %d (%s)%s", WTERMSIG(s),
                 psi_sig_name(WTERMSIG(s), sn, sizeof sn), WCOREDUMP(s) ? ", core dumped" : "");
    else
        snprintf(buf, n, "ended with wait status 0x%x", (unsigned)st);
    return buf;
}

void lg_exitagg_add(struct lg_exitagg *a, uint32_t rank, int code)
{
    if (code == 0 || a->failed) return;
    a->failed = true;
    a->rank = rank;
    a->code = code;
}

int lg_exitagg_code(const struct lg_exitagg *a)
{
    return a->failed ? a->code : 0;
}
