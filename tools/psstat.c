/*
 * psstat.c - the cluster as one daemon sees it: `psstat nodes` (id, name, address, state,
 * load, tasks, CPUs), as a table or as JSON.
 *
 * usage: psstat [--json] nodes
 */
#include "psi.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: psstat [--json] nodes\n"
    "\n"
    "  nodes         every configured node: id, name, address, "
    "state, load, tasks, CPUs\n"
    "  -j, --json    JSON instead of a table\n"
    "  -h, --help    this text\n"
    "The daemon asked is the one at $PSID_SOCKET (default " PSI_DEFAULT_SOCKET ").\n";

static int usage(FILE *f, int rc)
{
    fputs(usage_text, f);
    return rc;
}

static const char *state_name(uint32_t s)
{
    return s == PSNODE_UP ? "up" : "down";
}

static int nodes(struct psi *c, int json)
{
    struct psmsg_buf req = {0};
    struct psmsg rep;
    psmsg_begin(&req, PSM_NODES, 0);
    int r = psi_call(c, &req, &rep);
    psmsg_buf_free(&req);
    if (r < 0) {
        fprintf(stderr, "psstat: nodes: %s\n", strerror(errno));
        return 1;
    }
    uint32_t self = 0;
    psmsg_get_u32(&rep.body, PSF_SELF, &self);
    if (json)
        printf("{\"self\":%u,\"nodes\":[", self);
    else
        printf("%-5s %-16s %-16s %-5s %6s %6s %5s\n", "ID", "NAME", "ADDRESS", "STATE", "LOAD",
               "TASKS", "CPUS");
    size_t pos = 0;
    struct psmsg_field f;
    int first = 1;
    while (psmsg_next(&rep.body, &pos, &f)) {
        if (f.tag != PSF_NODE) continue;
        struct psmsg_view v = psmsg_record(&f);
        uint32_t id = 0, state = 0, load = 0, tasks = 0, cpus = 0, age = 0;
        char name[64] = "?", addr[64] = "?";
        psmsg_get_u32(&v, PSF_NODE_ID, &id);
        psmsg_get_str(&v, PSF_NAME, name, sizeof name);
        psmsg_get_str(&v, PSF_ADDR, addr, sizeof addr);
        psmsg_get_u32(&v, PSF_STATE, &state);
        psmsg_get_u32(&v, PSF_LOAD, &load);
        psmsg_get_u32(&v, PSF_TASKS, &tasks);
        psmsg_get_u32(&v, PSF_CPUS, &cpus);
        int has_age = psmsg_get_u32(&v, PSF_AGE_MS, &age) == 0;
        if (json) {
            printf("%s{\"id\":%u,\"name\":\"%s\",\"address\":\"%s\",\"state\":\"%s\","
                   "\"load\":%.2f,\"tasks\":%u,\"cpus\":%u",
                   first ? "" : ",", id, name, addr, state_name(state), load / 1000.0, tasks, cpus);
            if (has_age) printf(",\"heard_ms_ago\":%u", age);
            printf("}");
        } else {
            printf("%-5u %-16s %-16s %-5s %6.2f %6u %5u\n", id, name, addr, state_name(state),
                   load / 1000.0, tasks, cpus);
        }
        first = 0;
    }
    if (json) printf("]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, o;
    while ((o = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        if (o == 'j')
            json = 1;
        else if (o == 'h')
            return usage(stdout, 0);
        else
            return usage(stderr, 2);
    }
    if (optind != argc - 1 || strcmp(argv[optind], "nodes") != 0) return usage(stderr, 2);
    struct psi c;
    if (psi_open(&c, NULL) < 0) {
        fprintf(stderr, "psstat: cannot reach psid at %s: %s\n", psi_socket_path(),
                strerror(errno));
        return 1;
    }
    int rc = nodes(&c, json);
    psi_close(&c);
    return rc;
}
