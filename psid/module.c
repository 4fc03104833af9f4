/*
 * module.c - the one list of psid's modules and the dispatch through it (module.h). The
 * order of the list is the order in which modules hear of a client gone, a node lost and
 * the end: jobs before tasks (a job's client is gone before its tasks are told), the
 * PMI server after both, the preload last.
 */
#include "module.h"
#include "daemon.h"
#include "log.h"
#include "psmsg.h"

#include <string.h>

static const struct psid_module *const all[] = {&jobs_module,   &tasks_module,     &signals_module,
                                                &notify_module, &pmi_module,       &preload_module,
                                                &gang_module,   &spawntree_module, &bcast_module};
#define NALL (sizeof all / sizeof all[0])

static int put(const struct psid_module **tab, uint16_t base, const uint16_t *types,
               const struct psid_module *m)
{
    for (const uint16_t *t = types; t && *t; t++) {
        uint16_t i = (uint16_t)(*t - base);
        if (*t < base || i >= MODULE_TYPES || tab[i]) {
            log_err("module %s: type %u out of range or taken by %s", m->name, *t,
                    i < MODULE_TYPES && *t >= base && tab[i] ? tab[i]->name : "-");
            return -1;
        }
        tab[i] = m;
    }
    return 0;
}

int modules_start(struct psid *d)
{
    memset(&d->modtab, 0, sizeof d->modtab);
    for (size_t i = 0; i < NALL; i++)
        if (put(d->modtab.req, 0, all[i]->requests, all[i]) < 0 ||
            put(d->modtab.msg, 0x1000, all[i]->messages, all[i]) < 0)
            return -1;
    return 0;
}

const struct psid_module *modules_request(const struct psid *d, uint16_t t)
{
    return t < MODULE_TYPES ? d->modtab.req[t] : NULL;
}

bool modules_message(struct psid *d, uint32_t from, const struct psmsg *m)
{
    uint16_t i = (uint16_t)(m->type - 0x1000);
    const struct psid_module *mod = m->type >= 0x1000 && i < MODULE_TYPES ? d->modtab.msg[i] : NULL;
    if (!mod) return false;
    mod->message(d, from, m);
    return true;
}

void modules_client_gone(struct psid *d, struct client *c)
{
    for (size_t i = 0; i < NALL; i++)
        if (all[i]->client_gone) all[i]->client_gone(d, c);
}

bool modules_client_busy(struct psid *d, const struct client *c)
{
    for (size_t i = 0; i < NALL; i++)
        if (all[i]->client_busy && all[i]->client_busy(d, c)) return true;
    return false;
}

void modules_client_room(struct psid *d, struct client *c)
{
    for (size_t i = 0; i < NALL; i++)
        if (all[i]->client_room) all[i]->client_room(d, c);
}

void modules_node_lost(struct psid *d, uint32_t node)
{
    for (size_t i = 0; i < NALL; i++)
        if (all[i]->node_lost) all[i]->node_lost(d, node);
}

void modules_stop(struct psid *d)
{
    for (size_t i = 0; i < NALL; i++)
        if (all[i]->stop) all[i]->stop(d);
}
