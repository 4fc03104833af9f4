/*
 * test_lifecycle.c - the lifecycle of a connection of the preload library
 * (preload/lifecycle.h): every transition the library's code makes is in the table, and
 * the table holds nothing else; one not in it is counted (PSP_STATS bad_transitions), made
 * all the same, and under PSP_STRICT aborts with both states named; each state gets its
 * transport's operations (xport.h); the predicates hold exactly their sets of states.
 *
 * lifecycle.c is linked alone: this file gives it the process-wide state it counts in, and
 * stand-ins for the three transports' operations (xkernel.c, xrdp.c, shm.c).
 */
#include "../../preload/psp.h"
#include "unit.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct psp psp; /* lifecycle.c's counter and PSP_STRICT (state.c's in the library) */
const struct conn_ops xkernel_ops = {.name = "tcp"}, xrdp_ops = {.name = "rdp"},
                      xshm_ops = {.name = "shm"};

/* Every transition the library makes, from reading each conn_enter call and what leads
 * to it; the table must allow these and nothing else. */
static const struct {
    enum conn_state from, to;
} made[] = {
    {CS_NEW, CS_PLAIN},         /* sock.c connect_in: track, the TCP phase */
    {CS_NEW, CS_CONNECTING},    /* sock.c connect_in: track, asking at once */
    {CS_NEW, CS_ACCEPTED},      /* sock.c accept: track */
    {CS_NEW, CS_TCP},           /* sock.c connect_in: followed on TCP */
    {CS_PLAIN, CS_PLAIN},       /* conn_plain from connect_in */
    {CS_PLAIN, CS_CONNECTING},  /* conn_negotiate */
    {CS_PLAIN, CS_TCP},         /* conn_plain_to_tcp, conn_close, untrack */
    {CS_PLAIN, CS_ORPHAN},      /* conn_fork_child */
    {CS_ACCEPTED, CS_PLAIN},    /* conn_claim -> conn_plain */
    {CS_ACCEPTED, CS_TCP},      /* conn_claim -> conn_fallback -> to_tcp; exec.c */
    {CS_ACCEPTED, CS_RDP},      /* conn_fallback under PSP_STRICT */
    {CS_CONNECTING, CS_RDP},    /* rdp_begin; conn_fallback under PSP_STRICT */
    {CS_CONNECTING, CS_SHM},    /* shm_attach */
    {CS_CONNECTING, CS_TCP},    /* conn_fallback -> to_tcp; untrack */
    {CS_CONNECTING, CS_ORPHAN}, /* conn_fork_child */
    {CS_RDP, CS_SWITCH},        /* sw_begin: conn_switch, the peer's PLW_SWITCH */
    {CS_RDP, CS_TCP},           /* untrack of PSP_STRICT's record */
    {CS_RDP, CS_ORPHAN},        /* conn_fork_child */
    {CS_SHM, CS_SWITCH},        /* sw_begin: conn_switch, conn_shm_switched */
    {CS_SHM, CS_ORPHAN},        /* conn_fork_child */
    {CS_SWITCH, CS_TCP},        /* sw_progress, sw_progress_shm -> to_tcp */
    {CS_SWITCH, CS_DRAIN},      /* sw_progress, sw_progress_shm */
    {CS_SWITCH, CS_RDP},        /* sw_fail */
    {CS_SWITCH, CS_SHM},        /* sw_fail */
    {CS_SWITCH, CS_ORPHAN},     /* conn_fork_child */
    {CS_DRAIN, CS_TCP},         /* conn_guard_event -> to_tcp */
    {CS_DRAIN, CS_ORPHAN},      /* conn_fork_child */
    {CS_ORPHAN, CS_TCP},        /* conn_claim in a fork's child */
    {CS_TCP, CS_TCP},           /* untrack after psi_drop's fallback */
};
#define NMADE (sizeof made / sizeof made[0])

static bool is_made(enum conn_state from, enum conn_state to)
{
    for (size_t i = 0; i < NMADE; i++)
        if (made[i].from == from && made[i].to == to) return true;
    return false;
}

static void test_lifecycle_made(void)
{
    psp.strict = false;
    uint64_t bad = psp.bad_transitions;
    for (size_t i = 0; i < NMADE; i++) {
        struct conn c;
        memset(&c, 0, sizeof c);
        c.st = made[i].from;
        CU_ASSERT_TRUE(conn_enter(&c, made[i].to));
        CU_ASSERT_EQUAL(c.st, made[i].to);
    }
    CU_ASSERT_EQUAL(psp.bad_transitions, bad);
}

/* the table is exactly that list: a row added without a reason here fails too */
static void test_lifecycle_table(void)
{
    for (int f = 0; f < CS__COUNT; f++)
        for (int t = 0; t < CS__COUNT; t++)
            if (conn_transition_ok(f, t) != is_made(f, t)) {
                fprintf(stderr, "lifecycle: %s -> %s: table %d, made %d\n", conn_state_name(f),
                        conn_state_name(t), conn_transition_ok(f, t), is_made(f, t));
                CU_FAIL("the table differs from the transitions made");
            }
    CU_ASSERT_FALSE(conn_transition_ok(CS__COUNT, CS_TCP));
    CU_ASSERT_FALSE(conn_transition_ok(CS_TCP, CS__COUNT));
    CU_ASSERT_FALSE(conn_transition_ok((enum conn_state) - 1, CS_TCP));
}

static void test_lifecycle_refused(void)
{
    static const struct {
        enum conn_state from, to;
    } never[] = {
        {CS_TCP, CS_RDP},        /* TCP is for good */
        {CS_SHM, CS_CONNECTING}, /* nothing returns to the negotiation */
        {CS_SHM, CS_TCP},        /* the fast path leaves through SWITCH */
        {CS_RDP, CS_SHM},        /* a transport is not changed for another */
        {CS_TCP, CS_PLAIN},      /* nor is the TCP phase entered again */
        {CS_NEW, CS_RDP},        /* nothing starts on the fast path */
        {CS_ORPHAN, CS_RDP},     /* an orphan is the owner's to move */
        {CS_CONNECTING, CS_DRAIN}, {CS_SWITCH, CS_SWITCH}, {CS_DRAIN, CS_SWITCH},
    };
    psp.strict = false;
    uint64_t bad = psp.bad_transitions;
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        struct conn c;
        memset(&c, 0, sizeof c);
        c.st = never[i].from;
        CU_ASSERT_FALSE(conn_enter(&c, never[i].to));
        CU_ASSERT_EQUAL(c.st, never[i].to); /* made all the same: its caller relies on it */
        CU_ASSERT_EQUAL(psp.bad_transitions, bad + i + 1);
    }
}

/* PSP_STRICT: the first transition not in the table aborts, naming both states */
static void test_lifecycle_strict(void)
{
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        psp.strict = true;
        struct conn c;
        memset(&c, 0, sizeof c);
        c.st = CS_RDP;
        conn_enter(&c, CS_SWITCH); /* in the table: goes on */
        conn_enter(&c, CS_CONNECTING);
        _exit(0); /* not reached */
    }
    close(p[1]);
    char buf[512];
    size_t n = 0;
    for (ssize_t r; n < sizeof buf - 1 && (r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0;)
        n += (size_t)r;
    buf[n] = 0;
    close(p[0]);
    int status;
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "CS_SWITCH -> CS_CONNECTING"));
}

/* the transport follows the state: the fast path's own; a move back and an orphan keep the
 * one they move off; the kernel's otherwise, but while a channel is still mapped */
static void test_lifecycle_ops(void)
{
    psp.strict = false;
    static char chan; /* (only whether there is one) */
    struct conn c;
    memset(&c, 0, sizeof c);
    conn_enter(&c, CS_PLAIN);
    CU_ASSERT_PTR_EQUAL(c.ops, &xkernel_ops);
    conn_enter(&c, CS_CONNECTING);
    CU_ASSERT_PTR_EQUAL(c.ops, &xkernel_ops);
    conn_enter(&c, CS_RDP);
    CU_ASSERT_PTR_EQUAL(c.ops, &xrdp_ops);
    conn_enter(&c, CS_SWITCH);
    CU_ASSERT_PTR_EQUAL(c.ops, &xrdp_ops);
    conn_enter(&c, CS_RDP); /* a move back that failed */
    CU_ASSERT_PTR_EQUAL(c.ops, &xrdp_ops);
    conn_enter(&c, CS_ORPHAN);
    CU_ASSERT_PTR_EQUAL(c.ops, &xrdp_ops);
    conn_enter(&c, CS_TCP);
    CU_ASSERT_PTR_EQUAL(c.ops, &xkernel_ops);

    memset(&c, 0, sizeof c);
    conn_enter(&c, CS_CONNECTING);
    c.shm = (struct shm_chan *)&chan;
    conn_enter(&c, CS_SHM);
    CU_ASSERT_PTR_EQUAL(c.ops, &xshm_ops);
    conn_enter(&c, CS_SWITCH);
    CU_ASSERT_PTR_EQUAL(c.ops, &xshm_ops);
    c.shm = NULL; /* the move's end frees the channel */
    conn_enter(&c, CS_DRAIN);
    CU_ASSERT_PTR_EQUAL(c.ops, &xkernel_ops);
    conn_enter(&c, CS_TCP);
    CU_ASSERT_PTR_EQUAL(c.ops, &xkernel_ops);

    memset(&c, 0, sizeof c); /* a channel that could not be mapped: reset, on shm's */
    conn_enter(&c, CS_CONNECTING);
    conn_enter(&c, CS_SHM);
    CU_ASSERT_PTR_EQUAL(c.ops, &xshm_ops);

    memset(&c, 0, sizeof c); /* a fork's child: the owner moves its orphan to TCP */
    conn_enter(&c, CS_CONNECTING);
    c.shm = (struct shm_chan *)&chan;
    conn_enter(&c, CS_SHM);
    conn_enter(&c, CS_ORPHAN);
    CU_ASSERT_PTR_EQUAL(c.ops, &xshm_ops);
    conn_enter(&c, CS_TCP);
    CU_ASSERT_PTR_EQUAL(c.ops, &xshm_ops); /* its mapping is still there */
}

/* each predicate holds exactly its states */
static void test_lifecycle_predicates(void)
{
    static const struct {
        const char *name;
        bool (*fn)(enum conn_state);
        unsigned set;
    } preds[] = {
#define S(x) (1u << (x))
        {"cs_fast", cs_fast, S(CS_RDP) | S(CS_SHM)},
        {"cs_tcp_phase", cs_tcp_phase, S(CS_PLAIN) | S(CS_CONNECTING)},
        {"cs_unclaimed", cs_unclaimed, S(CS_ACCEPTED) | S(CS_ORPHAN)},
        {"cs_on_tcp", cs_on_tcp, S(CS_TCP) | S(CS_DRAIN)},
        {"cs_kernel_only", cs_kernel_only, S(CS_TCP) | S(CS_ORPHAN)},
        {"cs_rdp_or_switch", cs_rdp_or_switch, S(CS_RDP) | S(CS_SWITCH)},
        {"cs_endpoint_bound", cs_endpoint_bound,
         S(CS_PLAIN) | S(CS_CONNECTING) | S(CS_RDP) | S(CS_SHM) | S(CS_SWITCH)},
        {"cs_kernel_ready", cs_kernel_ready,
         S(CS_TCP) | S(CS_ORPHAN) | S(CS_ACCEPTED) | S(CS_PLAIN) | S(CS_CONNECTING)},
#undef S
    };
    for (size_t i = 0; i < sizeof preds / sizeof preds[0]; i++)
        for (int s = 0; s < CS__COUNT; s++)
            if (preds[i].fn(s) != !!(preds[i].set & (1u << s))) {
                fprintf(stderr, "lifecycle: %s(%s) is %d\n", preds[i].name, conn_state_name(s),
                        preds[i].fn(s));
                CU_FAIL("a predicate's set");
            }
}

static void test_lifecycle_names(void)
{
    CU_ASSERT_STRING_EQUAL(conn_state_name(CS_NEW), "CS_NEW");
    CU_ASSERT_STRING_EQUAL(conn_state_name(CS_SHM), "CS_SHM");
    CU_ASSERT_STRING_EQUAL(conn_state_name(CS__COUNT), "CS_?");
    for (int s = 0; s < CS__COUNT; s++) CU_ASSERT_PTR_NOT_NULL(conn_state_name(s));
}

UNIT_SUITE(lifecycle, UNIT_TEST(test_lifecycle_made), UNIT_TEST(test_lifecycle_table),
           UNIT_TEST(test_lifecycle_refused), UNIT_TEST(test_lifecycle_strict),
           UNIT_TEST(test_lifecycle_ops), UNIT_TEST(test_lifecycle_predicates),
           UNIT_TEST(test_lifecycle_names));
