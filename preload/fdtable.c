/*
 * fdtable.c - the library's descriptor table: what each descriptor number of the process is
 * to the library, and how long the library's records live (docs/preload-design.md, "The
 * descriptor table"). In the manner of Onload's citp_fdtable:
 *
 *  - One slot per number (psp.byfd, up to the hard RLIMIT_NOFILE at start): empty (the
 *    kernel's alone: a wrapped call passes straight through after one load), a connection
 *    (the program's descriptor of a TCP connection the library follows), FDT_CLOSING (the
 *    program's close of a connection's descriptor is under way) or one of the library's own
 *    descriptors (FDT_HIDDEN; FDT_THREAD for a thread's wake-up eventfd).
 *  - References: a wrapper that finds a connection takes a reference (fdt_get) and drops it
 *    when it returns (fdt_put); so does every holder of the library's that lets psp.lock go
 *    (a sleeping wait, a spin, a negotiation: fdt_ref). A connection is destroyed only with
 *    no reference: destroy waits for the last fdt_put (conn_release). Taking one needs no
 *    lock: a connection's memory is never given back to malloc (a destroyed one waits in a
 *    free list for the next conn_new), so an increment on one destroyed meanwhile is
 *    harmless, and the slot is read again after it: a reference to anything but the slot's
 *    connection is dropped at once. Under ASan a destroyed connection is poisoned but for
 *    its count, so a use without a reference is still reported.
 *  - Closing: the slot is FDT_CLOSING, and the connection's record of the descriptor gone
 *    (conn_detach), before the kernel closes the number; the slot is empty after. A call
 *    that meets FDT_CLOSING is the kernel's (the program closed the number under it), and a
 *    dup2 onto the number waits until the close is over. So a number the kernel hands out
 *    again never finds the old connection.
 *  - Hidden: each descriptor of the library's own is marked from its making to its closing
 *    (fdt_hide, fdt_hidden_dup, fdt_close_hidden): the RDP socket, the psid connection, the
 *    progress thread's epoll set, timers and eventfd, the kick socket, each thread's wake-up
 *    eventfd, each connection's kernel socket (the guard), doorbells and the slots kept for
 *    them, the channels to forked children. The mark comes off before the close, so that a
 *    number the kernel hands out again is never taken for ours. The program cannot close
 *    them (EBADF), dup2 over them (EBUSY), nor close them with close_range or closefrom
 *    (skipped: sock.c); the rest of the kernel's calls still see them open.
 *  - Per-thread state: a thread's wake-up eventfd is closed by a thread-key destructor when
 *    the thread ends (fdt_thread_fd); a fork's child closes those of the parent's threads.
 */
#include "psp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

extern __thread int psp_in;

static int top; /* one above the highest slot ever marked (atomic): scans stop there */

static void raise_top(int fd)
{
    int t = __atomic_load_n(&top, __ATOMIC_RELAXED);
    while (fd >= t && !__atomic_compare_exchange_n(&top, &t, fd + 1, false, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
}

void fdt_note(int fd)
{
    raise_top(fd);
}

int fdt_top(void)
{
    return __atomic_load_n(&top, __ATOMIC_RELAXED);
}

static struct conn *slot(int fd)
{
    if (fd < 0 || fd >= psp.nbyfd || !psp.byfd) return NULL;
    return __atomic_load_n(&psp.byfd[fd], __ATOMIC_ACQUIRE);
}

static void set_slot(int fd, struct conn *v)
{
    if (v) raise_top(fd);
    __atomic_store_n(&psp.byfd[fd], v, __ATOMIC_RELEASE);
}

/* --- connections: memory and references --- */

static struct conn *free_conns; /* destroyed, kept for the next (psp.lock) */

#define LIVE offsetof(struct conn, refs) /* [0, LIVE): all but what a racing lookup touches */

struct conn *fdt_conn_alloc(void)
{
    struct conn *c = free_conns;
    if (!c) return calloc(1, sizeof *c);
    UNPOISON(c, LIVE);
    free_conns = c->free_next;
    /* the count stays: a lookup that raced with the destroy may hold it for a moment */
    memset(c, 0, LIVE);
    __atomic_store_n(&c->doomed, false, __ATOMIC_RELAXED);
    __atomic_store_n(&c->freed, false, __ATOMIC_RELAXED);
    return c;
}

void fdt_conn_free(struct conn *c)
{
    __atomic_store_n(&c->freed, true, __ATOMIC_RELAXED);
    c->free_next = free_conns;
    free_conns = c;
    POISON(c, LIVE);
}

void fdt_ref(struct conn *c)
{
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
}

static void unref(struct conn *c)
{
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_SEQ_CST) != 0 ||
        !__atomic_load_n(&c->doomed, __ATOMIC_SEQ_CST))
        return;
    int e = errno;
    pthread_mutex_lock(&psp.lock);
    conn_release(c);
    pthread_mutex_unlock(&psp.lock);
    errno = e;
}

struct conn *fdt_find(int fd)
{
    for (;;) {
        struct conn *c = slot(fd);
        if (!fdt_is_conn(c)) {
            real_ready(); /* the caller's next step is real.X */
            return NULL;
        }
        fdt_ref(c);
        if (slot(fd) == c) return c;
        unref(c); /* the slot changed under us: look again */
    }
}

/* The references a wrapper holds (fdt_get), per thread: a cancellation that acts in a sleep
 * drops them (fdt_release_held, from the sleep's cleanup), since the frames that would have
 * are gone. More than HELD_MAX at once (nested wrappers) are not kept here. */
#define HELD_MAX 8
static __thread struct conn *held[HELD_MAX];
__thread int fdt_nheld;
#define nheld fdt_nheld

/* The reference a thread keeps on the last connection it used, so that its next call on it
 * counts nothing (two atomic operations a call were a tenth of a same-node round trip):
 * fdt_put hands a wrapper's reference over to it, and drops the one it kept before; the
 * thread's end drops it (thread_gone). A connection destroyed meanwhile ends at once all
 * the same; only its memory waits for this reference. */
__thread struct conn *fdt_kept;
#define kept fdt_kept

static void keep(struct conn *c)
{
    struct conn *old = kept;
    kept = c;
    if (old)
        unref(old);
    else
        fdt_thread_enter(); /* (its key's destructor drops the reference) */
}

void fdt_hold(struct conn *c)
{
    if (c && nheld < HELD_MAX) held[nheld++] = c;
}

struct conn *fdt_get(int fd)
{
    struct conn *c = slot(fd);
    if (c && c == kept) return c; /* held by this thread already: nothing to count */
    c = fdt_find(fd);
    fdt_hold(c);
    return c;
}

void fdt_put(struct conn *c)
{
    if (!c) return;
    for (int i = nheld - 1; i >= 0; i--)
        if (held[i] == c) {
            held[i] = held[--nheld];
            if (c == kept)
                unref(c); /* (taken again in a nested call before it was kept) */
            else
                keep(c);
            return;
        }
    if (c != kept) unref(c); /* (one not recorded: more than HELD_MAX at once) */
}

void fdt_release_held(void)
{
    while (nheld > 0) unref(held[--nheld]);
}

void fdt_unfind(struct conn *c)
{
    if (c) unref(c);
}

void fdt_put_locked(struct conn *c)
{
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&c->doomed, __ATOMIC_SEQ_CST))
        conn_release(c);
}

/* --- the program's descriptors of connections --- */

void fdt_attach(int fd, struct conn *c)
{
    set_slot(fd, c);
}

void fdt_clear(int fd, struct conn *was)
{
    if (fd < 0 || fd >= psp.nbyfd || !psp.byfd) return;
    __atomic_compare_exchange_n(&psp.byfd[fd], &was, NULL, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
}

bool fdt_close_begin(int fd)
{
    if (!fdt_is_conn(slot(fd))) return false;
    pthread_mutex_lock(&psp.lock);
    struct conn *c = psp_conn_of(fd);
    if (c) conn_detach(fd); /* (the slot stays FDT_CLOSING) */
    pthread_mutex_unlock(&psp.lock);
    return c != NULL;
}

void fdt_close_end(int fd)
{
    fdt_clear(fd, FDT_CLOSING);
}

void fdt_wait_closed(int fd)
{
    while (slot(fd) == FDT_CLOSING) sched_yield();
}

/* --- the library's own descriptors --- */

bool fdt_hidden(int fd)
{
    struct conn *c = slot(fd);
    return c == FDT_HIDDEN || c == FDT_THREAD;
}

static int mark(int fd, struct conn *how)
{
    if (fd >= 0 && fd < psp.nbyfd && psp.byfd) set_slot(fd, how);
    return fd;
}

int fdt_hide(int fd)
{
    if (fd < 0) return fd;
    if (fd < psp.hidden_base) {
        int h = real.fcntl(fd, F_DUPFD_CLOEXEC, psp.hidden_base);
        int e = errno;
        real.close(fd);
        errno = e;
        fd = h;
    }
    return mark(fd, FDT_HIDDEN);
}

int fdt_hidden_dup(int fd)
{
    return mark(real.fcntl(fd, F_DUPFD_CLOEXEC, psp.hidden_base), FDT_HIDDEN);
}

int fdt_mark_hidden(int fd)
{
    return mark(fd, FDT_HIDDEN);
}

void fdt_unmark(int fd)
{
    struct conn *c = slot(fd);
    if (c == FDT_HIDDEN || c == FDT_THREAD) fdt_clear(fd, c);
}

void fdt_close_hidden(int fd)
{
    if (fd < 0) return;
    fdt_unmark(fd); /* first: the number is free once closed */
    psp_in++;
    real.close(fd);
    psp_in--;
}

/* --- per-thread state --- */

static pthread_key_t thread_key;
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;
static bool key_ok;

/* A thread ends (returned, pthread_exit, cancelled): its wake-up eventfd goes with it. The
 * value is the descriptor + 1 (a key's value of NULL runs no destructor). */
static void thread_gone(void *v)
{
    int fd = (int)(intptr_t)v - 1;
    lock_check_thread_end();
    if (fd >= 0 && slot(fd) == FDT_THREAD) fdt_close_hidden(fd);
    struct conn *c = kept;
    kept = NULL;
    if (c) unref(c);
}

static void key_make(void)
{
    key_ok = pthread_key_create(&thread_key, thread_gone) == 0;
}

int fdt_thread_fd(int efd)
{
    pthread_once(&thread_once, key_make);
    if (efd < 0) return efd;
    efd = mark(efd, FDT_THREAD);
    if (key_ok) pthread_setspecific(thread_key, (void *)(intptr_t)(efd + 1));
    return efd;
}

void fdt_thread_enter(void)
{
    pthread_once(&thread_once, key_make);
    if (key_ok && !pthread_getspecific(thread_key)) pthread_setspecific(thread_key, (void *)1);
}

void fdt_fork_child(void)
{
    /* the parent's threads are not the child's: their eventfds are the parent's objects,
     * which the parent's wakers still write; the thread that forked makes a new one */
    for (int fd = 0, t = fdt_top(); fd < t; fd++)
        if (slot(fd) == FDT_THREAD) fdt_close_hidden(fd);
    if (key_ok) pthread_setspecific(thread_key, NULL);
    for (struct conn *c = psp.all; c; c = c->lnext)
        __atomic_store_n(&c->refs, 0, __ATOMIC_RELAXED); /* no call of another thread is in */
    kept = NULL;
    nheld = 0;
}

/* A cancellation unwinds the stack without the functions' epilogues; under ASan their
 * frames' redzones would stay poisoned (glibc's unwinder is not one ASan follows), and the
 * next calls at that depth be reported: the frames above are unpoisoned first. */
void psp_unwinding(void)
{
#if defined(__SANITIZE_ADDRESS__)
    __asan_handle_no_return();
#endif
}

/* --- the lock checker (PSP_LOCK_CHECK builds: the ASan tree) --- */

#ifdef PSP_LOCK_CHECK
#include <stdio.h>

/* glibc records a mutex's owner (its thread id) for every mutex type */
static bool owns(pthread_mutex_t *m, pid_t tid)
{
    return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == tid;
}

void lock_check_thread_end(void)
{
    pid_t tid = gettid();
    const char *which = owns(&psp.lock, tid)       ? "psp.lock"
                        : owns(&psp.psi_lock, tid) ? "psi_lock"
                                                   : NULL;
    if (!which) return;
    char msg[128];
    int n = snprintf(msg, sizeof msg, "pspreload: lock check: thread %d ended holding %s\n",
                     (int)tid, which);
    (void)!real.write(2, msg, (size_t)n);
    abort();
}
#endif
