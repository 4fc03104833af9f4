/*
 * log.h - psid's log: to stderr (foreground) or syslog, filtered by level.
 */
#ifndef PSCLUSTER_PSID_LOG_H
#define PSCLUSTER_PSID_LOG_H

#include "psconf.h"

void log_open(enum psconf_log_level level, int use_syslog, const char *ident);
void log_set_level(enum psconf_log_level level);
void logmsg(enum psconf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_err(...)    logmsg(PSCONF_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)   logmsg(PSCONF_LOG_WARNING, __VA_ARGS__)
#define log_notice(...) logmsg(PSCONF_LOG_NOTICE, __VA_ARGS__)
#define log_info(...)   logmsg(PSCONF_LOG_INFO, __VA_ARGS__)
#define log_debug(...)  logmsg(PSCONF_LOG_DEBUG, __VA_ARGS__)

#endif
