/*
 * test_notify_hold.c - a send never runs other work (issue 29, point 2), on the path the
 * issue traced: a watcher whose unread replies exceed what psid lets wait before it stops
 * reading requests (client.c's OUT_SOFT, 256 KiB) has a PSM_RELEASE held back behind them;
 * it then reads everything, and the watched task dies (or its node is lost). Before, the
 * notification's send wrote into the emptied socket, fell under the limit and handled the
 * held PSM_RELEASE inside fire() (psid/notify.c): the RELEASE freed the watch that fire()
 * then freed again (a double free), or, when a node was lost, the watch that the walk had
 * saved as its next (a use after free). Now the send only queues, the held request is
 * resumed by the loop's before-wait hook, and the notification tables remove entries
 * lazily: the watcher gets PSM_DEAD first, then ENOENT for its RELEASE.
 *
 * A psid core for node 0 of two runs in this thread, one loop round at a time (loop_once);
 * node 1 (127.0.0.2) is up but is a UDP socket of this test that never answers, so that
 * its messages wait in RDP and its answers are what this test hands to psid_dispatch. Run
 * under ASan/UBSan (build/san) the old code aborts here.
 */
#include "../../psid/daemon.h"
#include "../../psid/log.h"
#include "psmsg.h"
#include "psproto.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define OUT_SOFT (256u << 10) /* client.c: requests are not read past this many unsent bytes */

struct core {
    struct psid d;
    char dir[64];
    int sink; /* node 1's RDP port: takes its packets, answers nothing */
    int w;    /* the watcher's connection */
    uint8_t *got;
    size_t ngot, capgot;
};

static void core_up(struct core *k)
{
    memset(k, 0, sizeof *k);
    snprintf(k->dir, sizeof k->dir, "/tmp/psholdXXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(k->dir));
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/key", k->dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("hold key hold key hold key hold key", f);
    fclose(f);
    chmod(path, 0600);
    unsigned port = 30000 + (unsigned)getpid() % 20000;
    k->sink = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
    CU_ASSERT_EQUAL_FATAL(bind(k->sink, (struct sockaddr *)&a, sizeof a), 0);
    snprintf(path, sizeof path, "%s/psid.conf", k->dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f = fopen(path, "w"));
    fprintf(f,
            "cluster = \"hold\";\nkey_file = \"%s/key\";\nlog_level = \"error\";\n"
            "rdp = { port = %u; };\nheartbeat = { mode = \"unicast\"; port = %u; };\n"
            "psid = { socket = \"%s/psid-%%n.sock\"; client_idle_s = 0; };\n"
            "nodes = ( { id = 0; name = \"n0\"; address = \"127.0.0.1\"; },\n"
            "          { id = 1; name = \"n1\"; address = \"127.0.0.2\"; } );\n",
            k->dir, port, port + 2, k->dir);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(psconf_load(path, &k->d.conf, err, sizeof err), 0);
    log_open(PSCONF_LOG_ERROR, 0, "hold");
    k->d.self = psconf_node_lookup(&k->d.conf, "0");
    k->d.incarnation = 1;
    k->d.hb_fd = k->d.sig_fd = -1;
    k->d.loop = loop_new();
    k->d.nodes = calloc(k->d.conf.nnodes, sizeof *k->d.nodes);
    CU_ASSERT_FATAL(k->d.self && k->d.loop && k->d.nodes);
    for (size_t i = 0; i < k->d.conf.nnodes; i++) {
        k->d.nodes[i].conf = &k->d.conf.nodes[i];
        k->d.nodes[i].state = PSNODE_UP;
    }
    CU_ASSERT_EQUAL_FATAL(rdplink_start(&k->d), 0);
    CU_ASSERT_EQUAL_FATAL(clients_start(&k->d), 0);
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    snprintf(u.sun_path, sizeof u.sun_path, "%s/psid-0.sock", k->dir);
    k->w = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CU_ASSERT_EQUAL_FATAL(connect(k->w, (struct sockaddr *)&u, sizeof u), 0);
    loop_once(k->d.loop); /* accepted */
}

static void core_down(struct core *k)
{
    char path[128];
    close(k->w);
    for (int i = 0; i < 4; i++) loop_once(k->d.loop);
    clients_stop(&k->d);
    notify_free(&k->d);
    rdplink_stop(&k->d);
    send_free(&k->d);
    loop_free(k->d.loop);
    free(k->d.nodes);
    psconf_free(&k->d.conf);
    close(k->sink);
    free(k->got);
    static const char *const files[] = {"key", "psid.conf", "psid-0.sock"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", k->dir, files[i]);
        unlink(path);
    }
    rmdir(k->dir);
}

/* Write a whole buffer to the watcher's connection (psid reads it meanwhile). */
static void put(struct core *k, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = send(k->w, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) {
            loop_once(k->d.loop);
            continue;
        }
        CU_ASSERT_FATAL(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

/* Append request (type, id; with PSF_TID if tid) to all. */
static void add_req(struct psmsg_buf *all, uint16_t type, uint32_t id, uint64_t tid)
{
    struct psmsg_buf b = {0};
    psmsg_begin(&b, type, id);
    if (tid) psmsg_put_u64(&b, PSF_TID, tid);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    size_t at = all->len;
    if (all->cap < at + b.len) {
        size_t cap = all->cap ? all->cap * 2 : 65536;
        while (cap < at + b.len) cap *= 2;
        all->data = realloc(all->data, cap);
        all->cap = cap;
    }
    memcpy(all->data + at, b.data, b.len);
    all->len = at + b.len;
    psmsg_buf_free(&b);
}

/* What the watcher has read so far, kept whole. */
static void drain(struct core *k)
{
    for (;;) {
        if (k->capgot - k->ngot < 65536) {
            k->capgot = k->capgot ? 2 * k->capgot : 1 << 20;
            k->got = realloc(k->got, k->capgot);
        }
        ssize_t r = recv(k->w, k->got + k->ngot, k->capgot - k->ngot, MSG_DONTWAIT);
        if (r <= 0) return;
        k->ngot += (size_t)r;
    }
}

static size_t queued_at_watcher(const struct core *k)
{
    int n = 0;
    return ioctl(k->w, FIONREAD, &n) == 0 ? (size_t)n : 0;
}

/* A daemon message from node 1, handed to psid as RDP would. */
static void from_node1(struct core *k, uint16_t type, uint64_t tid, uint32_t req, uint64_t watcher)
{
    struct psmsg_buf b = {0};
    struct psmsg m;
    psmsg_begin(&b, type, 0);
    psmsg_put_u64(&b, PSF_TID, tid);
    if (req) psmsg_put_u32(&b, PSF_REQ, req);
    if (type == PSM_D_NOTIFY_REPLY) psmsg_put_u32(&b, PSF_ERRNO, 0);
    if (watcher) psmsg_put_u64(&b, PSF_WATCHER, watcher);
    if (type == PSM_D_DEAD) psmsg_put_u32(&b, PSF_STATUS, 3 << 8);
    CU_ASSERT_EQUAL_FATAL(psmsg_end(&b), 0);
    CU_ASSERT_EQUAL_FATAL(psmsg_parse(b.data, b.len, &m), 0);
    psid_dispatch(&k->d, 1, &m);
    psmsg_buf_free(&b);
}

/* Register a message notification for tid and confirm it as node 1 would. */
static void watch(struct core *k, uint64_t tid, uint32_t id)
{
    struct psmsg_buf b = {0};
    add_req(&b, PSM_NOTIFY, id, tid);
    uint32_t req = k->d.next_req + 1; /* notify.c numbers it so */
    put(k, b.data, b.len);
    psmsg_buf_free(&b);
    for (int i = 0; i < 4; i++) loop_once(k->d.loop);
    CU_ASSERT_EQUAL_FATAL(k->d.next_req, req);
    from_node1(k, PSM_D_NOTIFY_REPLY, tid, req, 0);
}

/* Fill what waits for the watcher to just under OUT_SOFT (the socket full, psid's queue
 * near the limit), then send in one write enough PSM_NODES to pass it and a PSM_RELEASE of
 * tid behind them: psid reads all, handles requests until the limit, and holds the rest.
 * The number of requests whose replies are due (every one is answered) goes to *nreq. */
static void hold_release(struct core *k, uint64_t tid, uint32_t release_id, unsigned *nreq)
{
    /* the size of one reply: the first request's, alone on the connection */
    struct psmsg_buf b = {0};
    add_req(&b, PSM_NODES, 100, 0);
    put(k, b.data, b.len);
    for (int i = 0; i < 4; i++) loop_once(k->d.loop);
    drain(k);
    size_t reply = 0; /* the last of what was read: the notify reply, then this one */
    for (size_t off = 0; off + PSMSG_HDR <= k->ngot;) {
        uint32_t len = psmsg_frame_len(k->got + off, k->ngot - off);
        CU_ASSERT_FATAL(len >= PSMSG_HDR && off + len <= k->ngot);
        reply = len;
        off += len;
    }
    CU_ASSERT_FATAL(reply > 0);
    psmsg_buf_free(&b);
    *nreq = 1;
    size_t produced = 0; /* reply bytes since the first */
    for (;;) {
        size_t unsent = produced - queued_at_watcher(k);
        if (unsent + 8 * reply >= OUT_SOFT) break;
        unsigned batch = (unsigned)((OUT_SOFT - unsent) / reply / 2) + 1;
        struct psmsg_buf many = {0};
        for (unsigned i = 0; i < batch; i++) add_req(&many, PSM_NODES, 101, 0);
        put(k, many.data, many.len);
        psmsg_buf_free(&many);
        for (int i = 0; i < 3; i++) loop_once(k->d.loop);
        produced += batch * reply;
        *nreq += batch;
    }
    struct psmsg_buf last = {0};
    for (int i = 0; i < 64; i++) add_req(&last, PSM_NODES, 102, 0);
    add_req(&last, PSM_RELEASE, release_id, tid);
    put(k, last.data, last.len);
    psmsg_buf_free(&last);
    for (int i = 0; i < 3; i++) loop_once(k->d.loop);
    *nreq += 64;
}

struct seen {
    unsigned nodes, dead, dead_before_release;
    int release_err; /* -1: no reply yet */
    uint64_t dead_tid[2];
    uint32_t dead_status[2], dead_lost[2];
};

/* Parse everything the watcher read. */
static void parse(const struct core *k, uint32_t release_id, struct seen *s)
{
    memset(s, 0, sizeof *s);
    s->release_err = -1;
    for (size_t off = 0; off + PSMSG_HDR <= k->ngot;) {
        uint32_t len = psmsg_frame_len(k->got + off, k->ngot - off);
        if (!len || off + len > k->ngot) break;
        struct psmsg m;
        CU_ASSERT_FATAL(psmsg_parse(k->got + off, len, &m) == 0);
        off += len;
        if (m.type == PSM_NODES_REPLY) s->nodes++;
        if (m.type == PSM_NOTIFY_REPLY && m.id == release_id) {
            uint32_t e = 0;
            psmsg_get_u32(&m.body, PSF_ERRNO, &e);
            s->release_err = (int)e;
            s->dead_before_release = s->dead;
        }
        if (m.type == PSM_DEAD && s->dead < 2) {
            psmsg_get_u64(&m.body, PSF_TID, &s->dead_tid[s->dead]);
            psmsg_get_u32(&m.body, PSF_STATUS, &s->dead_status[s->dead]);
            psmsg_get_u32(&m.body, PSF_LOST, &s->dead_lost[s->dead]);
            s->dead++;
        }
    }
}

/* Run psid and read until the RELEASE is answered (bounded). */
static void finish(struct core *k, uint32_t release_id, struct seen *s)
{
    for (int i = 0; i < 20000; i++) {
        loop_once(k->d.loop);
        drain(k);
        parse(k, release_id, s);
        if (s->release_err >= 0) return;
    }
}

/* The task dies while the watcher's PSM_RELEASE of it is held back. */
static void test_dead_with_release_held(void)
{
    struct core k;
    core_up(&k);
    uint64_t tid = PSTID(1, 4242), watcher = PSTID(0, (uint32_t)getpid());
    watch(&k, tid, 1);
    unsigned nreq;
    hold_release(&k, tid, 7, &nreq);
    drain(&k); /* the watcher reads all: the socket is empty, psid still holds the rest */
    from_node1(&k, PSM_D_DEAD, tid, 0, watcher);
    struct seen s;
    finish(&k, 7, &s);
    CU_ASSERT_EQUAL(s.nodes, nreq);
    CU_ASSERT_EQUAL(s.dead, 1);
    CU_ASSERT_EQUAL(s.dead_tid[0], tid);
    CU_ASSERT_EQUAL(s.dead_status[0], 3 << 8);
    CU_ASSERT_EQUAL(s.release_err, ENOENT); /* fired before the RELEASE was handled */
    CU_ASSERT_EQUAL(s.dead_before_release, 1);
    core_down(&k);
}

/* Node 1 is lost while a PSM_RELEASE of the watch after the first one fired is held back:
 * the walk of notify_node_lost goes on over the released entry. */
static void test_node_lost_with_release_held(void)
{
    struct core k;
    core_up(&k);
    uint64_t a = PSTID(1, 4242), b = PSTID(1, 4243);
    watch(&k, b, 1); /* the table is newest first: a, then b */
    watch(&k, a, 2);
    unsigned nreq;
    hold_release(&k, b, 7, &nreq);
    drain(&k);
    notify_node_lost(&k.d, 1);
    struct seen s;
    finish(&k, 7, &s);
    CU_ASSERT_EQUAL(s.nodes, nreq);
    CU_ASSERT_EQUAL(s.dead, 2);
    CU_ASSERT_EQUAL(s.dead_tid[0], a);
    CU_ASSERT_EQUAL(s.dead_tid[1], b);
    CU_ASSERT_EQUAL(s.dead_lost[0], 1);
    CU_ASSERT_EQUAL(s.dead_lost[1], 1);
    CU_ASSERT_EQUAL(s.release_err, ENOENT);
    CU_ASSERT_EQUAL(s.dead_before_release, 2);
    core_down(&k);
}

UNIT_SUITE(notify_hold, UNIT_TEST(test_dead_with_release_held),
           UNIT_TEST(test_node_lost_with_release_held))
