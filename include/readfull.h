/*
 * readfull.h - read(2) until a buffer is full or the end of the stream: the one copy of that
 * loop (the key files of libpsconf and rdpbench, rdpbench's TCP baseline), header-only like
 * bebytes.h.
 */
#ifndef PSCLUSTER_READFULL_H
#define PSCLUSTER_READFULL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* Read up to n bytes into buf, as many reads as it takes (EINTR retried): the bytes read,
 * fewer than n only at the end of the stream; -1 and errno on an error (EAGAIN on a
 * non-blocking or timed-out descriptor), with whatever was read before it lost. */
static inline ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = read(fd, (uint8_t *)buf + off, n - off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        off += (size_t)r;
    }
    return (ssize_t)off;
}

#endif
