/*
 * nodetab.h - transitional: the node table moved to libpsi (include/psi_nodes.h). This
 * header keeps the old names for preload/, which is being changed on another branch; it
 * goes once preload/ says psi_nodetab, psi_node and psi_nodetab_parse/_id itself. Nothing
 * else includes it.
 */
#ifndef PSCLUSTER_LOGGER_NODETAB_H
#define PSCLUSTER_LOGGER_NODETAB_H

#include "psi_nodes.h"

#define lg_nodetab       psi_nodetab
#define lg_node          psi_node
#define lg_nodetab_parse psi_nodetab_parse
#define lg_nodetab_id    psi_nodetab_id

#endif
