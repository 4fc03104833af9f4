/*
 * lines.h - line assembly for one output stream of one rank.
 *
 * Output arrives in chunks cut anywhere; the job's stdout and stderr must show each rank's
 * lines whole (another rank's line never lands inside one). lg_lines keeps the unfinished
 * tail of a stream and hands complete lines on, each prefixed with a label (psrun --label:
 * "RANK: ") if one is given. Bytes are bytes: NULs and invalid UTF-8 pass unchanged.
 *
 * A line longer than `max` cannot wait for its end (the rank's output window would fill
 * and the task would block forever): once the tail reaches max bytes it is handed on
 * unfinished, and its continuation gets no label. At end of stream the tail is handed on as
 * it is; with a label a newline is added so the next label starts a line of its own.
 */
#ifndef PSCLUSTER_LOGGER_LINES_H
#define PSCLUSTER_LOGGER_LINES_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct lg_lines {
    struct lg_bytes tail; /* the unfinished line */
    size_t max;           /* hand on a tail this long */
    bool midline;         /* the last piece handed on did not end its line */
};

void lg_lines_init(struct lg_lines *l, size_t max);
void lg_lines_free(struct lg_lines *l);
/* Feed n bytes; append what is ready (labelled) to out. Returns the number of input bytes
 * (earlier ones kept in the tail included, labels and added newlines not) now in out, or
 * -1 (ENOMEM). */
ssize_t lg_lines_feed(struct lg_lines *l, const void *p, size_t n, const char *label,
                      struct lg_bytes *out);
/* End of stream: hand on the tail. Returns input bytes appended to out, or -1. */
ssize_t lg_lines_flush(struct lg_lines *l, const char *label, struct lg_bytes *out);
/* Bytes waiting in the tail. */
size_t lg_lines_pending(const struct lg_lines *l);

#endif
