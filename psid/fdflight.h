/*
 * fdflight.h - descriptors psid has passed to its local clients that they have not taken yet
 * (fdflight.c). The kernel counts every descriptor in flight on a UNIX socket against the
 * user that sent it, and refuses further passing (ETOOMANYREFS) once that count passes the
 * sender's RLIMIT_NOFILE: so without a bound, one user whose processes never read would
 * stop psid passing descriptors to everyone (docs/security.md, "Descriptors in flight").
 * A client's descriptors count from the moment they are queued for it until its socket has
 * nothing unread (SIOCOUTQ 0), or its peer closed it; bounded per client, per uid and in
 * all (root is bounded per client only: it is trusted with the rest).
 */
#ifndef PSCLUSTER_PSID_FDFLIGHT_H
#define PSCLUSTER_PSID_FDFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

struct fdflight;

/* The limits follow psid's RLIMIT_NOFILE: a quarter of it in all (the psids of a virtual
 * cluster share one user), an eighth of that per uid, at most FDFLIGHT_CLIENT per client. */
#define FDFLIGHT_CLIENT 256u
struct fdflight *fdflight_new(void);
/* Closes the sockets it still holds. */
void fdflight_free(struct fdflight *f);

/* Whether n more descriptors may go to a client of uid that has `has` in flight already. */
bool fdflight_room(const struct fdflight *f, uint32_t uid, unsigned has, unsigned n);
void fdflight_add(struct fdflight *f, uint32_t uid, unsigned n);
void fdflight_sub(struct fdflight *f, uint32_t uid, unsigned n);
/* Whether the peer of UNIX stream socket fd has not yet read all that was written to it. */
bool fdflight_unread(int fd);
/* A gone client's socket with n descriptors unread: held (and counted) until they are read
 * or its peer closes; fd is the table's now. */
void fdflight_linger(struct fdflight *f, int fd, uint32_t uid, unsigned n);
/* Closes the held sockets that have nothing unread now. Whether some are still held. */
bool fdflight_poll(struct fdflight *f);
/* For psstat and the log: descriptors in flight in all, and the limits. */
void fdflight_totals(const struct fdflight *f, unsigned *all, unsigned *limit_all,
                     unsigned *limit_uid);

#endif
