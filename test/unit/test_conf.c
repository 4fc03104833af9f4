/*
 * test_conf.c - unit tests of the configuration module (conf/, include/psconf.h).
 *
 * Every test works in its own temporary directory holding a valid key file (cluster.key,
 * 32 known bytes, mode 600) and configuration files written with mkstemps; the directory is
 * emptied and removed at the end of the test, pass or fail (no CU_ASSERT_FATAL here, so that
 * cleanup always runs). Error tests check the whole location prefix of the message,
 * "FILE:LINE: KEY: ", plus a telling part of the text.
 */
#include "psconf.h"
#include "rdp.h"
#include "unit.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NODE0  "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; } );\n"
#define KEYREL "key_file = \"cluster.key\";\n"

struct tdir {
    char dir[PATH_MAX];
    char key[PATH_MAX];  /* absolute path of cluster.key */
    char last[PATH_MAX]; /* the configuration written last */
    unsigned char keybytes[32];
};

/* snprintf that fails the test when the result does not fit */
static int strf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int strf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    CU_ASSERT(n >= 0 && (size_t)n < len);
    return n;
}

static void write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    CU_ASSERT(fd >= 0);
    if (fd < 0) return;
    CU_ASSERT(write(fd, data, len) == (ssize_t)len);
    CU_ASSERT(fchmod(fd, mode) == 0);
    close(fd);
}

static int tdir_open(struct tdir *t)
{
    memset(t, 0, sizeof *t);
    const char *tmp = getenv("TMPDIR");
    strf(t->dir, sizeof t->dir, "%s/psconf-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t->dir)) {
        CU_FAIL("mkdtemp");
        return -1;
    }
    strf(t->key, sizeof t->key, "%s/cluster.key", t->dir);
    for (unsigned i = 0; i < sizeof t->keybytes; i++) t->keybytes[i] = (unsigned char)(i * 7 + 1);
    write_file(t->key, t->keybytes, sizeof t->keybytes, 0600);
    return 0;
}

/* Remove everything in the directory (one level: files and empty subdirectories). */
static void tdir_close(struct tdir *t)
{
    DIR *d = opendir(t->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char p[PATH_MAX + 256];
            strf(p, sizeof p, "%s/%s", t->dir, e->d_name);
            if (unlink(p) < 0 && errno == EISDIR) rmdir(p);
        }
        closedir(d);
    }
    CU_ASSERT(rmdir(t->dir) == 0);
}

/* Write text into a new mkstemps file in the test directory; its path goes to t->last. */
static const char *write_conf(struct tdir *t, const char *text)
{
    strf(t->last, sizeof t->last, "%s/cfg.XXXXXX.conf", t->dir);
    int fd = mkstemps(t->last, 5);
    CU_ASSERT(fd >= 0);
    if (fd < 0) return t->last;
    size_t len = strlen(text);
    CU_ASSERT(write(fd, text, len) == (ssize_t)len);
    close(fd);
    return t->last;
}

static int load_text(struct tdir *t, const char *text, struct psconf *c, char *err, size_t n)
{
    return psconf_load(write_conf(t, text), c, err, n);
}

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    return s;
}

/* Load the formatted text and expect an error at file:line (this configuration, or file if
 * not NULL; line 0: none) for key (NULL: none) whose message contains what. */
static void expect_err_in(struct tdir *t, const char *file, unsigned line, const char *key,
                          const char *what, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void expect_err_in(struct tdir *t, const char *file, unsigned line, const char *key,
                          const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vfmt(fmt, ap);
    va_end(ap);
    CU_ASSERT(text != NULL);
    if (!text) return;
    struct psconf c;
    char err[1024], want[PATH_MAX + 256];
    int rc = load_text(t, text, &c, err, sizeof err);
    CU_ASSERT(rc == -1);
    if (!file) file = t->last;
    int n;
    if (line)
        n = strf(want, sizeof want, "%s:%u: ", file, line);
    else
        n = strf(want, sizeof want, "%s: ", file);
    if (key) strf(want + n, sizeof want - (size_t)n, "%s: ", key);
    int ok = rc == -1 && strncmp(err, want, strlen(want)) == 0 &&
             strstr(err + strlen(want), what) != NULL;
    if (!ok)
        fprintf(stderr, "\n  config:\n%s  got:  %s\n  want: %s...%s...\n", text,
                rc == 0 ? "(loaded fine)" : err, want, what);
    CU_ASSERT(ok);
    /* a failed load leaves nothing to free */
    CU_ASSERT(c.nodes == NULL && c.nnodes == 0);
    if (rc == 0) psconf_free(&c);
    free(text);
}

#define expect_err(t, line, key, what, ...) expect_err_in(t, NULL, line, key, what, __VA_ARGS__)

static void hash_key(const void *bytes, size_t len, unsigned char out[32])
{
    CU_ASSERT(sodium_init() >= 0);
    crypto_generichash(out, 32, bytes, len, NULL, 0);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
    return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static const char *ip_of(const struct sockaddr_storage *ss, char *buf)
{
    return inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, INET_ADDRSTRLEN);
}

/* ---- valid configurations ---- */

static void test_minimal_defaults(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    struct psconf c;
    char err[512], ip[INET_ADDRSTRLEN];
    int rc = load_text(&t, KEYREL NODE0, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err);
    if (rc == 0) {
        CU_ASSERT_STRING_EQUAL(c.path, t.last);
        CU_ASSERT_STRING_EQUAL(c.cluster, "pscluster");
        CU_ASSERT_STRING_EQUAL(c.key_file, t.key); /* relative to the file's directory */
        unsigned char h[32];
        hash_key(t.keybytes, sizeof t.keybytes, h);
        CU_ASSERT(memcmp(c.key, h, 32) == 0);
        CU_ASSERT_EQUAL(c.log_level, PSCONF_LOG_NOTICE);
        CU_ASSERT_EQUAL(c.rdp_port, 4886);
        CU_ASSERT_EQUAL(c.mtu, 1500);
        CU_ASSERT_EQUAL(c.rto_min_us, 2000);
        CU_ASSERT_EQUAL(c.rto_max_us, 200000);
        CU_ASSERT_EQUAL(c.rto_init_us, 20000);
        CU_ASSERT_EQUAL(c.max_retrans, 10);
        CU_ASSERT_EQUAL(c.ack_delay_us, 100);
        CU_ASSERT_EQUAL(c.sndbuf, 4194304);
        CU_ASSERT_EQUAL(c.rcvbuf, 4194304);
        CU_ASSERT_EQUAL(c.sock_buf, 8388608);
        CU_ASSERT_EQUAL(c.offload, 1);
        CU_ASSERT_EQUAL(c.mac, RDP_MAC_AUTO);
        CU_ASSERT_EQUAL(c.mac_impl, RDP_MAC_IMPL_BEST);
        CU_ASSERT_EQUAL(c.hb_interval_ms, 100);
        CU_ASSERT_EQUAL(c.hb_dead_limit, 8);
        CU_ASSERT_EQUAL(c.hb_down_grace_ms, 10000);
        CU_ASSERT_EQUAL(c.hb_mode, PSCONF_HB_MULTICAST);
        CU_ASSERT_EQUAL(c.hb_port, 4887);
        CU_ASSERT_EQUAL(c.hb_group.sin_family, AF_INET);
        CU_ASSERT_EQUAL(ntohs(c.hb_group.sin_port), 4887);
        CU_ASSERT_STRING_EQUAL(inet_ntop(AF_INET, &c.hb_group.sin_addr, ip, sizeof ip),
                               "239.255.88.6");
        CU_ASSERT_STRING_EQUAL(c.socket_fmt, "/run/pscluster/psid.sock");
        CU_ASSERT_EQUAL(c.kill_delay_ms, 10000);
        CU_ASSERT_EQUAL(c.gang_quantum_ms, 0); /* gang scheduling off */
        CU_ASSERT_EQUAL(c.gang_mpl, 2);
        CU_ASSERT_EQUAL(c.nnodes, 1);
        if (c.nnodes == 1) {
            const struct psconf_node *n = &c.nodes[0];
            CU_ASSERT_EQUAL(n->id, 0);
            CU_ASSERT_STRING_EQUAL(n->name, "n0");
            CU_ASSERT_STRING_EQUAL(n->addr_str, "10.0.0.1");
            CU_ASSERT_EQUAL(n->addr.ss_family, AF_INET);
            CU_ASSERT_EQUAL(n->addrlen, sizeof(struct sockaddr_in));
            CU_ASSERT_STRING_EQUAL(ip_of(&n->addr, ip), "10.0.0.1");
            CU_ASSERT_EQUAL(port_of(&n->addr), 4886);
            CU_ASSERT_EQUAL(n->cpus, 1);
            CU_ASSERT_EQUAL(n->line, 2);
        }
        /* the same values psconf_defaults() gives, apart from what the file and key set */
        struct psconf d;
        psconf_defaults(&d);
        CU_ASSERT_EQUAL(d.rdp_port, c.rdp_port);
        CU_ASSERT_EQUAL(d.sock_buf, c.sock_buf);
        CU_ASSERT(memcmp(&d.hb_group, &c.hb_group, sizeof d.hb_group) == 0);
        CU_ASSERT_STRING_EQUAL(d.socket_fmt, c.socket_fmt);
        psconf_free(&c);
        /* freed: zeroed, key wiped; a second free is harmless */
        CU_ASSERT(c.nodes == NULL && c.nnodes == 0 && c.key[0] == 0 && c.key[31] == 0);
        psconf_free(&c);
    }
    tdir_close(&t);
}

static const char full_conf[] =
    "# every key, none at its default\n"
    "cluster = \"test-cluster.1\";\n"
    "key_file = \"%s\";\n"
    "log_level = \"debug\";\n"
    "rdp = {\n"
    "  port = 5000;\n"
    "  mtu = 65536;\n"
    "  rto_min_us = 500;\n"
    "  rto_max_us = 1000000;\n"
    "  rto_init_us = 0x2710; // 10000\n"
    "  max_retrans = 20;\n"
    "  ack_delay_us = 0;\n"
    "  sndbuf = 1073741824;\n"
    "  rcvbuf = 65536L;\n"
    "  sock_buf = 16777216;\n"
    "  offload = false; mac = \"chacha20poly1305\"; mac_impl = \"portable\";\n"
    "};\n"
    "heartbeat = { interval_ms = 50; dead_limit = 4; down_grace_ms = 2500; mode = \"unicast\";\n"
    "  group = \"10.9.9.9\"; port = 5001; };\n"
    "psid = { socket = \"/tmp/ps%%%%-%%n.sock\"; kill_delay_ms = 0; };"
    " gang = { quantum_ms = 20; mpl = 3; };\n"
    "nodes = (\n"
    "  { id = 7; name = \"c\"; address = \"127.0.0.3\"; cpus = 4096; },\n"
    "  { id = 2; name = \"a\"; address = \"127.0.0.1\"; },\n"
    "  /* a comment */ { id = 65535; name = \"z.Z_-9\"; address = \"192.168.1.1\";\n"
    "    cpus = 8; }\n"
    ");\n";

static void test_full(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    char *text, err[512], ip[INET_ADDRSTRLEN];
    CU_ASSERT(asprintf(&text, full_conf, t.key) > 0);
    struct psconf c;
    int rc = load_text(&t, text, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err);
    if (rc == 0) {
        CU_ASSERT_STRING_EQUAL(c.cluster, "test-cluster.1");
        CU_ASSERT_STRING_EQUAL(c.key_file, t.key);
        CU_ASSERT_EQUAL(c.log_level, PSCONF_LOG_DEBUG);
        CU_ASSERT_EQUAL(c.rdp_port, 5000);
        CU_ASSERT_EQUAL(c.mtu, 65536);
        CU_ASSERT_EQUAL(c.rto_min_us, 500);
        CU_ASSERT_EQUAL(c.rto_max_us, 1000000);
        CU_ASSERT_EQUAL(c.rto_init_us, 10000);
        CU_ASSERT_EQUAL(c.max_retrans, 20);
        CU_ASSERT_EQUAL(c.ack_delay_us, 0);
        CU_ASSERT_EQUAL(c.sndbuf, 1073741824);
        CU_ASSERT_EQUAL(c.rcvbuf, 65536);
        CU_ASSERT_EQUAL(c.sock_buf, 16777216);
        CU_ASSERT_EQUAL(c.offload, 0);
        CU_ASSERT_EQUAL(c.mac, RDP_MAC_CHACHA20POLY1305);
        CU_ASSERT_EQUAL(c.mac_impl, RDP_MAC_IMPL_PORTABLE);
        CU_ASSERT_EQUAL(c.hb_interval_ms, 50);
        CU_ASSERT_EQUAL(c.hb_dead_limit, 4);
        CU_ASSERT_EQUAL(c.hb_down_grace_ms, 2500);
        CU_ASSERT_EQUAL(c.hb_mode, PSCONF_HB_UNICAST);
        CU_ASSERT_EQUAL(c.hb_port, 5001);
        CU_ASSERT_EQUAL(ntohs(c.hb_group.sin_port), 5001);
        CU_ASSERT_STRING_EQUAL(inet_ntop(AF_INET, &c.hb_group.sin_addr, ip, sizeof ip), "10.9.9.9");
        CU_ASSERT_STRING_EQUAL(c.socket_fmt, "/tmp/ps%%-%n.sock");
        CU_ASSERT_EQUAL(c.kill_delay_ms, 0);
        CU_ASSERT_EQUAL(c.gang_quantum_ms, 20);
        CU_ASSERT_EQUAL(c.gang_mpl, 3);
        CU_ASSERT_EQUAL(c.nnodes, 3);
        if (c.nnodes == 3) { /* sorted by id */
            CU_ASSERT_EQUAL(c.nodes[0].id, 2);
            CU_ASSERT_STRING_EQUAL(c.nodes[0].name, "a");
            CU_ASSERT_EQUAL(c.nodes[0].cpus, 1);
            CU_ASSERT_EQUAL(c.nodes[0].line, 23);
            CU_ASSERT_EQUAL(c.nodes[1].id, 7);
            CU_ASSERT_STRING_EQUAL(c.nodes[1].addr_str, "127.0.0.3");
            CU_ASSERT_EQUAL(c.nodes[1].cpus, 4096);
            CU_ASSERT_EQUAL(c.nodes[1].line, 22);
            CU_ASSERT_EQUAL(c.nodes[2].id, 65535);
            CU_ASSERT_STRING_EQUAL(c.nodes[2].name, "z.Z_-9");
            CU_ASSERT_EQUAL(c.nodes[2].cpus, 8);
            CU_ASSERT_EQUAL(port_of(&c.nodes[2].addr), 5000);
        }
        char sock[128];
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 7, sock, sizeof sock), 0);
        CU_ASSERT_STRING_EQUAL(sock, "/tmp/ps%-7.sock");
        psconf_free(&c);
    }
    free(text);
    tdir_close(&t);
}

static void test_include(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    char inc[PATH_MAX + 16], err[512];
    strf(inc, sizeof inc, "%s/nodes.inc", t.dir);
    const char *good = "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
                       "          { id = 1; name = \"n1\"; address = \"10.0.0.2\"; } );\n";
    write_file(inc, good, strlen(good), 0644);
    struct psconf c;
    int rc = load_text(&t, KEYREL "@include \"nodes.inc\"\n", &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc == 0) {
        CU_ASSERT_EQUAL(c.nnodes, 2);
        psconf_free(&c);
    }
    /* an error inside the included file names that file */
    const char *bad =
        "\n\nnodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; x = 1; } );\n";
    write_file(inc, bad, strlen(bad), 0644);
    expect_err_in(&t, inc, 3, "nodes[0].x", "unknown key", KEYREL "@include \"nodes.inc\"\n");
    const char *big = "\nnodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\";\n"
                      "  cpus = 4294967297; } );\n";
    write_file(inc, big, strlen(big), 0644);
    expect_err_in(&t, inc, 3, "nodes[0].cpus", "4294967297 out of range 1..4096",
                  KEYREL "@include \"nodes.inc\"\n");
    tdir_close(&t);
}

/* ---- errors ---- */

static void test_err_syntax_and_file(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 3, NULL, "syntax error", KEYREL NODE0 "cluster = ;\n");
    expect_err(&t, 1, NULL, "duplicate setting", "cluster = \"a\"; cluster = \"b\";\n");
    expect_err(&t, 1, NULL, "include", "@include \"does-not-exist.conf\"\n");

    struct psconf c;
    char err[512], path[PATH_MAX + 32];
    strf(path, sizeof path, "%s/missing.conf", t.dir);
    CU_ASSERT_EQUAL(psconf_load(path, &c, err, sizeof err), -1);
    char want[PATH_MAX + 64];
    strf(want, sizeof want, "%s: No such file or directory", path);
    CU_ASSERT_STRING_EQUAL(err, want);
    CU_ASSERT(c.nodes == NULL);

    CU_ASSERT_EQUAL(psconf_load(t.dir, &c, err, sizeof err), -1);
    strf(want, sizeof want, "%s: is a directory", t.dir);
    CU_ASSERT_STRING_EQUAL(err, want);

    CU_ASSERT_EQUAL(psconf_load("", &c, err, sizeof err), -1);
    CU_ASSERT(strstr(err, "no configuration file") != NULL);
    tdir_close(&t);
}

static void test_err_unknown_key(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 4, "rdp.mtuu", "unknown key", KEYREL NODE0 "rdp = {\n  mtuu = 1500;\n};\n");
    expect_err(&t, 1, "clustr", "unknown key", "clustr = \"x\";\n" KEYREL NODE0);
    expect_err(&t, 2, "heartbeat.groups", "unknown key",
               KEYREL "heartbeat = { port = 1; groups = 2; };\n" NODE0);
    expect_err(&t, 2, "psid.sock", "unknown key", KEYREL "psid = { sock = \"/x\"; };\n" NODE0);
    expect_err(&t, 3, "nodes[1].adress", "unknown key",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
                      "  { id = 1; name = \"n1\"; adress = \"10.0.0.2\"; } );\n");
    /* a big value under an unknown key is still an unknown key */
    expect_err(&t, 3, "extra", "unknown key", KEYREL NODE0 "extra = 99999999999;\n");
    tdir_close(&t);
}

static void test_err_types(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 2, "rdp.port", "wrong type: expected integer, got string",
               KEYREL "rdp = { port = \"4886\"; };\n" NODE0);
    expect_err(&t, 2, "rdp.mtu", "expected integer, got float",
               KEYREL "rdp = { mtu = 1500.0; };\n" NODE0);
    expect_err(&t, 2, "heartbeat.dead_limit", "expected integer, got boolean",
               KEYREL "heartbeat = { dead_limit = true; };\n" NODE0);
    expect_err(&t, 2, "rdp.offload", "wrong type: expected true or false, got integer",
               KEYREL "rdp = { offload = 1; };\n" NODE0);
    expect_err(&t, 3, "rdp.offload", "wrong type: expected true or false, got string",
               KEYREL "rdp = {\n offload = \"yes\"; };\n" NODE0);
    expect_err(&t, 2, "rdp.mac", "is not a MAC choice (auto, chacha20poly1305, aes256gcm)",
               KEYREL "rdp = { mac = \"poly\"; };\n" NODE0);
    expect_err(&t, 3, "rdp.mac_impl", "is not a MAC implementation (best, portable, ipsec-mb)",
               KEYREL "rdp = {\n mac_impl = \"fast\"; };\n" NODE0);
    expect_err(&t, 2, "rdp.mac_impl", "wrong type: expected string, got integer",
               KEYREL "rdp = { mac_impl = 1; };\n" NODE0);
    expect_err(&t, 1, "cluster", "wrong type: expected string, got integer",
               "cluster = 5;\n" KEYREL NODE0);
    expect_err(&t, 2, "rdp", "wrong type: expected group", KEYREL "rdp = 5;\n" NODE0);
    expect_err(&t, 2, "psid", "expected group {...}, got list", KEYREL "psid = ( 1 );\n" NODE0);
    expect_err(&t, 3, "gang.quantum_ms", "wrong type: expected integer, got string",
               KEYREL "gang = {\n quantum_ms = \"20ms\"; };\n" NODE0);
    expect_err(&t, 2, "gang.mpl", "expected integer, got float",
               KEYREL "gang = { mpl = 2.5; };\n" NODE0);
    expect_err(&t, 2, "gang.slice", "unknown key", KEYREL "gang = { slice = 1; };\n" NODE0);
    expect_err(&t, 2, "nodes", "wrong type: expected list", KEYREL "nodes = { id = 0; };\n");
    expect_err(&t, 2, "nodes", "wrong type: expected list", KEYREL "nodes = [ 1, 2 ];\n");
    expect_err(&t, 2, "nodes[1]", "wrong type: expected group {...}, got integer",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; }, 7 );\n");
    expect_err(&t, 2, "nodes[0].address", "expected string, got array",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = [1]; } );\n");
    expect_err(&t, 2, "key_file", "expected string, got integer", "\nkey_file = 1;\n" NODE0);
    tdir_close(&t);
}

struct range_case {
    const char *group, *key;
    long long min, max;
};

static void test_err_ranges(void)
{
    static const struct range_case cases[] = {
        {"rdp", "port", 1, 65535},
        {"rdp", "mtu", 576, 65536},
        {"rdp", "rto_min_us", 100, 10000000},
        {"rdp", "rto_max_us", 100, 10000000},
        {"rdp", "rto_init_us", 100, 10000000},
        {"rdp", "max_retrans", 1, 1000},
        {"rdp", "ack_delay_us", 0, 100000},
        {"rdp", "sndbuf", 65536, 1073741824},
        {"rdp", "rcvbuf", 65536, 1073741824},
        {"rdp", "sock_buf", 65536, 1073741824},
        {"heartbeat", "interval_ms", 10, 60000},
        {"heartbeat", "dead_limit", 2, 1000},
        {"heartbeat", "down_grace_ms", 0, 3600000},
        {"heartbeat", "port", 1, 65535},
        {"psid", "kill_delay_ms", 0, 3600000},
        {"psid", "max_clients", 16, 1000000},
        {"psid", "max_clients_per_uid", 1, 1000000},
        {"psid", "client_idle_s", 0, 86400},
        {"psid", "done_jobs", 0, 100000},
        {"psid", "tree_width", 1, 65536},
        {"psid", "bcast_width", 1, 65536},
        {"pmi", "tree_width", 1, 4096},
        {"pmi", "max_kvs_bytes", 65536, 1073741824},
        {"pmi", "max_kvs_keys", 16, 100000000},
        {"gang", "quantum_ms", 0, 3600000},
        {"gang", "mpl", 1, 64},
        {"nodes", "id", 0, 65535},
        {"nodes", "cpus", 1, 4096},
    };
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct range_case *r = &cases[i];
        long long bad[] = {r->min - 1, r->max + 1};
        for (int b = 0; b < 2; b++) {
            char what[128], key[64];
            strf(what, sizeof what, "%lld out of range %lld..%lld", bad[b], r->min, r->max);
            if (strcmp(r->group, "nodes") != 0) {
                strf(key, sizeof key, "%s.%s", r->group, r->key);
                expect_err(&t, 3, key, what, KEYREL "\n%s = { %s = %lld; };\n" NODE0, r->group,
                           r->key, bad[b]);
            } else if (strcmp(r->key, "id") == 0) {
                expect_err(&t, 2, "nodes[0].id", what,
                           KEYREL "nodes = ( { name = \"n0\"; address = \"10.0.0.1\"; id = %lld; "
                                  "} );\n",
                           bad[b]);
            } else {
                expect_err(&t, 3, "nodes[0].cpus", what,
                           KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\";\n"
                                  "cpus = %lld; } );\n",
                           bad[b]);
            }
        }
    }
    /* 64-bit values: with L suffix, and values libconfig would truncate to a valid one */
    expect_err(&t, 2, "rdp.sndbuf", "8589934592 out of range 65536..1073741824",
               KEYREL "rdp = { sndbuf = 8589934592L; };\n" NODE0);
    expect_err(&t, 2, "rdp.port", "4294972182 out of range 1..65535",
               KEYREL "rdp = { port = 4294972182; };\n" NODE0);
    expect_err(&t, 2, "rdp.port", "0x100001316 out of range",
               KEYREL "rdp = { port = 0x100001316; };\n" NODE0);
    expect_err(&t, 2, "rdp.port", "0xFFFFFFFF out of range",
               KEYREL "rdp = { port = 0xFFFFFFFF; };\n" NODE0);
    expect_err(&t, 2, "rdp.port", "-4294962410 out of range",
               KEYREL "rdp = { port = -4294962410; };\n" NODE0);
    expect_err(&t, 2, "rdp.mtu", "out of range 576..65536",
               KEYREL "rdp = { mtu = 99999999999999999999999999; };\n" NODE0);
    /* the value on a later line than its key */
    expect_err(&t, 2, "rdp.port", "4294972182 out of range",
               KEYREL "rdp = { port =\n\n 4294972182; };\n" NODE0);
    /* big numbers in comments and strings are not values */
    struct psconf c;
    char err[512];
    int rc = load_text(&t,
                       KEYREL "# port = 4294972182\ncluster = \"c4294972182\"; /* 99999999999 */\n"
                              "rdp = { sndbuf = 4294967296L; sock_buf = 65536; mtu = 1500; }; "
                              "// 4294967296\n" NODE0,
                       &c, err, sizeof err);
    CU_ASSERT(rc == -1 && strstr(err, "rdp.sndbuf: 4294967296 out of range") != NULL);
    rc = load_text(&t,
                   KEYREL "# port = 4294972182\ncluster = \"c4294972182\"; /* 99999999999 */\n"
                          "rdp = { sndbuf = 65536L; mtu = 1500; }; // 4294967296\n" NODE0,
                   &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc == 0) {
        CU_ASSERT_EQUAL(c.sndbuf, 65536);
        psconf_free(&c);
    } else {
        fprintf(stderr, "\n  %s\n", err);
    }
    tdir_close(&t);
}

static void test_err_missing(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 0, "key_file", "missing", NODE0);
    expect_err(&t, 0, "nodes", "missing", KEYREL);
    expect_err(&t, 4, "nodes[0].id", "missing",
               KEYREL "nodes = (\n\n  {\n    name = \"n0\";\n    address = \"10.0.0.1\"; } );\n");
    expect_err(&t, 2, "nodes[1].name", "missing",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },"
                      " { id = 1; address = \"10.0.0.2\"; } );\n");
    expect_err(&t, 2, "nodes[0].address", "missing",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; } );\n");
    expect_err(&t, 2, "nodes", "at least one node", KEYREL "nodes = ();\n");
    tdir_close(&t);
}

static void test_err_duplicates(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 5, "nodes[2].id", "duplicate id 1: already used by nodes[1] at line 4",
               KEYREL "nodes = (\n"
                      "  { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
                      "  { id = 1; name = \"n1\"; address = \"10.0.0.2\"; },\n"
                      "  { id = 1; name = \"n2\"; address = \"10.0.0.3\"; }\n);\n");
    expect_err(&t, 5, "nodes[2].name", "duplicate name \"n0\": already used by nodes[0] at line 2",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
                      "  { id = 1; name = \"n1\"; address = \"10.0.0.2\"; },\n"
                      "  { id = 2;\n    name = \"n0\"; address = \"10.0.0.3\"; }\n);\n");
    expect_err(&t, 3, "nodes[1].address",
               "duplicate address 10.0.0.1: already used by nodes[0] at line 2",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
                      "  { id = 1; name = \"n1\"; address = \"10.0.0.1\"; },\n"
                      "  { id = 1; name = \"n2\"; address = \"10.0.0.3\"; }\n);\n");
    tdir_close(&t);
}

static void test_err_values(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 2, "nodes[0].address", "\"10.0.0.256\": not an IPv4 address",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"10.0.0.256\"; } );\n");
    expect_err(&t, 2, "nodes[0].address", "not an IPv4 address",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"host.example\"; } );\n");
    expect_err(&t, 2, "nodes[0].address", "IPv6 addresses are not supported",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"fe80::1\"; } );\n");
    expect_err(&t, 2, "nodes[0].address", "not a unicast address",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"239.1.1.1\"; } );\n");
    expect_err(&t, 2, "nodes[0].address", "not a unicast address",
               KEYREL "nodes = ( { id = 0; name = \"n0\"; address = \"0.0.0.0\"; } );\n");
    expect_err(&t, 2, "nodes[0].name", "may only hold",
               KEYREL "nodes = ( { id = 0; name = \"n 0\"; address = \"10.0.0.1\"; } );\n");
    expect_err(&t, 2, "nodes[0].name", "empty name",
               KEYREL "nodes = ( { id = 0; name = \"\"; address = \"10.0.0.1\"; } );\n");
    expect_err(&t, 2, "nodes[0].name", "must not be all digits",
               KEYREL "nodes = ( { id = 0; name = \"17\"; address = \"10.0.0.1\"; } );\n");
    expect_err(&t, 2, "nodes[0].name", "longer than 63",
               KEYREL "nodes = ( { id = 0; name = \"%064d\"; address = \"10.0.0.1\"; } );\n", 1);
    expect_err(&t, 1, "cluster", "may only hold", "cluster = \"a/b\";\n" KEYREL NODE0);
    expect_err(&t, 1, "log_level", "\"verbose\" is not a log level",
               "log_level = \"verbose\";\n" KEYREL NODE0);
    expect_err(&t, 2, "heartbeat.mode", "\"broadcast\" is not a mode (multicast, unicast, swim)",
               KEYREL "heartbeat = { mode = \"broadcast\"; };\n" NODE0);
    expect_err(&t, 2, "heartbeat.mode", "\"SWIM\" is not a mode",
               KEYREL "heartbeat = { mode = \"SWIM\"; };\n" NODE0);
    {
        /* swim needs no multicast group, whatever group says */
        struct psconf c;
        char err[512];
        int rc =
            load_text(&t, KEYREL "heartbeat = { mode = \"swim\"; group = \"10.1.1.1\"; };\n" NODE0,
                      &c, err, sizeof err);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc == 0) {
            CU_ASSERT_EQUAL(c.hb_mode, PSCONF_HB_SWIM);
            psconf_free(&c);
        } else {
            fprintf(stderr, "\n  %s\n", err);
        }
    }
    expect_err(&t, 2, "heartbeat.group", "\"239.1.1\" is not an IPv4 address",
               KEYREL "heartbeat = { group = \"239.1.1\"; };\n" NODE0);
    expect_err(&t, 1, "key_file", "empty path", "key_file = \"\";\n" NODE0);
    expect_err(&t, 2, "rdp.mac", "\"md5\" is not a MAC",
               KEYREL "rdp = { mac = \"md5\"; };\n" NODE0);
    tdir_close(&t);
}

static void test_err_cross(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    expect_err(&t, 3, "rdp.rto_min_us", "rto_min_us (300000) is larger than rto_max_us (200000)",
               KEYREL NODE0 "rdp = { rto_min_us = 300000; };\n");
    expect_err(&t, 3, "rdp.rto_max_us", "larger than rto_max_us (1000)",
               KEYREL NODE0 "rdp = { rto_max_us = 1000; };\n");
    expect_err(&t, 3, "rdp.rto_init_us", "rto_init_us (1000) must lie between",
               KEYREL NODE0 "rdp = { rto_init_us = 1000; };\n");
    expect_err(&t, 3, "rdp.rto_max_us", "must lie between rto_min_us (2000) and rto_max_us (10000)",
               KEYREL NODE0 "rdp = { rto_max_us = 10000; };\n");
    expect_err(&t, 3, "heartbeat.group", "10.1.2.3 is not a multicast address",
               KEYREL NODE0 "heartbeat = { group = \"10.1.2.3\"; };\n");
    expect_err(&t, 3, "heartbeat.port", "need different ports",
               KEYREL NODE0 "heartbeat = { port = 4886; };\n");
    expect_err(&t, 3, "rdp.port", "need different ports", KEYREL NODE0 "rdp = { port = 4887; };\n");
    expect_err(&t, 3, "psid.socket", "must be an absolute path",
               KEYREL NODE0 "psid = { socket = \"psid.sock\"; };\n");
    expect_err(&t, 3, "psid.socket", "bad % sequence",
               KEYREL NODE0 "psid = { socket = \"/run/psid-%%d.sock\"; };\n");
    expect_err(&t, 3, "psid.socket", "bad % sequence",
               KEYREL NODE0 "psid = { socket = \"/run/psid%%\"; };\n");
    /* 99 + 1 + 5 + 3 = 108 characters for node 65535: one too many */
    char dir[100];
    memset(dir, 'd', sizeof dir - 1);
    dir[0] = '/';
    dir[sizeof dir - 1] = '\0';
    expect_err(&t, 2, "psid.socket", "expands to 108 characters for node 65535",
               KEYREL "psid = { socket = \"%s/%%n.so\"; };\n"
                      "nodes = ( { id = 65535; name = \"n\"; address = \"10.0.0.1\"; } );\n",
               dir);
    /* one shorter fits exactly: 107 characters and the NUL */
    dir[sizeof dir - 2] = '\0';
    char *text;
    CU_ASSERT(asprintf(&text,
                       KEYREL
                       "psid = { socket = \"%s/%%n.so\"; };\n"
                       "nodes = ( { id = 65535; name = \"n\"; address = \"10.0.0.1\"; } );\n",
                       dir) > 0);
    struct psconf c;
    char err[512], sock[128];
    CU_ASSERT_EQUAL(load_text(&t, text, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(psconf_socket_path(&c, 65535, sock, sizeof sock), 0);
    CU_ASSERT_EQUAL(strlen(sock), 107);
    psconf_free(&c);
    free(text);
    tdir_close(&t);
}

static void test_err_keyfile(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    char p[PATH_MAX + 32], what[PATH_MAX + 64];

    strf(p, sizeof p, "%s/none.key", t.dir);
    strf(what, sizeof what, "%s: No such file or directory", p);
    expect_err(&t, 2, "key_file", what, "\nkey_file = \"none.key\";\n" NODE0);

    strf(p, sizeof p, "%s/short.key", t.dir);
    write_file(p, "0123456789012345678901234567890", 31, 0600);
    strf(what, sizeof what, "%s: 31 bytes, a key needs at least 32", p);
    expect_err(&t, 1, "key_file", what, "key_file = \"%s\";\n" NODE0, p);

    static const mode_t modes[] = {0644, 0640, 0604, 0602, 0620, 0660};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        CU_ASSERT(chmod(t.key, modes[i]) == 0);
        strf(what, sizeof what, "%s: mode %04o lets group or others at the key; run chmod 600",
             t.key, (unsigned)modes[i]);
        expect_err(&t, 1, "key_file", what, KEYREL NODE0);
    }
    CU_ASSERT(chmod(t.key, 0400) == 0); /* owner-only is fine */
    struct psconf c;
    char err[512];
    CU_ASSERT_EQUAL(load_text(&t, KEYREL NODE0, &c, err, sizeof err), 0);
    psconf_free(&c);
    CU_ASSERT(chmod(t.key, 0600) == 0);

    strf(p, sizeof p, "%s/keydir", t.dir);
    CU_ASSERT(mkdir(p, 0700) == 0);
    strf(what, sizeof what, "%s: not a regular file", p);
    expect_err(&t, 1, "key_file", what, "key_file = \"keydir\";\n" NODE0);

    static unsigned char big[5000];
    strf(p, sizeof p, "%s/big.key", t.dir);
    write_file(p, big, sizeof big, 0600);
    expect_err(&t, 1, "key_file", "longer than 4096 bytes", "key_file = \"big.key\";\n" NODE0);

    if (geteuid() != 0) { /* root reads anything */
        strf(p, sizeof p, "%s/locked.key", t.dir);
        write_file(p, big, 32, 0000);
        expect_err(&t, 1, "key_file", "Permission denied", "key_file = \"locked.key\";\n" NODE0);
    }

    /* a longer key file of any content is hashed as a whole */
    strf(p, sizeof p, "%s/text.key", t.dir);
    const char *textkey = "correct horse battery staple, and then some more words\n";
    write_file(p, textkey, strlen(textkey), 0600);
    int rc = load_text(&t, "key_file = \"text.key\";\n" NODE0, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc == 0) {
        unsigned char h[32];
        hash_key(textkey, strlen(textkey), h);
        CU_ASSERT(memcmp(c.key, h, 32) == 0);
        psconf_free(&c);
    }
    tdir_close(&t);
}

static void test_err_buffers(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    struct psconf c;
    char small[8];
    memset(small, 'x', sizeof small);
    CU_ASSERT_EQUAL(load_text(&t, KEYREL "rdp = { mtuu = 1; };\n" NODE0, &c, small, sizeof small),
                    -1);
    CU_ASSERT_EQUAL(strlen(small), sizeof small - 1);
    CU_ASSERT_EQUAL(load_text(&t, KEYREL "rdp = { mtuu = 1; };\n" NODE0, &c, NULL, 0), -1);
    CU_ASSERT_EQUAL(load_text(&t, KEYREL NODE0, &c, NULL, 0), 0);
    psconf_free(&c);
    tdir_close(&t);
}

/* ---- the API on a loaded configuration ---- */

static const char four_nodes[] =
    KEYREL "psid = { socket = \"/run/ps/%%n-%n.sock\"; };\n"
           "nodes = (\n"
           "  { id = 3; name = \"n3\"; address = \"10.0.0.4\"; cpus = 4; },\n"
           "  { id = 0; name = \"n0\"; address = \"10.0.0.1\"; },\n"
           "  { id = 10; name = \"head\"; address = \"192.168.7.1\"; },\n"
           "  { id = 1; name = \"n1\"; address = \"10.0.0.2\"; }\n"
           ");\n";

static int load_four(struct tdir *t, struct psconf *c)
{
    char err[512];
    int rc = load_text(t, four_nodes, c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err);
    return rc;
}

static void test_lookup(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    struct psconf c;
    if (load_four(&t, &c) == 0) {
        for (uint32_t id = 0; id <= 11; id++) {
            const struct psconf_node *n = psconf_node_by_id(&c, id);
            int exists = id == 0 || id == 1 || id == 3 || id == 10;
            CU_ASSERT_EQUAL(n != NULL, exists);
            if (n) CU_ASSERT_EQUAL(n->id, id);
        }
        CU_ASSERT(psconf_node_by_id(&c, 65535) == NULL);
        CU_ASSERT(psconf_node_by_name(&c, "head") == psconf_node_by_id(&c, 10));
        CU_ASSERT(psconf_node_by_name(&c, "n3")->cpus == 4);
        CU_ASSERT(psconf_node_by_name(&c, "n2") == NULL);
        CU_ASSERT(psconf_node_by_name(&c, "") == NULL);

        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1234)};
        inet_pton(AF_INET, "10.0.0.4", &sin.sin_addr);
        CU_ASSERT(psconf_node_by_addr(&c, (struct sockaddr *)&sin) == psconf_node_by_id(&c, 3));
        inet_pton(AF_INET, "10.0.0.5", &sin.sin_addr);
        CU_ASSERT(psconf_node_by_addr(&c, (struct sockaddr *)&sin) == NULL);
        struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
        CU_ASSERT(psconf_node_by_addr(&c, (struct sockaddr *)&sin6) == NULL);
        CU_ASSERT(psconf_node_by_addr(&c, NULL) == NULL);

        CU_ASSERT(psconf_node_lookup(&c, "3") == psconf_node_by_id(&c, 3));
        CU_ASSERT(psconf_node_lookup(&c, "n3") == psconf_node_by_id(&c, 3));
        CU_ASSERT(psconf_node_lookup(&c, "10") == psconf_node_by_name(&c, "head"));
        CU_ASSERT(psconf_node_lookup(&c, "010") == psconf_node_by_name(&c, "head"));
        CU_ASSERT(psconf_node_lookup(&c, "head") == psconf_node_by_id(&c, 10));
        CU_ASSERT(psconf_node_lookup(&c, "2") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, "65536") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, "4294967296") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, "-1") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, "3x") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, "") == NULL);
        CU_ASSERT(psconf_node_lookup(&c, NULL) == NULL);
        psconf_free(&c);
    }
    tdir_close(&t);
}

static void test_socket_path(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    struct psconf c;
    if (load_four(&t, &c) == 0) {
        char buf[128];
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 10, buf, sizeof buf), 0);
        CU_ASSERT_STRING_EQUAL(buf, "/run/ps/%n-10.sock");
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 65535, buf, sizeof buf), 0);
        CU_ASSERT_STRING_EQUAL(buf, "/run/ps/%n-65535.sock");
        /* exactly fits: 18 characters and the NUL */
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 10, buf, 19), 0);
        errno = 0;
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 10, buf, 18), -1);
        CU_ASSERT_EQUAL(errno, ENAMETOOLONG);
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 10, buf, 0), -1);

        /* longer than sun_path, however big the buffer */
        char big[512];
        memset(c.socket_fmt, 'a', 104);
        c.socket_fmt[0] = '/';
        strcpy(c.socket_fmt + 104, "%n");
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 999, big, sizeof big), 0);
        CU_ASSERT_EQUAL(strlen(big), 107);
        errno = 0;
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 1000, big, sizeof big), -1);
        CU_ASSERT_EQUAL(errno, ENAMETOOLONG);

        strcpy(c.socket_fmt, "/x/%q");
        errno = 0;
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 1, buf, sizeof buf), -1);
        CU_ASSERT_EQUAL(errno, EINVAL);
        strcpy(c.socket_fmt, "/x/%");
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 1, buf, sizeof buf), -1);
        strcpy(c.socket_fmt, "/x/%n%n%%");
        CU_ASSERT_EQUAL(psconf_socket_path(&c, 12, buf, sizeof buf), 0);
        CU_ASSERT_STRING_EQUAL(buf, "/x/1212%");
        psconf_free(&c);
    }
    tdir_close(&t);
}

static void test_rdp_config(void)
{
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    char *text, err[512], ip[INET_ADDRSTRLEN];
    CU_ASSERT(asprintf(&text, full_conf, t.key) > 0);
    struct psconf c;
    int rc = load_text(&t, text, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc == 0) {
        struct rdp_config r;
        memset(&r, 0xa5, sizeof r);
        CU_ASSERT_EQUAL(psconf_rdp_config(&c, 7, &r), 0);
        CU_ASSERT_EQUAL(r.node_id, 7);
        CU_ASSERT_EQUAL(r.bind.ss_family, AF_INET);
        CU_ASSERT_EQUAL(r.bind_len, sizeof(struct sockaddr_in));
        CU_ASSERT_STRING_EQUAL(ip_of(&r.bind, ip), "127.0.0.3");
        CU_ASSERT_EQUAL(port_of(&r.bind), 5000);
        CU_ASSERT(memcmp(r.key, c.key, RDP_KEY_BYTES) == 0);
        CU_ASSERT_EQUAL(r.mtu, 65536);
        CU_ASSERT_EQUAL(r.rto_min_us, 500);
        CU_ASSERT_EQUAL(r.rto_max_us, 1000000);
        CU_ASSERT_EQUAL(r.rto_init_us, 10000);
        CU_ASSERT_EQUAL(r.max_retrans, 20);
        CU_ASSERT_EQUAL(r.ack_delay_us, 0);
        CU_ASSERT_EQUAL(r.sndbuf, 1073741824);
        CU_ASSERT_EQUAL(r.rcvbuf, 65536);
        CU_ASSERT_EQUAL(r.sock_buf, 16777216);
        CU_ASSERT_EQUAL(r.mac, RDP_MAC_CHACHA20POLY1305);
        CU_ASSERT_EQUAL(r.mac_impl, RDP_MAC_IMPL_PORTABLE);
        CU_ASSERT_EQUAL(r.offload, 0);
        errno = 0;
        CU_ASSERT_EQUAL(psconf_rdp_config(&c, 8, &r), -1);
        CU_ASSERT_EQUAL(errno, ENOENT);
        psconf_free(&c);
    }
    free(text);
    tdir_close(&t);
}

static void test_names(void)
{
    static const char *const names[] = {"error", "warning", "notice", "info", "debug"};
    for (int i = 0; i < 5; i++) {
        enum psconf_log_level l = PSCONF_LOG_ERROR;
        CU_ASSERT_STRING_EQUAL(psconf_log_level_name((enum psconf_log_level)i), names[i]);
        CU_ASSERT_EQUAL(psconf_log_level_parse(names[i], &l), 0);
        CU_ASSERT_EQUAL((int)l, i);
    }
    enum psconf_log_level l;
    CU_ASSERT_EQUAL(psconf_log_level_parse("Debug", &l), -1);
    CU_ASSERT_STRING_EQUAL(psconf_log_level_name((enum psconf_log_level)99), "unknown");
    CU_ASSERT_STRING_EQUAL(psconf_hb_mode_name(PSCONF_HB_MULTICAST), "multicast");
    CU_ASSERT_STRING_EQUAL(psconf_hb_mode_name(PSCONF_HB_UNICAST), "unicast");
    CU_ASSERT_STRING_EQUAL(psconf_hb_mode_name(PSCONF_HB_SWIM), "swim");
}

static void test_fingerprint(void)
{
    struct psconf a, b;
    psconf_defaults(&a);
    psconf_defaults(&b);
    char fa[PSCONF_FINGERPRINT_LEN], fb[PSCONF_FINGERPRINT_LEN];
    psconf_key_fingerprint(&a, fa);
    psconf_key_fingerprint(&b, fb);
    CU_ASSERT_EQUAL(strlen(fa), 16);
    CU_ASSERT_STRING_EQUAL(fa, fb);
    b.key[31] ^= 1;
    psconf_key_fingerprint(&b, fb);
    CU_ASSERT_STRING_NOT_EQUAL(fa, fb);
    /* not a prefix of the key in hex */
    char hex[65];
    sodium_bin2hex(hex, sizeof hex, b.key, sizeof b.key);
    CU_ASSERT(strncmp(hex, fb, 16) != 0);
}

/* A large cluster loads quickly, is sorted, and a late duplicate is found. */
static void test_many_nodes(void)
{
    enum { N = 20000 };
    struct tdir t;
    if (tdir_open(&t) < 0) return;
    size_t cap = (size_t)N * 80 + 256, len = 0;
    char *text = malloc(cap);
    CU_ASSERT(text != NULL);
    if (!text) {
        tdir_close(&t);
        return;
    }
    len += (size_t)strf(text + len, cap - len, KEYREL "nodes = (\n");
    for (int i = 0; i < N; i++) {
        int id = (i * 7919) % N; /* a permutation: ids out of order */
        len += (size_t)strf(text + len, cap - len,
                            "{ id = %d; name = \"node%d\"; address = \"10.%d.%d.%d\"; }%s\n", id,
                            id, id >> 16, (id >> 8) & 255, (id & 255) + 0, i + 1 < N ? "," : "");
    }
    strf(text + len, cap - len, ");\n");
    /* address 10.0.0.0 is fine as a unicast host address here (not 0.0.0.0) */
    struct psconf c;
    char err[512];
    int rc = load_text(&t, text, &c, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err);
    if (rc == 0) {
        CU_ASSERT_EQUAL(c.nnodes, N);
        int sorted = 1, found = 1;
        for (size_t i = 0; i < c.nnodes; i++) {
            if (c.nodes[i].id != i) sorted = 0;
            const struct psconf_node *n = psconf_node_by_id(&c, (uint32_t)i);
            if (!n || n->id != i) found = 0;
        }
        CU_ASSERT(sorted);
        CU_ASSERT(found);
        CU_ASSERT(psconf_node_lookup(&c, "node12345") == psconf_node_by_id(&c, 12345));
        psconf_free(&c);
    }
    /* make the last entry repeat the first entry's name */
    char *last = strrchr(text, '{');
    char first_name[32];
    strf(first_name, sizeof first_name, "node%d", 0);
    char *q = strstr(last, "name = \"");
    if (q) {
        q += 8;
        char *end = strchr(q, '"');
        memmove(q + strlen(first_name), end, strlen(end) + 1);
        memcpy(q, first_name, strlen(first_name));
    }
    char what[128];
    strf(what, sizeof what, "duplicate name \"node0\": already used by nodes[0] at line 3");
    rc = load_text(&t, text, &c, err, sizeof err);
    char want[PATH_MAX + 128];
    strf(want, sizeof want, "%s:%d: nodes[%d].name: %s", t.last, N + 2, N - 1, what);
    CU_ASSERT_EQUAL(rc, -1);
    if (rc == 0) psconf_free(&c);
    CU_ASSERT_STRING_EQUAL(err, want);
    free(text);
    tdir_close(&t);
}

/* The shipped example (conf/psid.conf) loads, holds every key, and documents the defaults. */
static const char *find_example(void)
{
    static char path[PATH_MAX];
    const char *src = getenv("PSCLUSTER_SRCDIR");
    if (src && *src) {
        strf(path, sizeof path, "%s/conf/psid.conf", src);
        if (access(path, R_OK) == 0) return path;
    }
    if (access("conf/psid.conf", R_OK) == 0) return "conf/psid.conf";
    /* __FILE__ is test/unit/test_conf.c, relative to where make ran, or absolute */
    strf(path, sizeof path, "%s", __FILE__);
    char *p = strstr(path, "test/unit/test_conf.c");
    if (p) {
        strcpy(p, "conf/psid.conf");
        if (access(path, R_OK) == 0) return path;
    }
    /* the binary lives in BUILD/test/ inside the tree: look upwards from it */
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n > 0) {
        path[n] = '\0';
        for (int up = 0; up < 5; up++) {
            char *slash = strrchr(path, '/');
            if (!slash) break;
            strcpy(slash, "/conf/psid.conf");
            if (access(path, R_OK) == 0) return path;
            *slash = '\0';
        }
    }
    return NULL;
}

static void test_example(void)
{
    const char *ex = find_example();
    CU_ASSERT(ex != NULL);
    if (!ex) {
        fprintf(stderr, "\n  conf/psid.conf not found (set PSCLUSTER_SRCDIR)\n");
        return;
    }
    FILE *f = fopen(ex, "r");
    CU_ASSERT(f != NULL);
    if (!f) return;
    struct tdir t;
    if (tdir_open(&t) < 0) {
        fclose(f);
        return;
    }
    /* copy it, pointing key_file at the test key */
    size_t cap = 1 << 16, len = 0;
    char *text = calloc(1, cap), line[1024];
    int replaced = 0;
    while (text && fgets(line, sizeof line, f)) {
        if (strncmp(line, "key_file = ", 11) == 0) {
            strf(line, sizeof line, "key_file = \"%s\";\n", t.key);
            replaced++;
        }
        size_t l = strlen(line);
        if (len + l + 1 > cap) break;
        memcpy(text + len, line, l + 1);
        len += l;
    }
    fclose(f);
    CU_ASSERT_EQUAL(replaced, 1);
    static const char *const keys[] = {
        "cluster",       "key_file",      "log_level",    "rdp",
        "port",          "mtu",           "rto_min_us",   "rto_max_us",
        "rto_init_us",   "max_retrans",   "ack_delay_us", "sndbuf",
        "rcvbuf",        "sock_buf",      "mac",          "mac_impl",
        "offload",       "heartbeat",     "interval_ms",  "dead_limit",
        "down_grace_ms", "mode",          "group",        "psid",
        "socket",        "kill_delay_ms", "max_clients",  "max_clients_per_uid",
        "client_idle_s", "nodes",         "id",           "name",
        "address",       "cpus",          "pmi",          "tree_width",
        "max_kvs_bytes", "max_kvs_keys",  "gang",         "quantum_ms",
        "mpl",
    };
    for (size_t i = 0; text && i < sizeof keys / sizeof keys[0]; i++) {
        char pat[64];
        strf(pat, sizeof pat, "%s = ", keys[i]);
        int present = strstr(text, pat) != NULL;
        if (!present) fprintf(stderr, "\n  example lacks key %s\n", keys[i]);
        CU_ASSERT(present);
    }
    CU_ASSERT(text && strstr(text, "head -c 32 /dev/urandom") != NULL);
    CU_ASSERT(text && strstr(text, "chmod 600") != NULL);

    struct psconf c, d;
    char err[512];
    int rc = text ? load_text(&t, text, &c, err, sizeof err) : -1;
    CU_ASSERT_EQUAL(rc, 0);
    if (rc < 0) fprintf(stderr, "\n  %s\n", err);
    if (rc == 0) {
        psconf_defaults(&d);
        CU_ASSERT(c.nnodes >= 1);
        CU_ASSERT_STRING_EQUAL(c.cluster, d.cluster);
        CU_ASSERT_EQUAL(c.log_level, d.log_level);
        CU_ASSERT_EQUAL(c.rdp_port, d.rdp_port);
        CU_ASSERT_EQUAL(c.mtu, d.mtu);
        CU_ASSERT_EQUAL(c.rto_min_us, d.rto_min_us);
        CU_ASSERT_EQUAL(c.rto_max_us, d.rto_max_us);
        CU_ASSERT_EQUAL(c.rto_init_us, d.rto_init_us);
        CU_ASSERT_EQUAL(c.max_retrans, d.max_retrans);
        CU_ASSERT_EQUAL(c.ack_delay_us, d.ack_delay_us);
        CU_ASSERT_EQUAL(c.sndbuf, d.sndbuf);
        CU_ASSERT_EQUAL(c.rcvbuf, d.rcvbuf);
        CU_ASSERT_EQUAL(c.sock_buf, d.sock_buf);
        CU_ASSERT_EQUAL(c.mac, d.mac);
        CU_ASSERT_EQUAL(c.offload, d.offload);
        CU_ASSERT_EQUAL(c.hb_interval_ms, d.hb_interval_ms);
        CU_ASSERT_EQUAL(c.hb_dead_limit, d.hb_dead_limit);
        CU_ASSERT_EQUAL(c.hb_down_grace_ms, d.hb_down_grace_ms);
        CU_ASSERT_EQUAL(c.hb_mode, d.hb_mode);
        CU_ASSERT(memcmp(&c.hb_group, &d.hb_group, sizeof c.hb_group) == 0);
        CU_ASSERT_EQUAL(c.hb_port, d.hb_port);
        CU_ASSERT_STRING_EQUAL(c.socket_fmt, d.socket_fmt);
        CU_ASSERT_EQUAL(c.kill_delay_ms, d.kill_delay_ms);
        CU_ASSERT_EQUAL(c.max_clients, d.max_clients);
        CU_ASSERT_EQUAL(c.max_clients_uid, d.max_clients_uid);
        CU_ASSERT_EQUAL(c.client_idle_s, d.client_idle_s);
        CU_ASSERT_EQUAL(c.max_tasks_uid, d.max_tasks_uid);
        CU_ASSERT_STRING_EQUAL(c.user, d.user);
        CU_ASSERT_EQUAL(c.root_jobs, d.root_jobs);
        CU_ASSERT_EQUAL(c.cgroups, d.cgroups);
        CU_ASSERT_EQUAL(c.done_jobs, d.done_jobs);
        CU_ASSERT_EQUAL(c.tree_width, d.tree_width);
        CU_ASSERT_EQUAL(c.pmi_tree_width, d.pmi_tree_width);
        CU_ASSERT_EQUAL(c.pmi_max_kvs_bytes, d.pmi_max_kvs_bytes);
        CU_ASSERT_EQUAL(c.pmi_max_kvs_keys, d.pmi_max_kvs_keys);
        CU_ASSERT_EQUAL(c.gang_quantum_ms, d.gang_quantum_ms);
        CU_ASSERT_EQUAL(c.gang_mpl, d.gang_mpl);
        psconf_free(&c);
    }
    free(text);
    tdir_close(&t);
}

UNIT_SUITE(conf_load, UNIT_TEST(test_minimal_defaults), UNIT_TEST(test_full),
           UNIT_TEST(test_include), UNIT_TEST(test_example), UNIT_TEST(test_many_nodes))
UNIT_SUITE(conf_errors, UNIT_TEST(test_err_syntax_and_file), UNIT_TEST(test_err_unknown_key),
           UNIT_TEST(test_err_types), UNIT_TEST(test_err_ranges), UNIT_TEST(test_err_missing),
           UNIT_TEST(test_err_duplicates), UNIT_TEST(test_err_values), UNIT_TEST(test_err_cross),
           UNIT_TEST(test_err_keyfile), UNIT_TEST(test_err_buffers))
UNIT_SUITE(conf_api, UNIT_TEST(test_lookup), UNIT_TEST(test_socket_path),
           UNIT_TEST(test_rdp_config), UNIT_TEST(test_names), UNIT_TEST(test_fingerprint))
