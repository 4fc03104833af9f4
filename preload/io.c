/*
 * io.c - the wrapped reads and writes. A descriptor that is not an accelerated connection
 * goes straight to the C library (one table lookup); an accelerated one is served by conn.c
 * from and to RDP. A connection that fell back to TCP is passed to the kernel, its bytes
 * counted. An accepted connection not yet claimed is claimed first (conn_claim).
 * Fortified builds call the __*_chk variants; _FILE_OFFSET_BITS=64 changes none of these but
 * sendfile (sendfile64). sendfile and splice to or from an accelerated connection copy
 * through the library (the kernel would move the bytes on the idle TCP socket).
 */
#include "psp.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/sendfile.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void __chk_fail(void) __attribute__((noreturn)); /* glibc's: "buffer overflow detected" */

static ssize_t tcp_in(int fd, struct msghdr *mh, int flags)
{
    ssize_t r = real.recvmsg(fd, mh, flags);
    if (r > 0 && !(flags & MSG_PEEK)) {
        __atomic_add_fetch(&psp.tcp_rx, (uint64_t)r, __ATOMIC_RELAXED);
        __atomic_add_fetch(&psp.tcp_rx_msgs, 1, __ATOMIC_RELAXED);
    }
    return r;
}

static ssize_t tcp_out(int fd, const struct msghdr *mh, int flags)
{
    ssize_t r = real.sendmsg(fd, mh, flags);
    if (r > 0) {
        __atomic_add_fetch(&psp.tcp_tx, (uint64_t)r, __ATOMIC_RELAXED);
        __atomic_add_fetch(&psp.tcp_tx_msgs, 1, __ATOMIC_RELAXED);
    }
    return r;
}

/* MSG_OOB: urgent data is the kernel's alone. Sending it moves the connection to its
 * kernel socket first (what was written before goes first, no byte lost), and the urgent
 * byte follows on TCP, where the peer's kernel marks it. Asking for it on a connection
 * still on RDP or in memory is the kernel's "no urgent data" (EINVAL); once the peer
 * moved it, the connection is moving or moved too, and the kernel answers. */
static ssize_t rd_conn(int fd, struct conn *c, struct iovec *iov, int n, int flags)
{
    if (cs_unclaimed(c->st)) conn_claim(c);
    conn_settle(c);
    enum conn_state st = c->st;
    if ((flags & MSG_OOB) && st != CS_TCP && st != CS_SWITCH && !cs_tcp_phase(st)) {
        errno = EINVAL;
        return -1;
    }
    if (c->st != CS_TCP && !(flags & MSG_OOB)) {
        ssize_t r =
            conn_read(fd, c, iov, n, flags & (MSG_PEEK | MSG_WAITALL | MSG_DONTWAIT | MSG_TRUNC));
        if (r >= 0 || errno != EXDEV) return r;
    }
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    return tcp_in(fd, &mh, flags);
}

static ssize_t wr_conn(int fd, struct conn *c, const struct iovec *iov, int n, int flags)
{
    if (cs_unclaimed(c->st)) conn_claim(c);
    conn_settle(c);
    if ((flags & MSG_OOB) && c->st != CS_TCP) conn_to_tcp_now(c);
    if (c->st != CS_TCP) {
        ssize_t r = conn_write(fd, c, iov, n, flags & (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE));
        if (r >= 0 || errno != EXDEV) return r;
    }
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    return tcp_out(fd, &mh, flags);
}

/* Cancellation points, as the kernel's calls are; a cancellation acts at the start (get_cp)
 * or in a sleep only (wait.c, "Cancellation"). c is held (fdt_get): a cancellation in a
 * sleep drops it (fdt_release_held). */
static ssize_t rdwr(int fd, struct conn *c, struct iovec *iov, int n, int flags, bool out)
{
    int cancel = psp_cancel_off();
    ssize_t r = out ? wr_conn(fd, c, iov, n, flags) : rd_conn(fd, c, iov, n, flags);
    psp_cancel_on(cancel);
    return r;
}

/* The connection of fd for a call that is a cancellation point: a pending cancellation
 * acts first, while nothing is held */
static struct conn *get_cp(int fd)
{
    struct conn *c = psp_conn_of(fd);
    if (!c) return NULL;
    psp_testcancel();
    return c == fdt_kept ? c : fdt_get(fd); /* (kept: held by this thread already) */
}

/* The end of a wrapper that held c: the reference goes, errno stays */
static ssize_t held_end(struct conn *c, ssize_t r)
{
    if (c != fdt_kept || fdt_nheld) fdt_put(c);
    return r;
}

static ssize_t rd(int fd, struct conn *c, struct iovec *iov, int n, int flags)
{
    return rdwr(fd, c, iov, n, flags, false);
}

static ssize_t wr(int fd, struct conn *c, const struct iovec *iov, int n, int flags)
{
    return rdwr(fd, c, (struct iovec *)iov, n, flags, true); /* (only read from) */
}

ssize_t read(int fd, void *buf, size_t len)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.read(fd, buf, len);
    struct iovec v = {buf, len};
    return held_end(c, rd(fd, c, &v, 1, 0));
}

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
    if (len > buflen) __chk_fail();
    return read(fd, buf, len);
}

ssize_t write(int fd, const void *buf, size_t len)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.write(fd, buf, len);
    struct iovec v = {(void *)buf, len};
    return held_end(c, wr(fd, c, &v, 1, 0));
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.readv(fd, iov, n);
    if (n < 0 || n > IOV_MAX) {
        errno = EINVAL;
        return held_end(c, -1);
    }
    return held_end(c, rd(fd, c, (struct iovec *)iov, n, 0));
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.writev(fd, iov, n);
    if (n < 0 || n > IOV_MAX) {
        errno = EINVAL;
        return held_end(c, -1);
    }
    return held_end(c, wr(fd, c, iov, n, 0));
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.recv(fd, buf, len, flags);
    struct iovec v = {buf, len};
    return held_end(c, rd(fd, c, &v, 1, flags));
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
    if (len > buflen) __chk_fail();
    return recv(fd, buf, len, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.send(fd, buf, len, flags);
    struct iovec v = {(void *)buf, len};
    return held_end(c, wr(fd, c, &v, 1, flags));
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *sa, socklen_t *sl)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.recvfrom(fd, buf, len, flags, sa, sl);
    struct iovec v = {buf, len};
    ssize_t r = held_end(c, rd(fd, c, &v, 1, flags));
    if (r >= 0 && sa && sl) *sl = 0; /* TCP gives no source address */
    return r;
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *sa,
                       socklen_t *sl);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *sa,
                       socklen_t *sl)
{
    if (len > buflen) __chk_fail();
    return recvfrom(fd, buf, len, flags, sa, sl);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *sa,
               socklen_t sl)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.sendto(fd, buf, len, flags, sa, sl);
    struct iovec v = {(void *)buf, len};
    return held_end(c, wr(fd, c, &v, 1, flags)); /* a connected stream ignores the address */
}

ssize_t recvmsg(int fd, struct msghdr *mh, int flags)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.recvmsg(fd, mh, flags);
    if (cs_unclaimed(c->st)) {
        int cancel = psp_cancel_off(); /* the claim asks psid */
        conn_claim(c);
        psp_cancel_on(cancel);
    }
    if (c->st == CS_TCP) return held_end(c, tcp_in(fd, mh, flags));
    if (mh->msg_iovlen > IOV_MAX) {
        errno = EMSGSIZE;
        return held_end(c, -1);
    }
    ssize_t r = held_end(c, rd(fd, c, mh->msg_iov, (int)mh->msg_iovlen, flags));
    if (r >= 0) {
        mh->msg_namelen = 0;
        mh->msg_controllen = 0;
        mh->msg_flags = 0;
    }
    return r;
}

ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
    struct conn *c = get_cp(fd);
    if (!c) return real.sendmsg(fd, mh, flags);
    if (mh->msg_iovlen > IOV_MAX) {
        errno = EMSGSIZE;
        return held_end(c, -1);
    }
    return held_end(c, wr(fd, c, mh->msg_iov, (int)mh->msg_iovlen, flags));
}

int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo);
int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo)
{
    static int (*next)(int, struct mmsghdr *, unsigned, int, struct timespec *);
    struct conn *c = psp_conn_of(fd);
    if (!c) {
        if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "recvmmsg");
        return next(fd, v, n, flags, tmo);
    }
    unsigned i = 0;
    for (; i < n; i++) {
        ssize_t r =
            recvmsg(fd, &v[i].msg_hdr,
                    (flags & ~MSG_WAITFORONE) | (i && (flags & MSG_WAITFORONE) ? MSG_DONTWAIT : 0));
        if (r < 0) break;
        v[i].msg_len = (unsigned)r; /* at the end of the stream every entry gets 0, as the
                                     * kernel fills them */
    }
    return i ? (int)i : -1;
}

int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags);
int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    static int (*next)(int, struct mmsghdr *, unsigned, int);
    struct conn *c = psp_conn_of(fd);
    if (!c) {
        if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "sendmmsg");
        return next(fd, v, n, flags);
    }
    unsigned i = 0;
    for (; i < n; i++) {
        ssize_t r = sendmsg(fd, &v[i].msg_hdr, flags);
        if (r < 0) break;
        v[i].msg_len = (unsigned)r;
    }
    return i ? (int)i : -1;
}

/* sendfile and splice to an accelerated connection: the kernel would put the bytes on the
 * TCP socket, which the peer does not read; they are read here and written as by write. */
static ssize_t copy_to_conn(int out, struct conn *c, int in, off_t *off, size_t count, bool pipe)
{
    char buf[65536];
    size_t done = 0;
    while (done < count) {
        size_t n = count - done < sizeof buf ? count - done : sizeof buf;
        ssize_t r = off && !pipe ? pread(in, buf, n, *off) : real.read(in, buf, n);
        if (r < 0) return done ? (ssize_t)done : -1;
        if (r == 0) break;
        struct iovec v = {buf, (size_t)r};
        ssize_t w = wr(out, c, &v, 1, 0);
        if (w < 0) return done ? (ssize_t)done : -1;
        done += (size_t)w;
        if (off && !pipe) *off += w;
        if (w < r) { /* a nonblocking socket took less: the rest goes back where possible */
            if (!off && !pipe) lseek(in, (off_t)(w - r), SEEK_CUR);
            break;
        }
        if ((size_t)r < n) break;
    }
    return (ssize_t)done;
}

/* The claim of an accepted connection that a call uses first (not a cancellation point:
 * it asks psid) */
static void claim(struct conn *c)
{
    if (!c || !cs_unclaimed(c->st)) return;
    int cancel = psp_cancel_off();
    conn_claim(c);
    psp_cancel_on(cancel);
}

ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
    static ssize_t (*next)(int, int, off_t *, size_t);
    struct conn *c = fdt_get(out);
    claim(c);
    if (!c || c->st == CS_TCP) {
        fdt_put(c);
        if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "sendfile");
        return next(out, in, off, count);
    }
    return held_end(c, copy_to_conn(out, c, in, off, count, false));
}
ssize_t sendfile64(int out, int in, off_t *off, size_t count) __attribute__((alias("sendfile")));

/* from an accelerated connection into a pipe (or file): peek, write, then consume what
 * was written, so that a short write loses nothing */
static ssize_t splice_from(int in, struct conn *ci, int out, loff_t *off_out, size_t len,
                           unsigned flags)
{
    char buf[65536];
    struct iovec v = {buf, len < sizeof buf ? len : sizeof buf};
    ssize_t r = rd(in, ci, &v, 1, MSG_PEEK | ((flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0));
    if (r <= 0) return r;
    ssize_t w = off_out ? pwrite(out, buf, (size_t)r, *off_out) : real.write(out, buf, (size_t)r);
    if (w <= 0) return w;
    if (off_out) *off_out += w;
    struct iovec t = {buf, (size_t)w};
    rd(in, ci, &t, 1, MSG_DONTWAIT);
    return w;
}

ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t len, unsigned flags)
{
    static ssize_t (*next)(int, loff_t *, int, loff_t *, size_t, unsigned);
    struct conn *c = fdt_get(out), *ci = fdt_get(in);
    claim(c);
    claim(ci);
    bool to = c && c->st != CS_TCP, from = ci && ci->st != CS_TCP;
    if (!to && !from) {
        fdt_put(ci);
        fdt_put(c);
        if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "splice");
        return next(in, off_in, out, off_out, len, flags);
    }
    ssize_t r = to ? copy_to_conn(out, c, in, off_in, len, off_in == NULL)
                   : splice_from(in, ci, out, off_out, len, flags);
    fdt_put(ci);
    return held_end(c, r);
}
