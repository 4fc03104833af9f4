/*
 * env.c - `pslocal env` (see pslocal.h): shell exports pointing the tools at node 0.
 */
#include "pslocal.h"

#include <err.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A word for the shell: as it is if harmless, else in single quotes. */
static void put_shell_word(const char *s)
{
    if (*s &&
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+:,@%=") ==
            strlen(s)) {
        fputs(s, stdout);
        return;
    }
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

int pl_cmd_env(const struct pl_opts *o)
{
    char dir[PATH_MAX], sock[PATH_MAX];
    pl_cluster_dir(o->dir, dir);
    struct psconf c;
    pl_load_conf(dir, &c);
    if (psconf_socket_path(&c, c.nodes[0].id, sock, sizeof sock) < 0)
        err(1, "socket path of node %u", c.nodes[0].id);
    psconf_free(&c);
    fputs("export PSID_SOCKET=", stdout);
    put_shell_word(sock);
    fputs("\nexport PSLOCAL_DIR=", stdout);
    put_shell_word(dir);
    putchar('\n');
    return fflush(stdout) == 0 ? 0 : 1;
}
