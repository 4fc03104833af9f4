/*
 * config.c - what `up` writes into DIR (see pslocal.h): the cluster key, psid.conf for the
 * mode and size asked for, and the ports it names (loopback clusters probe for a free pair).
 */
#include "pslocal.h"

#include <arpa/inet.h>
#include <err.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

static bool udp_port_free(const char *addr, unsigned port)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &a.sin_addr);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static bool ports_free(unsigned n, unsigned port)
{
    for (unsigned i = 0; i < n; i++) {
        char a[32];
        snprintf(a, sizeof a, "127.0.0.%u", i + 1);
        if (!udp_port_free(a, port) || !udp_port_free(a, port + 1)) return false;
    }
    return true;
}

/* The RDP port (heartbeats use port + 1). */
unsigned pl_choose_port(const struct pl_up *u)
{
    if (u->o->netns) return u->o->have_port ? u->o->port : NETNS_PORT;
    if (u->o->have_port) {
        if (!ports_free(u->n, u->o->port))
            errx(1, "UDP port %u or %u is in use on 127.0.0.1..127.0.0.%u; choose another --port",
                 u->o->port, u->o->port + 1, u->n);
        return u->o->port;
    }
    /* a random even start: clusters made at the same moment (tests running side by side)
     * probe different pairs (a start from the pid gave neighbours' overlapping pairs) */
    unsigned r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r) r = (unsigned)getpid() * 2654435761u;
    unsigned start = (r % (PROBE_SPAN / 2)) * 2;
    for (unsigned k = 0; k < PROBE_SPAN; k += 2) {
        unsigned p = PROBE_BASE + (start + k) % PROBE_SPAN;
        if (p + 1 >= PROBE_BASE + PROBE_SPAN) continue;
        if (ports_free(u->n, p)) return p;
    }
    errx(1, "no free pair of UDP ports in %u..%u", PROBE_BASE, PROBE_BASE + PROBE_SPAN);
}

/* A string literal for libconfig. */
static void put_cfg_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void pl_write_config(struct pl_up *u)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) err(1, "open_memstream");
    fprintf(f,
            "# psid.conf - written by 'pslocal up' for a virtual cluster of %u node%s\n"
            "# (%s mode); 'pslocal down' stops it. See conf/psid.conf for every key.\n",
            u->n, u->n == 1 ? "" : "s", u->o->netns ? "namespace" : "loopback");
    fprintf(f, "cluster = \"pslocal\";\nkey_file = \"" KEY_FILE "\";\n");
    fprintf(f, "log_level = \"%s\";\n", u->o->log_level ? u->o->log_level : "notice");
    /* loopback carries 64 KiB datagrams; the veths have the usual 1500 */
    fprintf(f, "rdp = {\n  port = %u;\n  mtu = %u;\n};\n", u->port,
            u->o->netns ? (u->o->mtu ? u->o->mtu : 1500) : 65536);
    /* a virtual cluster's killed daemon is seen down 2 s after it is unreachable, not after
     * the 10 s a real cluster waits for a stopped or cut-off node */
    fprintf(f, "heartbeat = {\n  mode = \"%s\";\n  port = %u;\n  down_grace_ms = 2000;\n};\n",
            u->o->membership ? u->o->membership
            : u->o->netns    ? "multicast"
                             : "unicast",
            u->port + 1);
    /* '%' in DIR must not become a socket_fmt escape */
    char sock[PATH_MAX * 2];
    size_t k = 0;
    for (const char *s = u->dir; *s && k < sizeof sock - 3; s++) {
        if (*s == '%') sock[k++] = '%';
        sock[k++] = *s;
    }
    sock[k] = '\0';
    fprintf(f, "psid = {\n  socket = ");
    char full[PATH_MAX * 2 + 32];
    snprintf(full, sizeof full, "%s/psid-%%n.sock", sock);
    put_cfg_str(f, full);
    if (u->o->tree_width) fprintf(f, ";\n  tree_width = %u", u->o->tree_width);
    fprintf(f, ";\n};\n");
    if (u->o->gang_ms || u->o->mpl)
        fprintf(f, "gang = {\n  quantum_ms = %u;\n  mpl = %u;\n};\n", u->o->gang_ms,
                u->o->mpl ? u->o->mpl : 2);
    fprintf(f, "nodes = (\n");
    for (unsigned i = 0; i < u->n; i++)
        fprintf(f, "  { id = %u; name = \"n%u\"; address = \"%s.%u\"; cpus = %u; }%s\n", i, i,
                u->o->netns ? NS_NET : "127.0.0", i + 1, u->o->cpus, i + 1 < u->n ? "," : "");
    fprintf(f, ");\n");
    if (fclose(f) != 0) err(1, "open_memstream");
    pl_write_file(u->conf_path, text, len, 0644);
    free(text);
}

void pl_write_key(const struct pl_up *u)
{
    unsigned char key[32];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) err(1, "getrandom");
    char path[PATH_MAX];
    pl_path_in(path, sizeof path, u->dir, KEY_FILE);
    pl_write_file(path, key, sizeof key, 0600);
    explicit_bzero(key, sizeof key);
}
