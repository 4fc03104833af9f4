/*
 * fdpass.h - descriptors passed over a UNIX socket (SCM_RIGHTS), for tests that hand
 * sockets from a child (a private network namespace's) to the parent or to psid.
 */
#ifndef PSCLUSTER_TEST_FDPASS_H
#define PSCLUSTER_TEST_FDPASS_H

#include <string.h>
#include <sys/socket.h>

#define FDPASS_MAX 3

/* buf sent on s with descriptors fds[0..n) (n at most FDPASS_MAX; 0: a plain send). */
static inline void fdpass_send(int s, const void *buf, size_t len, const int *fds, int n, int flags)
{
    char ctl[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
    struct iovec io = {(void *)buf, len};
    struct msghdr mh = {.msg_iov = &io, .msg_iovlen = 1};
    if (n > 0 && n <= FDPASS_MAX) {
        mh.msg_control = ctl;
        mh.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
    }
    (void)!sendmsg(s, &mh, flags);
}

/* One byte and exactly n descriptors (close-on-exec) from s into fds: 0, or -1 if they did
 * not come. */
static inline int fdpass_recv(int s, int *fds, int n)
{
    char b, ctl[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
    struct iovec io = {&b, 1};
    struct msghdr mh = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    if (n <= 0 || n > FDPASS_MAX || recvmsg(s, &mh, MSG_CMSG_CLOEXEC) != 1) return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    if (!cm || cm->cmsg_len != CMSG_LEN((size_t)n * sizeof(int))) return -1;
    memcpy(fds, CMSG_DATA(cm), (size_t)n * sizeof(int));
    return 0;
}

#endif
