/*
 * names.c - the names of the configuration's enumerations, both ways.
 */
#include "internal.h"

#include <string.h>

static const char *const level_names[] = {
    [PSCONF_LOG_ERROR] = "error", [PSCONF_LOG_WARNING] = "warning", [PSCONF_LOG_NOTICE] = "notice",
    [PSCONF_LOG_INFO] = "info",   [PSCONF_LOG_DEBUG] = "debug",
};

const char *psconf_log_level_name(enum psconf_log_level l)
{
    if ((unsigned)l >= sizeof level_names / sizeof level_names[0]) return "unknown";
    return level_names[l];
}

int psconf_log_level_parse(const char *name, enum psconf_log_level *l)
{
    for (unsigned i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *l = (enum psconf_log_level)i;
            return 0;
        }
    }
    return -1;
}

const char *psconf_hb_mode_name(enum psconf_hb_mode m)
{
    switch (m) {
    case PSCONF_HB_MULTICAST:
        return "multicast";
    case PSCONF_HB_UNICAST:
        return "unicast";
    case PSCONF_HB_SWIM:
        return "swim";
    }
    return "unknown";
}
