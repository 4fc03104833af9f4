/*
 * opts.c - rdpbench's command line (see opts.h): the usage text, every option and its range.
 * RDP's tunables are checked against the library's limits here, so a bad value is a usage
 * error (exit 2) on either side before rdp_open would refuse it.
 */
#include "opts.h"

#include "addr.h"
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPT_BUF_MAX (1ull << 32) /* rdpbench's cap on --sndbuf, --rcvbuf, --sock-buf */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rdpbench server ADDR:PORT [options]\n"
            "       rdpbench client ADDR:PORT --mode pingpong|stream --size BYTES|MIN-MAX\n"
            "                --count N [options]\n"
            "\n"
            "The server listens on TCP ADDR:PORT (control) and binds RDP's UDP on ADDR:PORT;\n"
            "PORT 0 picks a free port (printed). The client connects, runs, and both verify\n"
            "every message (order, exactly once, every byte). Addresses are numeric\n"
            "(127.0.0.1:7000, [::1]:7000).\n"
            "\n"
            "client options:\n"
            "  --mode pingpong|stream   round trips (RTT) or one-way throughput\n"
            "  --size BYTES | MIN-MAX   message size, fixed or log-uniform random (1..%u)\n"
            "  --count N                measured round trips / messages sent\n"
            "  --warmup W               pingpong round trips not measured (default N/10, at\n"
            "                           most 100)\n"
            "  --seed S                 message contents and sizes (default: random)\n"
            "  --bind ADDR[:PORT]       client RDP address (default: the control connection's\n"
            "                           local address, port 0)\n"
            "  --vs-tcp                 then the same workload over kernel TCP, and the ratio\n"
            "  --json                   one JSON object on stdout (human output to stderr)\n"
            "server options:\n"
            "  --once                   exit after one client (status 1 if it failed)\n"
            "both:\n"
            "  --key FILE               cluster key = BLAKE2b-256 of FILE (>= 32 bytes);\n"
            "                           default: a fixed, public benchmark key\n"
            "  --loss P --dup P --reorder P --corrupt P\n"
            "                           RDP fault injector on this side, both directions\n"
            "  --mtu N                  link MTU (default 65536 on loopback, else 1500; the\n"
            "                           server follows the client unless given; packets\n"
            "                           fit the smaller MTU of the two)\n"
            "  --mac auto|chacha20poly1305|aes256gcm\n"
            "                           which packet MACs this side allows (default auto:\n"
            "                           AES-256-GCM where both CPUs have it; RDP negotiates;\n"
            "                           the server follows the client unless given)\n"
            "  --no-offload             no UDP GSO/GRO on this side (they are used where the\n"
            "                           MTU is small, e.g. 1500 or 9000)\n"
            "  --joined                 receive whole messages (RDP joins the fragments into\n"
            "                           one buffer) instead of in pieces (packets as read)\n"
            "  --mac-impl best|portable|ipsec-mb\n"
            "                           which library computes this side's MACs (same tags;\n"
            "                           default best: Intel IPsec-MB where built in)\n"
            "  --rto-min-us N --max-retrans N --sndbuf BYTES --rcvbuf BYTES --sock-buf BYTES\n"
            "                           RDP tunables (default: the library's)\n"
            "  --timeout S              give up after S seconds without progress (default 30)\n"
            "  --quiet                  (server) only errors\n"
            "  -h, --help\n",
            RDP_MAX_MSG);
}

static void vsay(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void vsay(const char *fmt, va_list ap)
{
    fprintf(stderr, "rdpbench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
}

static void bad_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    usage(stderr);
    exit(2);
}

bool rb_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+') return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The value of --NAME, in lo..hi; else a usage error that gives the range (and why, if not
 * NULL). */
static uint64_t opt_num(const char *name, const char *s, uint64_t lo, uint64_t hi, const char *why)
{
    uint64_t v;
    if (!rb_parse_u64(s, lo, hi, &v))
        bad_usage("--%s %s: must be %" PRIu64 "..%" PRIu64 "%s%s", name, s, lo, hi, why ? " " : "",
                  why ? why : "");
    return v;
}

static double opt_prob(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.0 && v <= 1.0))
        bad_usage("--%s: need a probability in [0,1], got '%s'", opt, s);
    return v;
}

void rb_opts_parse(int argc, char **argv, struct rb_opts *o_)
{
    enum {
        O_MODE = 256,
        O_SIZE,
        O_COUNT,
        O_WARMUP,
        O_SEED,
        O_BIND,
        O_KEY,
        O_LOSS,
        O_DUP,
        O_REORDER,
        O_CORRUPT,
        O_MTU,
        O_RTO_MIN,
        O_MAX_RETRANS,
        O_SNDBUF,
        O_RCVBUF,
        O_SOCKBUF,
        O_VSTCP,
        O_JSON,
        O_ONCE,
        O_TIMEOUT,
        O_QUIET,
        O_MAC,
        O_NOOFFLOAD,
        O_JOINED,
        O_MACIMPL,
    };
    static const struct option lo[] = {
        {"mode", required_argument, NULL, O_MODE},
        {"size", required_argument, NULL, O_SIZE},
        {"count", required_argument, NULL, O_COUNT},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"seed", required_argument, NULL, O_SEED},
        {"bind", required_argument, NULL, O_BIND},
        {"key", required_argument, NULL, O_KEY},
        {"loss", required_argument, NULL, O_LOSS},
        {"dup", required_argument, NULL, O_DUP},
        {"reorder", required_argument, NULL, O_REORDER},
        {"corrupt", required_argument, NULL, O_CORRUPT},
        {"mtu", required_argument, NULL, O_MTU},
        {"rto-min-us", required_argument, NULL, O_RTO_MIN},
        {"max-retrans", required_argument, NULL, O_MAX_RETRANS},
        {"sndbuf", required_argument, NULL, O_SNDBUF},
        {"rcvbuf", required_argument, NULL, O_RCVBUF},
        {"sock-buf", required_argument, NULL, O_SOCKBUF},
        {"vs-tcp", no_argument, NULL, O_VSTCP},
        {"json", no_argument, NULL, O_JSON},
        {"once", no_argument, NULL, O_ONCE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"quiet", no_argument, NULL, O_QUIET},
        {"mac", required_argument, NULL, O_MAC},
        {"no-offload", no_argument, NULL, O_NOOFFLOAD},
        {"joined", no_argument, NULL, O_JOINED},
        {"mac-impl", required_argument, NULL, O_MACIMPL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct rb_opts o = {0};
    o.warmup = -1;
    o.timeout_s = 30;
    o.mac = -1;
    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "-h") == 0 || strcmp(argv[k], "--help") == 0) {
            usage(stdout);
            exit(0);
        }
    if (argc < 2) bad_usage("missing 'server' or 'client'");
    if (strcmp(argv[1], "server") == 0)
        o.server = true;
    else if (strcmp(argv[1], "client") != 0)
        bad_usage("unknown command '%s' (server or client)", argv[1]);
    bool client_only = false, server_only = false, have_size = false, have_count = false;
    uint64_t v;
    enum rdp_mac_alg alg;
    enum rdp_mac_impl impl;
    struct rdp_config lib; /* the library's defaults: --rto-min-us may not exceed its rto_max */
    rdp_config_defaults(&lib);
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        const char *name = c >= 256 ? lo[c - 256].name : "";
        switch (c) {
        case O_MODE:
            client_only = true;
            if (strcmp(optarg, "pingpong") == 0)
                o.mode = RB_MODE_PINGPONG;
            else if (strcmp(optarg, "stream") == 0)
                o.mode = RB_MODE_STREAM;
            else
                bad_usage("--mode: pingpong or stream, not '%s'", optarg);
            break;
        case O_SIZE: {
            client_only = have_size = true;
            char lo_s[32], *dash = strchr(optarg, '-');
            uint64_t a, z;
            if (dash && (size_t)(dash - optarg) < sizeof lo_s) {
                memcpy(lo_s, optarg, (size_t)(dash - optarg));
                lo_s[dash - optarg] = '\0';
                if (!rb_parse_u64(lo_s, 1, RDP_MAX_MSG, &a) ||
                    !rb_parse_u64(dash + 1, a, RDP_MAX_MSG, &z))
                    bad_usage("--size: MIN-MAX with 1 <= MIN <= MAX <= %u, not '%s'", RDP_MAX_MSG,
                              optarg);
            } else if (dash || !rb_parse_u64(optarg, 1, RDP_MAX_MSG, &a)) {
                bad_usage("--size: 1..%u bytes or MIN-MAX, not '%s'", RDP_MAX_MSG, optarg);
            } else {
                z = a;
            }
            o.smin = (uint32_t)a;
            o.smax = (uint32_t)z;
            break;
        }
        case O_COUNT:
            client_only = have_count = true;
            if (!rb_parse_u64(optarg, 1, 1ull << 32, &o.count))
                bad_usage("--count: 1..2^32, not '%s'", optarg);
            break;
        case O_WARMUP:
            client_only = true;
            if (!rb_parse_u64(optarg, 0, 1ull << 32, &v)) bad_usage("--warmup: not '%s'", optarg);
            o.warmup = (int64_t)v;
            break;
        case O_SEED:
            client_only = o.have_seed = true;
            if (!rb_parse_u64(optarg, 0, UINT64_MAX, &o.seed))
                bad_usage("--seed: not '%s'", optarg);
            break;
        case O_BIND:
            client_only = o.have_bind = true;
            if (rb_addr_parse(optarg, false, &o.bind, &o.bindlen) < 0)
                bad_usage("--bind: ADDR or ADDR:PORT, not '%s'", optarg);
            break;
        case O_KEY:
            o.keyfile = optarg;
            break;
        case O_LOSS:
            o.loss = opt_prob(name, optarg);
            break;
        case O_DUP:
            o.dup = opt_prob(name, optarg);
            break;
        case O_REORDER:
            o.reorder = opt_prob(name, optarg);
            break;
        case O_CORRUPT:
            o.corrupt = opt_prob(name, optarg);
            break;
        /* the RDP tunables, in the ranges rdp_open accepts (include/rdp.h) */
        case O_MTU:
            o.mtu = (unsigned)opt_num(name, optarg, RDP_MTU_MIN, RDP_MTU_MAX, NULL);
            break;
        case O_RTO_MIN:
            o.rto_min_us = (unsigned)opt_num(name, optarg, RDP_RTO_MIN_US_MIN, lib.rto_max_us,
                                             "(at most RDP's rto_max_us)");
            break;
        case O_MAX_RETRANS:
            o.max_retrans =
                (unsigned)opt_num(name, optarg, RDP_MAX_RETRANS_MIN, RDP_MAX_RETRANS_MAX, NULL);
            break;
        case O_SNDBUF:
        case O_RCVBUF:
            v = opt_num(name, optarg, RDP_BUF_MIN, OPT_BUF_MAX, "bytes");
            *(c == O_SNDBUF ? &o.sndbuf : &o.rcvbuf) = (size_t)v;
            break;
        case O_SOCKBUF:
            o.sock_buf = (size_t)opt_num(name, optarg, 1, OPT_BUF_MAX, "bytes");
            break;
        case O_VSTCP:
            client_only = o.vs_tcp = true;
            break;
        case O_JSON:
            client_only = o.json = true;
            break;
        case O_ONCE:
            server_only = o.once = true;
            break;
        case O_NOOFFLOAD:
            o.no_offload = true;
            break;
        case O_JOINED:
            o.joined = true;
            break;
        case O_MACIMPL:
            if (rdp_mac_impl_parse(optarg, &impl) < 0)
                bad_usage("--mac-impl: best, portable or ipsec-mb, not '%s'", optarg);
            o.mac_impl = (int)impl;
            break;
        case O_MAC:
            if (rdp_mac_alg_parse(optarg, &alg) < 0)
                bad_usage("--mac: auto, chacha20poly1305 or aes256gcm, not '%s'", optarg);
            o.mac = (int)alg;
            if (!rdp_mac_available((enum rdp_mac_alg)o.mac))
                bad_usage("--mac %s: not available on this CPU", optarg);
            break;
        case O_QUIET:
            server_only = o.quiet = true;
            break;
        case O_TIMEOUT:
            if (!rb_parse_u64(optarg, 1, 3600, &v))
                bad_usage("--timeout: 1..3600 s, not '%s'", optarg);
            o.timeout_s = (unsigned)v;
            o.have_timeout = true;
            break;
        default:
            usage(stderr);
            exit(2);
        }
    }
    if (optind != argc - 1) bad_usage("need exactly one ADDR:PORT");
    if (rb_addr_parse(argv[optind], true, &o.addr, &o.addrlen) < 0)
        bad_usage("bad address '%s' (numeric ADDR:PORT, [V6]:PORT)", argv[optind]);
    if (o.server && client_only) bad_usage("that option is for the client");
    if (!o.server && server_only) bad_usage("that option is for the server");
    if (!o.server) {
        if (!o.mode || !have_size || !have_count) bad_usage("client needs --mode, --size, --count");
        if (rb_addr_port(&o.addr) == 0) bad_usage("client needs the server's port");
        if (o.have_bind && o.bind.ss_family != o.addr.ss_family)
            bad_usage("--bind: not the server's address family");
    }
    *o_ = o;
}
