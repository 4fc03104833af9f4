/*
 * test_privwire.c - unit tests for the frames between psid's engine and its privileged
 * child (psid/privwire.c): a round trip with descriptors, a frame cut short, a header that
 * is not a psmsg, and the spawn decoder against every malformed request it must refuse.
 */
#include "../../psid/privsep.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A valid PRIV_SPAWN; `skip` leaves one tag out, `extra` adds fields after. */
static void spawn_msg(struct psmsg_buf *b, uint16_t skip, void (*extra)(struct psmsg_buf *))
{
    psmsg_begin(b, PRIV_SPAWN, 9);
    const uint16_t u32s[] = {PRIV_F_REQ,   PRIV_F_RANK,  PRIV_F_UID, PRIV_F_GID,
                             PRIV_F_UMASK, PRIV_F_STDIN, PRIV_F_NODE};
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++)
        if (u32s[i] != skip) psmsg_put_u32(b, u32s[i], u32s[i] == PRIV_F_UMASK ? 022 : 1);
    if (skip != PRIV_F_JOB) psmsg_put_u64(b, PRIV_F_JOB, 0x100000002ull);
    psmsg_put_str(b, PRIV_F_CWD, "/tmp");
    psmsg_put_str(b, PRIV_F_ARG, "/bin/true");
    psmsg_put_str(b, PRIV_F_ENV, "PATH=/bin");
    psmsg_put_str(b, PRIV_F_RENV, "PSI_RANK=1");
    if (extra) extra(b);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(b), 0);
}

static int decode(struct psmsg_buf *b, struct priv_spawn *s, char *why)
{
    struct psmsg m;
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b->data, b->len, &m), 0);
    return priv_decode_spawn(&m, s, why, 200);
}

static void test_spawn_valid(void)
{
    struct psmsg_buf b = {0};
    struct priv_spawn s;
    char why[200];
    spawn_msg(&b, 0, NULL);
    CU_ASSERT_EQUAL(decode(&b, &s, why), 0);
    CU_ASSERT_EQUAL(s.job, 0x100000002ull);
    CU_ASSERT_EQUAL(s.umask, 022);
    CU_ASSERT_STRING_EQUAL(s.cwd, "/tmp");
    CU_ASSERT_EQUAL(s.nargv, 1);
    CU_ASSERT_EQUAL(s.nenv, 1);
    CU_ASSERT_EQUAL(s.nrenv, 1);
    psmsg_buf_free(&b);
}

static void put_nul(struct psmsg_buf *b)
{
    psmsg_put_bytes(b, PRIV_F_ARG, "a\0b", 3);
}
static void put_noeq(struct psmsg_buf *b)
{
    psmsg_put_str(b, PRIV_F_ENV, "NOEQUALS");
}
static void put_umask(struct psmsg_buf *b)
{
    psmsg_put_u32(b, PRIV_F_UMASK, 01000);
}
static void put_uid(struct psmsg_buf *b)
{
    psmsg_put_u32(b, PRIV_F_UID, 0xffffffffu);
}
static void put_renv(struct psmsg_buf *b)
{
    for (int i = 0; i < PRIV_MAX_RENV; i++) psmsg_put_str(b, PRIV_F_RENV, "X=1");
}

static void put_cpus(struct psmsg_buf *b)
{
    const uint8_t set[2] = {0x05, 0x80}; /* CPUs 0, 2, 15 */
    psmsg_put_bytes(b, PRIV_F_CPUS, set, sizeof set);
}
static void put_cpus_empty(struct psmsg_buf *b)
{
    const uint8_t set[3] = {0};
    psmsg_put_bytes(b, PRIV_F_CPUS, set, sizeof set);
}
static void put_cpus_long(struct psmsg_buf *b)
{
    uint8_t set[PSCPU_BYTES + 1] = {1};
    psmsg_put_bytes(b, PRIV_F_CPUS, set, sizeof set);
}

static void put_pats(struct psmsg_buf *b)
{
    psmsg_put_str(b, PRIV_F_OUT_PAT, "out-%N-%t");
    psmsg_put_str(b, PRIV_F_ERR_PAT, "err-%j");
    psmsg_put_u32(b, PRIV_F_APPEND, 1);
    psmsg_put_u32(b, PRIV_F_NODE_IDX, 3);
    psmsg_put_str(b, PRIV_F_JOB_NAME, "name");
}
static void put_badpat(struct psmsg_buf *b)
{
    psmsg_put_str(b, PRIV_F_OUT_PAT, "out-%q");
}
static void put_badmode(struct psmsg_buf *b)
{
    psmsg_put_str(b, PRIV_F_OUT_PAT, "out");
    psmsg_put_u32(b, PRIV_F_APPEND, 2);
}

/* --output-on-node: checked patterns, the mode, the node's index, the job's name */
static void test_spawn_outfiles(void)
{
    struct psmsg_buf b = {0};
    struct priv_spawn s;
    char why[200];
    spawn_msg(&b, 0, put_pats);
    CU_ASSERT_EQUAL(decode(&b, &s, why), 0);
    CU_ASSERT_STRING_EQUAL(s.out_pat, "out-%N-%t");
    CU_ASSERT_STRING_EQUAL(s.err_pat, "err-%j");
    CU_ASSERT_EQUAL(s.append, 1);
    CU_ASSERT_EQUAL(s.nodeidx, 3);
    CU_ASSERT_STRING_EQUAL(s.name, "name");
    psmsg_buf_free(&b);
    void (*bad[])(struct psmsg_buf *) = {put_badpat, put_badmode};
    for (size_t i = 0; i < 2; i++) {
        spawn_msg(&b, 0, bad[i]);
        CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
        psmsg_buf_free(&b);
    }
}

/* PRIV_F_CPUS: a binding of 1..PSCPU_BYTES bytes with a CPU in it */
static void test_spawn_cpus(void)
{
    struct psmsg_buf b = {0};
    struct priv_spawn s;
    char why[200];
    spawn_msg(&b, 0, NULL);
    CU_ASSERT_EQUAL(decode(&b, &s, why), 0);
    CU_ASSERT_FALSE(s.bind);
    psmsg_buf_free(&b);
    spawn_msg(&b, 0, put_cpus);
    CU_ASSERT_EQUAL(decode(&b, &s, why), 0);
    CU_ASSERT_TRUE(s.bind);
    CU_ASSERT_EQUAL(pscpu_count(&s.cpus), 3);
    CU_ASSERT_TRUE(pscpu_isset(&s.cpus, 0) && pscpu_isset(&s.cpus, 2) && pscpu_isset(&s.cpus, 15));
    psmsg_buf_free(&b);
    spawn_msg(&b, 0, put_cpus_empty);
    CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "empty CPU set"));
    psmsg_buf_free(&b);
    spawn_msg(&b, 0, put_cpus_long);
    CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "CPU set"));
    psmsg_buf_free(&b);
}

static void test_spawn_malformed(void)
{
    const uint16_t required[] = {PRIV_F_REQ, PRIV_F_JOB,   PRIV_F_RANK,  PRIV_F_UID,
                                 PRIV_F_GID, PRIV_F_UMASK, PRIV_F_STDIN, PRIV_F_NODE};
    struct priv_spawn s;
    char why[200];
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        struct psmsg_buf b = {0};
        spawn_msg(&b, required[i], NULL);
        CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, "missing"));
        psmsg_buf_free(&b);
    }
    void (*bad[])(struct psmsg_buf *) = {put_nul, put_noeq, put_renv};
    const char *says[] = {"NUL", "'='", "too many"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct psmsg_buf b = {0};
        spawn_msg(&b, 0, bad[i]);
        CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(why, says[i]));
        psmsg_buf_free(&b);
    }
    /* a umask over 0777, a uid of -1 (each the only one given) */
    struct psmsg_buf b = {0};
    spawn_msg(&b, PRIV_F_UMASK, put_umask);
    CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
    psmsg_buf_free(&b);
    spawn_msg(&b, PRIV_F_UID, put_uid);
    CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
    psmsg_buf_free(&b);
    /* another type */
    psmsg_begin(&b, PRIV_SIGNAL, 1);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL(decode(&b, &s, why), -1);
    psmsg_buf_free(&b);
}

static void test_frames(void)
{
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_EXIT, 5);
    psmsg_put_u32(&b, PRIV_F_PID, 1234);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_EQUAL(priv_send(sv[0], &b, p, 2), 0);
    uint8_t *buf;
    struct psmsg m;
    int fds[PRIV_MAX_FDS], nfds;
    CU_ASSERT_EQUAL_FATAL(priv_recv(sv[1], &buf, &m, fds, &nfds), 0);
    CU_ASSERT_EQUAL(m.type, PRIV_EXIT);
    CU_ASSERT_EQUAL(m.id, 5);
    CU_ASSERT_EQUAL(nfds, 2);
    uint32_t pid = 0;
    CU_ASSERT_EQUAL(psmsg_get_u32(&m.body, PRIV_F_PID, &pid), 0);
    CU_ASSERT_EQUAL(pid, 1234);
    /* the passed pipe works: written at one end, read at the other */
    CU_ASSERT_EQUAL(write(fds[1], "x", 1), 1);
    char c = 0;
    CU_ASSERT_EQUAL(read(p[0], &c, 1), 1);
    CU_ASSERT_EQUAL(c, 'x');
    for (int i = 0; i < nfds; i++) close(fds[i]);
    close(p[0]);
    close(p[1]);
    free(buf);
    /* more descriptors than allowed: refused by the sender */
    int many[PRIV_MAX_FDS + 1] = {0};
    CU_ASSERT_EQUAL(priv_send(sv[0], &b, many, PRIV_MAX_FDS + 1), -1);
    /* a header that is not a psmsg */
    uint8_t junk[PSMSG_HDR] = {0xee, 0, 0, 1, 0, 0, 0, 12};
    CU_ASSERT_EQUAL(write(sv[0], junk, sizeof junk), (ssize_t)sizeof junk);
    CU_ASSERT_EQUAL(priv_recv(sv[1], &buf, &m, fds, &nfds), -1);
    CU_ASSERT_EQUAL(errno, EBADMSG);
    CU_ASSERT_PTR_NULL(buf);
    /* a frame cut short, then EOF: an error with errno 0, nothing kept */
    CU_ASSERT_EQUAL(write(sv[0], b.data, b.len - 2), (ssize_t)(b.len - 2));
    close(sv[0]);
    CU_ASSERT_EQUAL(priv_recv(sv[1], &buf, &m, fds, &nfds), -1);
    CU_ASSERT_EQUAL(errno, 0);
    CU_ASSERT_EQUAL(nfds, 0);
    close(sv[1]);
    psmsg_buf_free(&b);
}

UNIT_SUITE(privwire, UNIT_TEST(test_spawn_valid), UNIT_TEST(test_spawn_malformed),
           UNIT_TEST(test_spawn_cpus), UNIT_TEST(test_spawn_outfiles), UNIT_TEST(test_frames));
