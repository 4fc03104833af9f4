/*
 * state.c - the state file DIR/pslocal.state (see pslocal.h): what `up` made outside DIR,
 * one record a line, appended (and synced) as each thing is made, so that `down` removes
 * exactly that, also after a crash.
 */
#include "pslocal.h"

#include <err.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pl_state_add(const char *dir, const char *fmt, ...)
{
    char path[PATH_MAX], line[256];
    pl_path_in(path, sizeof path, dir, STATE_FILE);
    va_list ap;
    va_start(ap, fmt);
    int l = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (l < 0 || (size_t)l >= sizeof line - 1) errx(1, "state record too long");
    line[l++] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) err(1, "%s", path);
    if (write(fd, line, (size_t)l) != l || fdatasync(fd) < 0) err(1, "%s", path);
    close(fd);
}

void pl_state_free(struct pl_state *s)
{
    free(s->veth);
    free(s->ns);
    memset(s, 0, sizeof *s);
}

/* 0 and s filled, or -1 if there is no state file (errno ENOENT) or it cannot be read. */
int pl_state_read(const char *dir, struct pl_state *s)
{
    memset(s, 0, sizeof *s);
    char path[PATH_MAX];
    pl_path_in(path, sizeof path, dir, STATE_FILE);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char key[16], a[64];
        unsigned v;
        if (sscanf(line, "%15s %63s", key, a) != 2) continue;
        if (!strcmp(key, "mode")) {
            s->netns = !strcmp(a, "netns");
            s->valid = true;
        } else if (!strcmp(key, "nodes") && pl_parse_uint(a, 1, 65535, &v)) {
            s->nodes = v;
        } else if (!strcmp(key, "port") && pl_parse_uint(a, 1, 65535, &v)) {
            s->port = v;
        } else if (!strcmp(key, "bridge") && strlen(a) < IF_NAMESIZE) {
            strcpy(s->bridge, a);
        } else if (!strcmp(key, "veth") && strlen(a) < IF_NAMESIZE) {
            void *p = realloc(s->veth, (s->nveth + 1) * sizeof *s->veth);
            if (!p) err(1, "realloc");
            s->veth = p;
            strcpy(s->veth[s->nveth++], a);
        } else if (!strcmp(key, "netns") && sscanf(line, "%*s %*s %u", &v) == 1) {
            void *p = realloc(s->ns, (s->nns + 1) * sizeof *s->ns);
            if (!p) err(1, "realloc");
            s->ns = p;
            strcpy(s->ns[s->nns].name, a);
            s->ns[s->nns++].node = v;
        }
    }
    fclose(f);
    return 0;
}

const char *pl_state_ns_of(const struct pl_state *s, unsigned node)
{
    for (size_t i = 0; i < s->nns; i++)
        if (s->ns[i].node == node) return s->ns[i].name;
    return NULL;
}
