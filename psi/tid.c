/*
 * tid.c - task ids NODE:PID parsed and printed (see psi_tid.h).
 */
#include "psi_tid.h"

#include "decimal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* psi_tid_parse, and with syntax_only psi_tid_check: then NODE is not looked up (any name
 * passes) and *tid is not set. */
static int tid_parse(const char *s, const struct psi_nodetab *t, bool syntax_only, uint64_t *tid,
                     char *err, size_t errsz)
{
    const char *colon = strrchr(s, ':');
    if (!colon) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (!isdigit((unsigned char)*s) || *end || errno) {
            snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
            return -1;
        }
        if (!syntax_only) *tid = v;
        return 0;
    }
    char node[128];
    size_t nl = (size_t)(colon - s);
    if (nl == 0 || nl >= sizeof node) {
        snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
        return -1;
    }
    memcpy(node, s, nl);
    node[nl] = '\0';
    uint32_t id, pid;
    if (psi_decimal_u32(colon + 1, &pid) < 0 || pid == 0 || pid > INT32_MAX) {
        snprintf(err, errsz, "%s: not a task id (NODE:PID)", s);
        return -1;
    }
    if (syntax_only) return 0;
    if (psi_decimal_u32(node, &id) < 0) {
        const struct psi_node *nd = t ? psi_nodetab_lookup(t, node) : NULL;
        if (!nd) {
            snprintf(err, errsz, "%s: no node '%s' in the cluster", s, node);
            return -1;
        }
        id = nd->id;
    } else if (t && !psi_nodetab_id(t, id)) {
        snprintf(err, errsz, "%s: no node %" PRIu32 " in the cluster", s, id);
        return -1;
    }
    *tid = PSTID(id, pid);
    return 0;
}

int psi_tid_parse(const char *s, const struct psi_nodetab *t, uint64_t *tid, char *err,
                  size_t errsz)
{
    return tid_parse(s, t, false, tid, err, errsz);
}

int psi_tid_check(const char *s, char *err, size_t errsz)
{
    return tid_parse(s, NULL, true, NULL, err, errsz);
}

const char *psi_tid_str(uint64_t tid, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu32 ":%" PRId32, PSTID_NODE(tid), PSTID_PID(tid));
    return buf;
}
