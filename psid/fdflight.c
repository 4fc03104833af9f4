/*
 * fdflight.c - the count of descriptors psid's clients have not taken yet (see fdflight.h):
 * per uid in a small array (the uids with descriptors in flight now), in all, and the
 * sockets of gone clients that still hold some. SIOCOUTQ on a UNIX stream socket says how
 * much of what was written its peer has not read; the descriptors ride on the bytes, so 0
 * means every descriptor sent on it was taken (or dropped with the peer's socket).
 */
#include "fdflight.h"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <linux/sockios.h>

struct fl_uid {
    uint32_t uid;
    unsigned n;
};

struct fl_linger {
    int fd;
    uint32_t uid;
    unsigned n;
};

struct fdflight {
    unsigned all, limit_all, limit_uid; /* (root's not in all) */
    struct fl_uid *uids;
    size_t nuids, capuids;
    struct fl_linger *lingers;
    size_t nlingers, caplingers;
};

struct fdflight *fdflight_new(void)
{
    struct fdflight *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    struct rlimit rl = {1024, 1024};
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t cur =
        rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 24) ? (1u << 24) : rl.rlim_cur;
    f->limit_all = cur / 4 < 64 ? 64 : (unsigned)(cur / 4);
    f->limit_uid = f->limit_all / 8 < 16 ? 16 : f->limit_all / 8;
    return f;
}

void fdflight_free(struct fdflight *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->nlingers; i++) close(f->lingers[i].fd);
    free(f->lingers);
    free(f->uids);
    free(f);
}

static struct fl_uid *slot(const struct fdflight *f, uint32_t uid)
{
    for (size_t i = 0; i < f->nuids; i++)
        if (f->uids[i].uid == uid) return &f->uids[i];
    return NULL;
}

bool fdflight_room(const struct fdflight *f, uint32_t uid, unsigned has, unsigned n)
{
    unsigned client = FDFLIGHT_CLIENT < f->limit_uid ? FDFLIGHT_CLIENT : f->limit_uid;
    if (has + n > client) return false;
    if (uid == 0) return true;
    const struct fl_uid *u = slot(f, uid);
    return (u ? u->n : 0) + n <= f->limit_uid && f->all + n <= f->limit_all;
}

void fdflight_add(struct fdflight *f, uint32_t uid, unsigned n)
{
    if (!n || uid == 0) return;
    struct fl_uid *u = slot(f, uid);
    if (!u) {
        if (f->nuids == f->capuids) {
            size_t cap = f->capuids ? f->capuids * 2 : 16;
            struct fl_uid *v = realloc(f->uids, cap * sizeof *v);
            if (!v) { /* counted in all only: the uid's share is not kept, the total is */
                f->all += n;
                return;
            }
            f->uids = v;
            f->capuids = cap;
        }
        u = &f->uids[f->nuids++];
        *u = (struct fl_uid){.uid = uid};
    }
    u->n += n;
    f->all += n;
}

void fdflight_sub(struct fdflight *f, uint32_t uid, unsigned n)
{
    if (!n || uid == 0) return;
    f->all -= n <= f->all ? n : f->all;
    struct fl_uid *u = slot(f, uid);
    if (!u) return;
    u->n -= n <= u->n ? n : u->n;
    if (!u->n) *u = f->uids[--f->nuids];
}

bool fdflight_unread(int fd)
{
    int q = 0;
    return ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0;
}

void fdflight_linger(struct fdflight *f, int fd, uint32_t uid, unsigned n)
{
    if (f->nlingers == f->caplingers) {
        size_t cap = f->caplingers ? f->caplingers * 2 : 16;
        struct fl_linger *v = realloc(f->lingers, cap * sizeof *v);
        if (!v) { /* no room to watch it: closed now, and its count with it (the kernel's
                   * stays until its peer reads or closes) */
            close(fd);
            fdflight_sub(f, uid, n);
            return;
        }
        f->lingers = v;
        f->caplingers = cap;
    }
    f->lingers[f->nlingers++] = (struct fl_linger){.fd = fd, .uid = uid, .n = n};
}

bool fdflight_poll(struct fdflight *f)
{
    for (size_t i = 0; i < f->nlingers;) {
        struct fl_linger *l = &f->lingers[i];
        if (fdflight_unread(l->fd)) {
            i++;
            continue;
        }
        close(l->fd);
        fdflight_sub(f, l->uid, l->n);
        *l = f->lingers[--f->nlingers];
    }
    return f->nlingers > 0;
}

void fdflight_totals(const struct fdflight *f, unsigned *all, unsigned *limit_all,
                     unsigned *limit_uid)
{
    *all = f->all;
    *limit_all = f->limit_all;
    *limit_uid = f->limit_uid;
}
