/*
 * log.c - psid's log (see log.h). The one piece of process-wide state in psid: a daemon has
 * one log, and threading it through every call would only add noise.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

static struct {
    enum psconf_log_level level;
    int syslog;
    const char *ident;
} lg = {PSCONF_LOG_NOTICE, 0, "psid"};

void log_open(enum psconf_log_level level, int use_syslog, const char *ident)
{
    lg.level = level;
    lg.syslog = use_syslog;
    lg.ident = ident;
    if (use_syslog) openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum psconf_log_level level)
{
    lg.level = level;
}

void logmsg(enum psconf_log_level level, const char *fmt, ...)
{
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG};
    if (level > lg.level) return;
    va_list ap;
    va_start(ap, fmt);
    if (lg.syslog) {
        vsyslog(prio[level], fmt, ap);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        localtime_r(&ts.tv_sec, &tm);
        fprintf(stderr, "%02d:%02d:%02d.%03ld %s[%s]: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
                ts.tv_nsec / 1000000, lg.ident, psconf_log_level_name(level));
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
