/*
 * shmchan.h - the channel psid makes for a same-node connection (shmchan.c, psshm.h).
 */
#ifndef PSCLUSTER_PSID_SHMCHAN_H
#define PSCLUSTER_PSID_SHMCHAN_H

#include <stdint.h>

struct shmchan {
    uint32_t ring;
    /* what each end gets, in this order: the memfd (the same descriptor in both), its end
     * of the doorbell */
    int acceptor[2], connector[2];
};

/* A channel with rings of ring bytes (a power of two, PSHM_RING_MIN..PSHM_RING_MAX)
 * between the processes cpid (connector) and apid (acceptor). 0, or -1 and errno. */
int shmchan_make(uint32_t ring, uint32_t cpid, uint32_t apid, struct shmchan *ch);
/* Reset it under both ends (PSHM_RST in both rings, the connector rung): one end has it
 * and the other cannot get it. */
void shmchan_reset(struct shmchan *ch);
/* Close psid's descriptors of it (after passing them). */
void shmchan_close(struct shmchan *ch);

#endif
