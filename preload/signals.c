/*
 * signals.c - which signals have a handler installed without SA_RESTART. A program thread
 * that waits in the library (wait.c) polls its wake-up eventfd and the RDP socket, and
 * poll(2) always ends with EINTR on a signal, where a socket read with SA_RESTART would
 * have been restarted by the kernel. So the library restarts the wait itself unless some
 * signal has a handler without SA_RESTART (which one interrupted cannot be known), and
 * returns EINTR then, as the kernel would for that signal. sigaction, signal, sysv_signal
 * and sigset are wrapped to keep the count; the state at start comes from sigaction.
 */
#include "psp.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>

static bool no_restart[NSIG];
static int count;

/* Not instrumented by ThreadSanitizer (make tsan): its runtime installs its handlers through
 * the next sigaction, ours, before it can run instrumented code. */
#define NO_TSAN __attribute__((no_sanitize_thread))

NO_TSAN static void note(int sig, void (*h)(int), int flags)
{
    if (sig <= 0 || sig >= NSIG) return;
    bool nr = h != SIG_DFL && h != SIG_IGN && !(flags & SA_RESTART);
    if (nr != no_restart[sig]) count += nr ? 1 : -1;
    no_restart[sig] = nr;
}

void signals_init(void)
{
    static int (*sa)(int, const struct sigaction *, struct sigaction *);
    if (!sa) sa = (__typeof__(sa))dlsym(RTLD_NEXT, "sigaction");
    for (int s = 1; s < NSIG; s++) {
        struct sigaction old;
        if (sa && sa(s, NULL, &old) == 0) note(s, old.sa_handler, old.sa_flags);
    }
}

bool signals_all_restart(void)
{
    return __atomic_load_n(&count, __ATOMIC_RELAXED) == 0;
}

NO_TSAN int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*next)(int, const struct sigaction *, struct sigaction *);
    if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "sigaction");
    int r = next(sig, act, old);
    if (r == 0 && act) note(sig, act->sa_handler, act->sa_flags);
    return r;
}

NO_TSAN sighandler_t signal(int sig, sighandler_t h)
{
    static sighandler_t (*next)(int, sighandler_t);
    if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "signal");
    sighandler_t r = next(sig, h);
    if (r != SIG_ERR) note(sig, h, SA_RESTART); /* glibc's signal(): BSD semantics */
    return r;
}

NO_TSAN sighandler_t sysv_signal(int sig, sighandler_t h)
{
    static sighandler_t (*next)(int, sighandler_t);
    if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "sysv_signal");
    sighandler_t r = next(sig, h);
    if (r != SIG_ERR) note(sig, h, 0);
    return r;
}

NO_TSAN sighandler_t sigset(int sig, sighandler_t h)
{
    static sighandler_t (*next)(int, sighandler_t);
    if (!next) next = (__typeof__(next))dlsym(RTLD_NEXT, "sigset");
    sighandler_t r = next(sig, h);
    if (r != SIG_ERR && h != SIG_HOLD) note(sig, h, 0);
    return r;
}
