/*
 * wait.c - a program thread blocked on an accelerated connection (a read with nothing to
 * read, a write without credit) sleeps in a real system call on an eventfd of its own, so
 * that signals behave as on a socket: a handler with SA_RESTART resumes the wait inside the
 * kernel, one without it ends the wait with EINTR, and a timeout (SO_RCVTIMEO, SO_SNDTIMEO)
 * makes the wait a poll, which a signal always ends with EINTR, as the kernel does for a
 * socket with a timeout. Wakers (the progress thread, or another program thread) write to
 * the eventfd of every thread waiting on the connection that changed.
 */
#include "psp.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

static __thread int my_efd = -1;
static __thread pid_t my_pid;

int wait_fd(void)
{
    if (my_efd >= 0 && my_pid == psp.pid) return my_efd;
    my_efd = psp_hide(eventfd(0, EFD_CLOEXEC)); /* a fork's child makes its own */
    my_pid = psp.pid;
    return my_efd;
}

void waiters_add(struct conn **cs, int n, struct waiter *w, int fd)
{
    for (int i = 0; i < n; i++) {
        w[i].efd = fd;
        w[i].next = cs[i]->waiters;
        cs[i]->waiters = &w[i];
    }
}

void waiters_del(struct conn **cs, int n, struct waiter *w)
{
    for (int i = 0; i < n; i++)
        for (struct waiter **p = &cs[i]->waiters; *p; p = &(*p)->next)
            if (*p == &w[i]) {
                *p = w[i].next;
                break;
            }
}

void wake_conn(struct conn *c)
{
    for (struct waiter *w = c->waiters; w; w = w->next)
        (void)!real.write(w->efd, &(uint64_t){1}, 8);
}

int wait_conns(struct conn **cs, int n, int timeout_ms)
{
    int fd = wait_fd();
    if (fd < 0) return -1;
    struct waiter w[n > 0 ? n : 1];
    waiters_add(cs, n, w, fd);
    pthread_mutex_unlock(&psp.lock);
    int r = 0;
    uint64_t x;
    if (timeout_ms < 0) {
        if (real.read(fd, &x, 8) < 0) r = -1; /* EINTR only without SA_RESTART */
    } else {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int p = real.poll(&pf, 1, timeout_ms);
        if (p < 0) {
            r = -1;
        } else if (p == 0) {
            r = -1;
            errno = EAGAIN;
        } else {
            (void)!real.read(fd, &x, 8);
        }
    }
    int e = errno;
    pthread_mutex_lock(&psp.lock);
    waiters_del(cs, n, w);
    errno = e;
    return r;
}
