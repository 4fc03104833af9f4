/*
 * shmchan.c - the channel of a same-node connection (include/psshm.h): a sealed memfd with
 * the two rings, and the doorbell. psid makes it and hands each end its part (preload.c);
 * it keeps nothing.
 *
 * The doorbell is a SOCK_SEQPACKET socketpair, one end to each process: a process rings
 * the other by sending a byte on its own end (MSG_DONTWAIT | MSG_NOSIGNAL: never blocking,
 * never SIGPIPE, whatever the other does with its end; each end is one process's file
 * description alone) and sleeps by polling it; and the end of a process that is gone shows
 * as POLLHUP on the other's at once. The seals (no shrinking, no growing, no more seals)
 * mean that neither process can make the other's access to the mapping fault (SIGBUS).
 */
#include "shmchan.h"
#include "psshm.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

int shmchan_make(uint32_t ring, uint32_t cpid, uint32_t apid, struct shmchan *ch)
{
    if (ring < PSHM_RING_MIN || ring > PSHM_RING_MAX || (ring & (ring - 1))) {
        errno = EINVAL;
        return -1;
    }
    int mfd = memfd_create("pscluster-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING), sp[2] = {-1, -1};
    struct pshm_hdr h = {
        .magic = PSHM_MAGIC, .version = PSHM_VERSION, .ring = ring, .pid = {cpid, apid}};
    if (mfd < 0 || ftruncate(mfd, (off_t)PSHM_SIZE(ring)) < 0 ||
        pwrite(mfd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) < 0) {
        int e = errno ? errno : EIO;
        if (mfd >= 0) close(mfd);
        errno = e;
        return -1;
    }
    ch->ring = ring;
    ch->acceptor[0] = ch->connector[0] = mfd;
    ch->acceptor[1] = sp[0];
    ch->connector[1] = sp[1];
    return 0;
}

void shmchan_reset(struct shmchan *ch)
{
    uint32_t f = PSHM_RST | PSHM_CLOSE;
    for (int i = 0; i < 2; i++)
        (void)!pwrite(ch->acceptor[0], &f, sizeof f,
                      (off_t)(offsetof(struct pshm_hdr, dir) + i * sizeof(struct pshm_ring) +
                              offsetof(struct pshm_ring, pflags)));
    char x = 1;
    (void)!send(ch->acceptor[1], &x, 1, MSG_DONTWAIT | MSG_NOSIGNAL); /* to the connector */
}

void shmchan_close(struct shmchan *ch)
{
    close(ch->acceptor[0]);
    close(ch->acceptor[1]);
    close(ch->connector[1]);
    memset(ch, 0xff, sizeof *ch);
}
