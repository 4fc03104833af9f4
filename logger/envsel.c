/*
 * envsel.c - choosing the exported environment (see envsel.h).
 */
#include "envsel.h"

#include <stdlib.h>
#include <string.h>

static const char *const defaults[] = {"PATH",      "HOME", "USER", "LANG", "LD_LIBRARY_PATH",
                                       "LD_PRELOAD"};
static const char *const prefixes[] = {"PSI_", "PSP_", "OMP_"};
static const char *const psid_sets[] = {"PSI_RANK",     "PSI_SIZE", "PSI_TID",    "PSI_NODE",
                                        "PSI_NODENAME", "PSI_JOB",  "PSID_SOCKET"};

static size_t name_len(const char *e)
{
    const char *eq = strchr(e, '=');
    return eq ? (size_t)(eq - e) : strlen(e);
}

static bool name_is(const char *e, size_t n, const char *name)
{
    return strlen(name) == n && strncmp(e, name, n) == 0;
}

static bool in_list(const char *e, size_t n, const char *list)
{
    /* list: "A,B,C" */
    for (const char *p = list; p && *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && strncmp(p, e, n) == 0) return true;
        p += l;
        if (*p) p++;
    }
    return false;
}

static bool by_default(const char *e, size_t n, const char *extra)
{
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (name_is(e, n, defaults[i])) return true;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (n > 4 && strncmp(e, prefixes[i], 4) == 0) return true;
    return in_list(e, n, extra);
}

static bool set_by_psid(const char *e, size_t n)
{
    for (size_t i = 0; i < sizeof psid_sets / sizeof psid_sets[0]; i++)
        if (name_is(e, n, psid_sets[i])) return true;
    return false;
}

/* put "NAME=VALUE" into out, replacing an earlier NAME */
static int put(struct lg_strv *out, const char *e)
{
    size_t n = name_len(e);
    for (size_t i = 0; i < out->n; i++)
        if (name_len(out->v[i]) == n && strncmp(out->v[i], e, n) == 0) {
            char *c = strdup(e);
            if (!c) return -1;
            free(out->v[i]);
            out->v[i] = c;
            return 0;
        }
    return lg_strv_add(out, e);
}

static const char *lookup(char *const *envp, const char *name, size_t n)
{
    for (char *const *e = envp; *e; e++)
        if (name_len(*e) == n && strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e;
    return NULL;
}

int lg_env_select(char *const *envp, const char *const *xs, size_t nx, bool all,
                  struct lg_strv *out)
{
    const char *extra = NULL;
    const char *pe = lookup(envp, "PSI_EXPORTS", 11);
    if (pe) extra = pe + 12;
    for (char *const *e = envp; *e; e++) {
        size_t n = name_len(*e);
        if (!(*e)[n] || set_by_psid(*e, n)) continue;
        if ((all || by_default(*e, n, extra)) && put(out, *e) < 0) return -1;
    }
    for (size_t i = 0; i < nx; i++) {
        const char *x = xs[i];
        if (strchr(x, '=')) {
            if (put(out, x) < 0) return -1;
            continue;
        }
        for (const char *p = x; *p;) {
            size_t l = strcspn(p, ",");
            const char *e = l ? lookup(envp, p, l) : NULL;
            if (e && put(out, e) < 0) return -1;
            p += l;
            if (*p) p++;
        }
    }
    return 0;
}
