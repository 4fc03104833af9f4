/*
 * module.h - what each of psid's modules handles, said once (module.c): the request types
 * of local clients and the message types of other daemons it takes, and what it must hear
 * when a client goes, a client has room again, a node is lost, and at the end. client.c,
 * send.c, membership.c and main.c call through the table that modules_start builds in
 * struct psid; no module names another to dispatch to it, so psid's files form no circle
 * of imports. A type belongs to one module; modules_start refuses a second claim of it.
 */
#ifndef PSCLUSTER_PSID_MODULE_H
#define PSCLUSTER_PSID_MODULE_H

#include <stdbool.h>
#include <stdint.h>

struct psid;
struct client;
struct psmsg;

struct psid_module {
    const char *name;
    const uint16_t *requests; /* client request types it handles, 0-terminated (or NULL) */
    void (*request)(struct psid *d, struct client *c, const struct psmsg *m);
    const uint16_t *messages; /* daemon message types, 0-terminated (or NULL) */
    void (*message)(struct psid *d, uint32_t from, const struct psmsg *m);
    void (*client_gone)(struct psid *d, struct client *c);       /* may be NULL, as each below */
    bool (*client_busy)(struct psid *d, const struct client *c); /* holds state for it */
    void (*client_room)(struct psid *d, struct client *c);       /* room for descriptors again */
    void (*node_lost)(struct psid *d, uint32_t node);
    void (*stop)(struct psid *d); /* psid ends: free what it holds */
};

/* The dispatch tables (in struct psid): client request types are below 0x100, daemon
 * message types 0x1000 + below 0x100 (psproto.h). */
#define MODULE_TYPES 256u
struct modtab {
    const struct psid_module *req[MODULE_TYPES], *msg[MODULE_TYPES];
};

/* Build d's tables from the module list. 0, or -1 if two modules claim one type (a bug: it
 * is logged). */
int modules_start(struct psid *d);
/* The module of request type t, or NULL. */
const struct psid_module *modules_request(const struct psid *d, uint16_t t);
/* Hand a daemon message to its module; false if no module takes its type. */
bool modules_message(struct psid *d, uint32_t from, const struct psmsg *m);
void modules_client_gone(struct psid *d, struct client *c);
bool modules_client_busy(struct psid *d, const struct client *c);
void modules_client_room(struct psid *d, struct client *c);
void modules_node_lost(struct psid *d, uint32_t node);
void modules_stop(struct psid *d);

/* The modules (each defined in its own file). */
extern const struct psid_module jobs_module, tasks_module, signals_module, notify_module,
    preload_module, pmi_module, gang_module, spawntree_module, bcast_module;

#endif
