/*
 * test_privparent.c - psid's privileged child (psid/privparent.c) against an engine that
 * lies, played by this test on the other end of the socketpair: the child runs in a forked
 * process, its client socket is a listening UNIX socket of this test, and the test's own
 * connection to it is the client whose kernel credentials the child checks.
 *  - PRIV_CRED: made for the test's own uid and gid on its accepted connection; refused
 *    for another uid, and on the listening socket (whose SO_PEERCRED is its creator's), on
 *    the connecting end, on a socketpair, on a connection whose client has closed it, on
 *    none at all;
 *  - PRIV_SPAWN: starts a task on a credential it made; refuses one for another uid, one
 *    with a bit flipped, one replayed past its ranks, one for another program, none, and a
 *    rank variable that is not psid's (LD_PRELOAD).
 * Each refusal is EPERM with the reason.
 */
#include "../../psid/log.h"
#include "../../psid/privsep.h"
#include "../../psid/spawncred.h"
#include "psproto.h"
#include "unit.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NODE 3
#define JOB  PSTID(NODE, 12345)

struct child {
    pid_t pid;
    int fd; /* the engine's end */
    char dir[64], path[96];
    int lfd; /* "psid's client socket" */
    uint32_t next_id;
};

static void child_up(struct child *k)
{
    memset(k, 0, sizeof *k);
    snprintf(k->dir, sizeof k->dir, "/tmp/psprivXXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(k->dir));
    snprintf(k->path, sizeof k->path, "%s/psid.sock", k->dir);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", k->path);
    k->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_EQUAL_FATAL(bind(k->lfd, (struct sockaddr *)&a, sizeof a), 0);
    CU_ASSERT_EQUAL_FATAL(listen(k->lfd, 8), 0);
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    k->pid = fork();
    CU_ASSERT_TRUE_FATAL(k->pid >= 0);
    if (k->pid == 0) {
        close(sv[0]);
        log_open(PSCONF_LOG_ERROR, 0, "privparent-test");
        static struct privparent_cfg cfg;
        cfg = (struct privparent_cfg){
            .fd = sv[1], .sock_path = k->path, .root_jobs = true, .ident = "t", .node = NODE};
        memset(cfg.spawn_key, 7, sizeof cfg.spawn_key);
        _exit(privparent_run(&cfg));
    }
    close(sv[1]);
    k->fd = sv[0];
}

static void child_down(struct child *k)
{
    close(k->fd); /* its EOF: it ends */
    int st;
    CU_ASSERT_EQUAL(waitpid(k->pid, &st, 0), k->pid);
    close(k->lfd);
    unlink(k->path);
    rmdir(k->dir);
}

/* A client connection: *client the test's end, returns psid's (accepted) end. */
static int connection(struct child *k, int *client)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", k->path);
    *client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_EQUAL_FATAL(connect(*client, (struct sockaddr *)&a, sizeof a), 0);
    int fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    return fd;
}

/* Send b (with fd if >= 0) and read until the answer of type; PRIV_EXIT on the way are
 * skipped. The answer's errno; creds/text/pid filled if asked. */
static uint32_t ask(struct child *k, struct psmsg_buf *b, int fd, uint16_t type,
                    uint8_t cred[SPAWNCRED_LEN], char *text, uint32_t *pid)
{
    CU_ASSERT_EQUAL_FATAL(psmsg_end(b), 0);
    CU_ASSERT_EQUAL_FATAL(priv_send(k->fd, b, &fd, fd >= 0), 0);
    psmsg_buf_free(b);
    for (;;) {
        uint8_t *buf;
        struct psmsg m;
        int fds[PRIV_MAX_FDS], nfds;
        CU_ASSERT_EQUAL_FATAL(priv_recv(k->fd, &buf, &m, fds, &nfds), 0);
        for (int i = 0; i < nfds; i++) close(fds[i]);
        if (m.type != type) {
            free(buf);
            continue;
        }
        uint32_t e = 0;
        struct psmsg_field f;
        psmsg_get_u32(&m.body, PRIV_F_ERRNO, &e);
        if (text && psmsg_get_str(&m.body, PRIV_F_TEXT, text, 300) < 0) text[0] = 0;
        if (cred && psmsg_find(&m.body, PRIV_F_CRED, &f) && f.len == SPAWNCRED_LEN)
            memcpy(cred, f.val, SPAWNCRED_LEN);
        if (pid && psmsg_get_u32(&m.body, PRIV_F_PID, pid) < 0) *pid = 0;
        free(buf);
        return e;
    }
}

static const char *const argv_[] = {"/bin/true", NULL}, *const env_[] = {"PATH=/bin:/usr/bin",
                                                                         NULL};

static void prog_digest(uint8_t out[32])
{
    struct spawncred_hash h;
    spawncred_hash_init(&h);
    spawncred_hash_arg(&h, argv_[0], strlen(argv_[0]));
    spawncred_hash_env(&h, env_[0], strlen(env_[0]));
    spawncred_hash_final(&h, "/", 022, out);
}

/* PRIV_CRED for uid/gid, nranks on this node, on fd: the answer's errno (cred, text). */
static uint32_t cred_req(struct child *k, int fd, uint32_t uid, uint32_t gid, uint32_t nranks,
                         uint8_t cred[SPAWNCRED_LEN], char *text)
{
    struct psmsg_buf b = {0};
    uint8_t d[32], t[8] = {0, 0, 0, NODE, 0, 0, 0, (uint8_t)nranks};
    prog_digest(d);
    psmsg_begin(&b, PRIV_CRED, ++k->next_id);
    psmsg_put_u64(&b, PRIV_F_JOB, JOB);
    psmsg_put_u32(&b, PRIV_F_UID, uid);
    psmsg_put_u32(&b, PRIV_F_GID, gid);
    psmsg_put_bytes(&b, PRIV_F_DIGEST, d, sizeof d);
    psmsg_put_bytes(&b, PRIV_F_TARGET, t, sizeof t);
    return ask(k, &b, fd, PRIV_CRED_ANSWER, cred, text, NULL);
}

/* PRIV_SPAWN of rank 0 as uid/gid with cred (NULL: none) and renv: errno, text, pid. */
static uint32_t spawn_req(struct child *k, uint32_t req, uint32_t uid, uint32_t gid,
                          const uint8_t *cred, const char *renv, const char *arg, char *text,
                          uint32_t *pid)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_SPAWN, ++k->next_id);
    psmsg_put_u32(&b, PRIV_F_REQ, req);
    psmsg_put_u64(&b, PRIV_F_JOB, JOB);
    psmsg_put_u32(&b, PRIV_F_RANK, 0);
    psmsg_put_u32(&b, PRIV_F_UID, uid);
    psmsg_put_u32(&b, PRIV_F_GID, gid);
    psmsg_put_u32(&b, PRIV_F_UMASK, 022);
    psmsg_put_str(&b, PRIV_F_CWD, "/");
    psmsg_put_u32(&b, PRIV_F_STDIN, 0);
    psmsg_put_u32(&b, PRIV_F_NODE, NODE);
    psmsg_put_str(&b, PRIV_F_ARG, arg ? arg : argv_[0]);
    psmsg_put_str(&b, PRIV_F_ENV, env_[0]);
    psmsg_put_str(&b, PRIV_F_RENV, renv ? renv : "PSI_RANK=0");
    if (cred) psmsg_put_bytes(&b, PRIV_F_CRED, cred, SPAWNCRED_LEN);
    return ask(k, &b, -1, PRIV_SPAWNED, NULL, text, pid);
}

static void release(struct child *k, uint32_t pid)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PRIV_RELEASE, ++k->next_id);
    psmsg_put_u32(&b, PRIV_F_PID, pid);
    CU_ASSERT_EQUAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL(priv_send(k->fd, &b, NULL, 0), 0);
    psmsg_buf_free(&b);
}

static void test_cred_evidence(void)
{
    struct child k;
    child_up(&k);
    uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid();
    uint8_t cred[SPAWNCRED_LEN];
    char text[300];
    int client, fd = connection(&k, &client);
    CU_ASSERT_EQUAL(cred_req(&k, fd, uid, gid, 1, cred, text), 0);
    CU_ASSERT_EQUAL(cred_req(&k, fd, uid + 1, gid, 1, NULL, text), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "the requesting client is uid"));
    CU_ASSERT_EQUAL(cred_req(&k, fd, uid, gid + 1, 1, NULL, text), EPERM);
    /* the listening socket: SO_PEERCRED would be its creator's */
    CU_ASSERT_EQUAL(cred_req(&k, k.lfd, uid, gid, 1, NULL, text), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "not a connected"));
    /* the connecting end: its peer is the server */
    CU_ASSERT_EQUAL(cred_req(&k, client, uid, gid, 1, NULL, text), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "not a connection to psid's socket"));
    int sv[2];
    CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CU_ASSERT_EQUAL(cred_req(&k, sv[0], uid, gid, 1, NULL, text), EPERM);
    close(sv[0]);
    close(sv[1]);
    CU_ASSERT_EQUAL(cred_req(&k, -1, uid, gid, 1, NULL, text), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "no client connection"));
    close(client); /* the client went: its connection vouches for nothing any more */
    CU_ASSERT_EQUAL(cred_req(&k, fd, uid, gid, 1, NULL, text), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "closed its connection"));
    close(fd);
    child_down(&k);
}

static void test_spawn_evidence(void)
{
    struct child k;
    child_up(&k);
    uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid(), pid;
    uint8_t cred[SPAWNCRED_LEN], bad[SPAWNCRED_LEN];
    char text[300];
    int client, fd = connection(&k, &client);
    CU_ASSERT_EQUAL_FATAL(cred_req(&k, fd, uid, gid, 1, cred, text), 0);
    /* the engine lies about the uid (a credential of the client's own) */
    CU_ASSERT_EQUAL(spawn_req(&k, 1, uid + 1, gid, cred, NULL, NULL, text, &pid), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "not uid"));
    memcpy(bad, cred, sizeof bad);
    bad[15] ^= 1; /* the uid in the credential */
    CU_ASSERT_EQUAL(spawn_req(&k, 1, uid ^ 1, gid, bad, NULL, NULL, text, &pid), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "MAC"));
    CU_ASSERT_EQUAL(spawn_req(&k, 1, uid, gid, NULL, NULL, NULL, text, &pid), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "no spawn credential"));
    CU_ASSERT_EQUAL(spawn_req(&k, 2, uid, gid, cred, NULL, "/bin/false", text, &pid), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "another program"));
    CU_ASSERT_EQUAL(spawn_req(&k, 3, uid, gid, cred, "LD_PRELOAD=/tmp/x.so", NULL, text, &pid),
                    EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "not psid's: LD_PRELOAD"));
    /* the real thing starts once, then is a replay */
    CU_ASSERT_EQUAL(spawn_req(&k, 4, uid, gid, cred, NULL, NULL, text, &pid), 0);
    CU_ASSERT_TRUE(pid > 0);
    if (pid) release(&k, pid);
    CU_ASSERT_EQUAL(spawn_req(&k, 4, uid, gid, cred, NULL, NULL, text, &pid), EPERM);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "replayed"));
    close(client);
    close(fd);
    child_down(&k);
}

UNIT_SUITE(privparent, UNIT_TEST(test_cred_evidence), UNIT_TEST(test_spawn_evidence))
