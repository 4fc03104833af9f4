/*
 * fuzz_privsep.c - libFuzzer target for the frames psid's privileged child reads from its
 * engine (psid/privwire.c): any bytes as a frame on a socketpair (priv_recv), and what
 * parses as a psmsg through the spawn decoder, with the type made PRIV_SPAWN half of the
 * time so that the field checks are reached.
 */
#include "../../psid/privsep.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) size = 65536;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (size >= 4 && (copy[size - 1] & 1)) { /* a PRIV_SPAWN header */
        copy[2] = PRIV_SPAWN >> 8;
        copy[3] = PRIV_SPAWN & 0xff;
    }
    struct psmsg m;
    struct priv_spawn s;
    char why[256];
    if (psmsg_parse(copy, size, &m) == 0) priv_decode_spawn(&m, &s, why, sizeof why);
    /* the same bytes through the framing reader, then the writer's end closed */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        if (size && write(sv[0], copy, size) < 0) size = 0;
        close(sv[0]);
        uint8_t *buf;
        int fds[PRIV_MAX_FDS], nfds;
        while (priv_recv(sv[1], &buf, &m, fds, &nfds) == 0) {
            priv_decode_spawn(&m, &s, why, sizeof why);
            for (int i = 0; i < nfds; i++) close(fds[i]);
            free(buf);
        }
        close(sv[1]);
    }
    free(copy);
    return 0;
}
