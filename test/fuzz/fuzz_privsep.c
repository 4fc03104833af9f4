/*
 * fuzz_privsep.c - libFuzzer target for what psid's privileged child reads from its engine
 * (psid/privwire.c, psid/spawncred.c): any bytes as a frame on a socketpair (priv_recv); what
 * parses as a psmsg through the spawn and credential-request decoders, with the type made
 * PRIV_SPAWN or PRIV_CRED a third of the time each so that the field checks are reached, and
 * its strings through the check of a rank's variables; and the input's first bytes as a
 * spawn credential (decoded, and checked against a book that lives across inputs), also
 * with a good MAC over them so that the checks behind it are reached.
 */
#include "../../psid/privsep.h"
#include "../../psid/spawncred.h"
#include "psproto.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[32] = "fuzz spawn key fuzz spawn key 1";

static void decode_all(const struct psmsg *m)
{
    struct priv_spawn s;
    struct priv_cred c;
    char why[256];
    priv_decode_spawn(m, &s, why, sizeof why);
    if (priv_decode_cred(m, &c, why, sizeof why) == 0) {
        size_t pos = 0;
        uint32_t node, ranks;
        while (priv_cred_target(m, &pos, &node, &ranks)) {
        }
    }
    struct psmsg_field f;
    size_t pos = 0;
    while (psmsg_next(&m->body, &pos, &f)) priv_renv_allowed((const char *)f.val, f.len);
}

static void credential(const uint8_t *data, size_t size)
{
    static struct spawncred_book *book;
    if (!book) book = spawncred_book_new();
    struct spawncred c;
    const char *bad;
    char why[256];
    struct spawncred_want w = {.node = 1, .uid = 1000, .gid = 100, .job = PSTID(2, 3)};
    uint8_t b[SPAWNCRED_LEN] = {0};
    size_t n = size < sizeof b ? size : sizeof b;
    memcpy(b, data, n);
    spawncred_decode(b, n, key, &c, &bad);
    uint64_t now = 1700000000ull * 1000000000ull, mono = (uint64_t)size * 1000000000ull;
    spawncred_check(b, n, key, &w, now, mono, book, why, sizeof why);
    /* the same fields under a good MAC: the checks behind it */
    if (n == sizeof b && spawncred_decode(b, n, key, &c, &bad) < 0) {
        b[0] = SPAWNCRED_VERSION;
        memset(b + 1, 0, 3);
        memset(b + 32, 0, 4);
        struct spawncred k = {.origin = (uint32_t)b[4] % 4,
                              .target = (uint32_t)b[8] % 3,
                              .uid = b[12] & 1 ? 1000 : b[13],
                              .gid = b[16] & 1 ? 100 : b[17],
                              .nranks = b[20] % 4,
                              .job = PSTID(b[24] % 4, 3),
                              .issued = now + ((uint64_t)b[36] << 32) - (1ull << 39)};
        memcpy(k.nonce, b + 44, 16);
        if (b[60] & 1) memset(k.digest, 0, sizeof k.digest);
        spawncred_encode(&k, key, b);
        spawncred_check(b, sizeof b, key, &w, now, mono, book, why, sizeof why);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) size = 65536;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (size >= 4 && copy[size - 1] % 3) { /* a PRIV_SPAWN or PRIV_CRED header */
        uint16_t t = copy[size - 1] % 3 == 1 ? PRIV_SPAWN : PRIV_CRED;
        copy[2] = (uint8_t)(t >> 8);
        copy[3] = (uint8_t)(t & 0xff);
    }
    struct psmsg m;
    if (psmsg_parse(copy, size, &m) == 0) decode_all(&m);
    credential(data, size);
    /* the same bytes through the framing reader, then the writer's end closed */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        if (size && write(sv[0], copy, size) < 0) size = 0;
        close(sv[0]);
        uint8_t *buf;
        int fds[PRIV_MAX_FDS], nfds;
        while (priv_recv(sv[1], &buf, &m, fds, &nfds) == 0) {
            decode_all(&m);
            for (int i = 0; i < nfds; i++) close(fds[i]);
            free(buf);
        }
        close(sv[1]);
    }
    free(copy);
    return 0;
}
