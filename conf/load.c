/*
 * load.c - psconf_load(): the steps of reading a configuration, in order.
 *
 *   1. defaults for every key;
 *   2. libconfig parses the file (syntax errors carry libconfig's file and line);
 *   3. the schema walk: names, types, ranges, strings (schema.c, nodes.c), in file order;
 *   4. integer literals libconfig truncated that no setting claimed (intscan.c);
 *   5. duplicate node ids, names, addresses; the table is sorted by id (nodes.c);
 *   6. rules across keys; ports filled into addresses (validate.c);
 *   7. the key file (keyfile.c) - last, so that a broken file is reported before a missing
 *      key.
 * The first error stops the load; the caller gets nothing to free.
 */
#include "internal.h"
#include "rdp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void psconf_defaults(struct psconf *c)
{
    memset(c, 0, sizeof *c);
    strcpy(c->cluster, "pscluster");
    c->log_level = PSCONF_LOG_NOTICE;
    c->rdp_port = 4886;
    struct rdp_config r; /* RDP's tunables default to what librdp says */
    rdp_config_defaults(&r);
    c->mtu = r.mtu;
    c->rto_min_us = r.rto_min_us;
    c->rto_max_us = r.rto_max_us;
    c->rto_init_us = r.rto_init_us;
    c->max_retrans = r.max_retrans;
    c->ack_delay_us = r.ack_delay_us;
    c->sndbuf = r.sndbuf;
    c->rcvbuf = r.rcvbuf;
    c->sock_buf = r.sock_buf;
    c->mac = r.mac;
    c->mac_impl = r.mac_impl;
    c->offload = (unsigned)r.offload;
    c->hb_interval_ms = 100;
    c->hb_dead_limit = 8;
    c->hb_down_grace_ms = 10000;
    c->hb_mode = PSCONF_HB_MULTICAST;
    c->hb_port = 4887;
    c->hb_group.sin_family = AF_INET;
    c->hb_group.sin_port = htons(4887);
    inet_pton(AF_INET, "239.255.88.6", &c->hb_group.sin_addr);
    strcpy(c->socket_fmt, "/run/pscluster/psid.sock");
    c->kill_delay_ms = 10000;
    c->max_clients = 4096;
    c->max_clients_uid = 256;
    c->max_tasks_uid = 1024;
    c->done_jobs = 100;
    c->tree_width = 32;
    c->bcast_width = 4;
    strcpy(c->user, "pscluster");
    c->root_jobs = 1;
    c->cgroups = 1;
    c->client_idle_s = 300;
    c->pmi_tree_width = 16;
    c->pmi_max_kvs_bytes = 64u << 20;
    c->pmi_max_kvs_keys = 1u << 20;
    c->gang_quantum_ms = 0;
    c->gang_mpl = 2;
}

void psconf_free(struct psconf *c)
{
    if (!c) return;
    free(c->nodes);
    sodium_memzero(c, sizeof *c);
}

/* The directory part of path: "." when there is none. */
static void dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* Can the file be read at all? libconfig only says "file I/O error". */
static int check_readable(struct conf_ctx *x)
{
    char eb[128];
    FILE *f = fopen(x->path, "re");
    if (!f) return conf_error(x, NULL, 0, NULL, "%s", strerror_r(errno, eb, sizeof eb));
    struct stat st;
    int rc = 0;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode))
        rc = conf_error(x, NULL, 0, NULL, "is a directory");
    fclose(f);
    return rc;
}

static int parse(struct conf_ctx *x, struct psconf *out)
{
    config_t cfg;
    config_init(&cfg);
    config_set_include_dir(&cfg, x->dir);
    int rc = -1;
    if (!config_read_file(&cfg, x->path)) {
        const char *file = config_error_file(&cfg);
        int line = config_error_line(&cfg);
        conf_error(x, file ? file : x->path, line > 0 ? (unsigned)line : 0, NULL, "%s",
                   config_error_text(&cfg));
    } else if (conf_walk_root(x, out, config_root_setting(&cfg)) == 0 &&
               conf_intscan_leftover(x) == 0 && conf_nodes_check(x, out) == 0 &&
               conf_validate(x, out) == 0 && conf_key_load(x, out) == 0) {
        rc = 0;
    }
    /* every message is formatted by now: libconfig's strings may go */
    config_destroy(&cfg);
    return rc;
}

int psconf_load(const char *path, struct psconf *out, char *err, size_t errlen)
{
    struct conf_ctx x;
    memset(&x, 0, sizeof x);
    x.path = path ? path : "";
    x.err = err;
    x.errlen = errlen;
    if (err && errlen) err[0] = '\0';
    psconf_defaults(out);

    int rc = -1;
    if (!path || !*path)
        conf_error(&x, "psconf", 0, NULL, "no configuration file given");
    else if (strlen(path) >= sizeof out->path)
        conf_error(&x, NULL, 0, NULL, "path too long");
    else {
        strcpy(out->path, path);
        dir_of(path, x.dir, sizeof x.dir);
        if (check_readable(&x) == 0 && parse(&x, out) == 0) rc = 0;
    }
    conf_intscan_free(&x.ints);
    free(x.node_where);
    if (rc < 0) psconf_free(out);
    return rc;
}
