/*
 * psi.h - the client library: how programs talk to their node's psid.
 *
 * A connection is a UNIX stream socket to psid (PSID_SOCKET, else PSI_DEFAULT_SOCKET);
 * psi_call sends one request (psmsg.h, types in psproto.h) and waits for its reply.
 */
#ifndef PSCLUSTER_PSI_H
#define PSCLUSTER_PSI_H

#include "psmsg.h"
#include "psproto.h"

#include <stddef.h>
#include <stdint.h>

struct psi {
    int fd;
    uint32_t next_id;
    uint8_t *rbuf; /* the last reply */
    size_t rlen, rcap;
    char path[108];
};

/* Connect to psid at path (NULL: $PSID_SOCKET, else PSI_DEFAULT_SOCKET). 0, or -1 and errno. */
int psi_open(struct psi *c, const char *path);
void psi_close(struct psi *c);
/* Send the request built in req (psmsg_begin with any id: psi_call sets it) and read its
 * reply into *reply (valid until the next call). A PSM_ERROR reply returns -1 with errno
 * from PSF_ERRNO; EPROTO for a malformed reply; other errno values for I/O errors. */
int psi_call(struct psi *c, struct psmsg_buf *req, struct psmsg *reply);
/* The socket path psi_open(NULL) uses. */
const char *psi_socket_path(void);

#endif
