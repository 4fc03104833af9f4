/*
 * psconf.c - check or show a pscluster configuration file.
 *
 *   psconf check FILE          "FILE: ok: N nodes" and exit 0, or the error and exit 1
 *   psconf show FILE [--json]  the effective configuration (defaults filled in), as
 *                              libconfig text that psconf_load() reads back, or as JSON
 *
 * A thin main over libpsconf; the key itself is never printed, only its fingerprint.
 */
#include "psconf.h"
#include "psversion.h"
#include "rdp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: psconf check FILE\n"
    "       psconf show FILE [--json]\n"
    "       psconf --help\n"
    "\n"
    "check  load FILE with every check psid applies; print \"FILE: ok: N nodes\" (exit 0)\n"
    "       or the first error as FILE:LINE: KEY: message (exit 1)\n"
    "show   print the effective configuration, every default filled in, as libconfig\n"
    "       text or (--json) as JSON; the key is shown only as its fingerprint\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

/* A string literal for libconfig (style 0) or JSON (style 1). */
static void put_str(FILE *f, const char *s, int json)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, json ? "\\u%04x" : "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static const char *mac_name(int mac)
{
    return rdp_mac_alg_name((enum rdp_mac_alg)mac);
}

static void show_text(const struct psconf *c, const char *fp)
{
    char group[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &c->hb_group.sin_addr, group, sizeof group);
    printf("# effective configuration of %s\n", c->path);
    printf("cluster = ");
    put_str(stdout, c->cluster, 0);
    printf(";\nkey_file = ");
    put_str(stdout, c->key_file, 0);
    printf("; # key fingerprint %s\n", fp);
    printf("log_level = \"%s\";\n", psconf_log_level_name(c->log_level));
    printf("rdp = {\n"
           "  port = %u;\n  mtu = %u;\n  rto_min_us = %u;\n  rto_max_us = %u;\n"
           "  rto_init_us = %u;\n  max_retrans = %u;\n  ack_delay_us = %u;\n"
           "  sndbuf = %zu;\n  rcvbuf = %zu;\n  sock_buf = %zu;\n  mac = \"%s\";\n"
           "  mac_impl = \"%s\";\n  offload = %s;\n};\n",
           c->rdp_port, c->mtu, c->rto_min_us, c->rto_max_us, c->rto_init_us, c->max_retrans,
           c->ack_delay_us, c->sndbuf, c->rcvbuf, c->sock_buf, mac_name(c->mac),
           rdp_mac_impl_choice_name((enum rdp_mac_impl)c->mac_impl), c->offload ? "true" : "false");
    printf("heartbeat = {\n"
           "  interval_ms = %u;\n  dead_limit = %u;\n  down_grace_ms = %u;\n  mode = \"%s\";\n"
           "  group = \"%s\";\n  port = %u;\n};\n",
           c->hb_interval_ms, c->hb_dead_limit, c->hb_down_grace_ms,
           psconf_hb_mode_name(c->hb_mode), group, c->hb_port);
    printf("psid = {\n  socket = ");
    put_str(stdout, c->socket_fmt, 0);
    printf(";\n  kill_delay_ms = %u;\n  max_clients = %u;\n  max_clients_per_uid = %u;\n"
           "  client_idle_s = %u;\n  max_tasks_per_uid = %u;\n  user = \"%s\";\n"
           "  done_jobs = %u;\n  tree_width = %u;\n  bcast_width = %u;\n  root_jobs = %s;\n"
           "  cgroups = %s;\n};\n",
           c->kill_delay_ms, c->max_clients, c->max_clients_uid, c->client_idle_s, c->max_tasks_uid,
           c->user, c->done_jobs, c->tree_width, c->bcast_width, c->root_jobs ? "true" : "false",
           c->cgroups ? "true" : "false");
    printf("pmi = {\n  tree_width = %u;\n  max_kvs_bytes = %zu;\n  max_kvs_keys = %u;\n};\n",
           c->pmi_tree_width, c->pmi_max_kvs_bytes, c->pmi_max_kvs_keys);
    printf("gang = {\n  quantum_ms = %u;\n  mpl = %u;\n};\n", c->gang_quantum_ms, c->gang_mpl);
    printf("nodes = (\n");
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct psconf_node *n = &c->nodes[i];
        printf("  { id = %u; name = \"%s\"; address = \"%s\"; cpus = %u; }%s\n", (unsigned)n->id,
               n->name, n->addr_str, n->cpus, i + 1 < c->nnodes ? "," : "");
    }
    printf(");\n");
}

static void show_json(const struct psconf *c, const char *fp)
{
    char group[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &c->hb_group.sin_addr, group, sizeof group);
    printf("{\n  \"path\": ");
    put_str(stdout, c->path, 1);
    printf(",\n  \"cluster\": ");
    put_str(stdout, c->cluster, 1);
    printf(",\n  \"key_file\": ");
    put_str(stdout, c->key_file, 1);
    printf(",\n  \"key_fingerprint\": \"%s\",\n", fp);
    printf("  \"log_level\": \"%s\",\n", psconf_log_level_name(c->log_level));
    printf("  \"rdp\": {\"port\": %u, \"mtu\": %u, \"rto_min_us\": %u, \"rto_max_us\": %u, "
           "\"rto_init_us\": %u, \"max_retrans\": %u, \"ack_delay_us\": %u, \"sndbuf\": %zu, "
           "\"rcvbuf\": %zu, \"sock_buf\": %zu, \"mac\": \"%s\", \"mac_impl\": \"%s\", "
           "\"offload\": %s},\n",
           c->rdp_port, c->mtu, c->rto_min_us, c->rto_max_us, c->rto_init_us, c->max_retrans,
           c->ack_delay_us, c->sndbuf, c->rcvbuf, c->sock_buf, mac_name(c->mac),
           rdp_mac_impl_choice_name((enum rdp_mac_impl)c->mac_impl), c->offload ? "true" : "false");
    printf("  \"heartbeat\": {\"interval_ms\": %u, \"dead_limit\": %u, \"down_grace_ms\": %u, "
           "\"mode\": \"%s\", \"group\": \"%s\", \"port\": %u},\n",
           c->hb_interval_ms, c->hb_dead_limit, c->hb_down_grace_ms,
           psconf_hb_mode_name(c->hb_mode), group, c->hb_port);
    printf("  \"psid\": {\"socket\": ");
    put_str(stdout, c->socket_fmt, 1);
    printf(", \"kill_delay_ms\": %u, \"max_clients\": %u, \"max_clients_per_uid\": %u, "
           "\"client_idle_s\": %u, \"max_tasks_per_uid\": %u, \"user\": \"%s\", "
           "\"done_jobs\": %u, \"tree_width\": %u, \"bcast_width\": %u, \"root_jobs\": %s, "
           "\"cgroups\": %s},\n",
           c->kill_delay_ms, c->max_clients, c->max_clients_uid, c->client_idle_s, c->max_tasks_uid,
           c->user, c->done_jobs, c->tree_width, c->bcast_width, c->root_jobs ? "true" : "false",
           c->cgroups ? "true" : "false");
    printf("  \"pmi\": {\"tree_width\": %u, \"max_kvs_bytes\": %zu, \"max_kvs_keys\": %u},\n",
           c->pmi_tree_width, c->pmi_max_kvs_bytes, c->pmi_max_kvs_keys);
    printf("  \"gang\": {\"quantum_ms\": %u, \"mpl\": %u},\n", c->gang_quantum_ms, c->gang_mpl);
    printf("  \"nodes\": [\n");
    for (size_t i = 0; i < c->nnodes; i++) {
        const struct psconf_node *n = &c->nodes[i];
        char sock[256];
        if (psconf_socket_path(c, n->id, sock, sizeof sock) < 0) sock[0] = '\0';
        printf("    {\"id\": %u, \"name\": \"%s\", \"address\": \"%s\", \"cpus\": %u, "
               "\"socket\": ",
               (unsigned)n->id, n->name, n->addr_str, n->cpus);
        put_str(stdout, sock, 1);
        printf("}%s\n", i + 1 < c->nnodes ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char **argv)
{
    if (psc_version_asked(argc, argv, "psconf")) return 0;
    if (argc < 2) return usage(stderr, 2);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return argc == 2 ? usage(stdout, 0) : usage(stderr, 2);

    const char *file = NULL;
    int json = 0, show = 0;
    if (strcmp(cmd, "check") == 0) {
        if (argc != 3 || argv[2][0] == '-') return usage(stderr, 2);
        file = argv[2];
    } else if (strcmp(cmd, "show") == 0) {
        show = 1;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--json") == 0 && !json)
                json = 1;
            else if (strcmp(argv[i], "--help") == 0)
                return usage(stdout, 0);
            else if (argv[i][0] != '-' && !file)
                file = argv[i];
            else
                return usage(stderr, 2);
        }
        if (!file) return usage(stderr, 2);
    } else {
        fprintf(stderr, "psconf: unknown command '%s'\n", cmd);
        return usage(stderr, 2);
    }

    struct psconf c;
    char err[1024];
    if (psconf_load(file, &c, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (!show) {
        printf("%s: ok: %zu nodes\n", file, c.nnodes);
    } else {
        char fp[PSCONF_FINGERPRINT_LEN];
        psconf_key_fingerprint(&c, fp);
        if (json)
            show_json(&c, fp);
        else
            show_text(&c, fp);
    }
    psconf_free(&c);
    return fflush(stdout) == 0 ? 0 : 1;
}
