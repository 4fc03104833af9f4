/*
 * real.c - the C library's definitions of the functions the preload library wraps, found
 * with dlsym(RTLD_NEXT) once, before anything else of the library runs (the constructor in
 * state.c calls real_init; a wrapper called earlier, from another library's constructor,
 * calls it too). A symbol that cannot be found is fatal: a wrapper without the real
 * function under it could only fail calls the program expects to work.
 */
#include "psp.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct psp_real real;

static void *need(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        static const char msg[] = "pspreload: a C library function is missing\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    return f;
}

#define REAL(name) real.name = (__typeof__(real.name))need(#name)

void real_init(void)
{
    if (real.read) return;
    REAL(socket);
    REAL(connect);
    REAL(listen);
    REAL(accept);
    REAL(accept4);
    REAL(close);
    REAL(shutdown);
    REAL(dup);
    REAL(dup2);
    REAL(dup3);
    REAL(fcntl);
    REAL(ioctl);
    REAL(setsockopt);
    REAL(getsockopt);
    REAL(readv);
    REAL(writev);
    REAL(recv);
    REAL(send);
    REAL(recvfrom);
    REAL(sendto);
    REAL(recvmsg);
    REAL(sendmsg);
    REAL(poll);
    REAL(ppoll);
    REAL(select);
    REAL(pselect);
    REAL(epoll_ctl);
    REAL(epoll_wait);
    REAL(epoll_pwait);
    REAL(fork);
    REAL(syscall);
    REAL(write);
    REAL(read); /* last: the mark that the table is complete */
}
