/*
 * rxwait.c - a thread that sleeps in the system call that reads (suite rdp_rxwait):
 * rdp_rx_claim, rdp_rx_wait and rdp_rx_done, as libpspreload's waits use them.
 *
 *  test_claim        while B's reads are claimed, rdp_process on B reads nothing (the
 *                    message stays in the socket); a second claim is EBUSY; the claimer's
 *                    read takes the message and rdp_rx_done delivers it, once, whole.
 *  test_wakeup       a thread asleep in rdp_rx_wait wakes on a datagram of no bytes from
 *                    another thread; rdp_rx_done counts it as a wake-up, not as a packet
 *                    or a drop, and the endpoint still talks.
 *  test_signals      a signal handler without SA_RESTART ends the sleep with EINTR; one
 *                    with SA_RESTART does not (the kernel resumes the read), as a socket's
 *                    recv behaves.
 */
#include "harness.h"
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct sleeper {
    rdp_t *rdp;
    int n, err;
};

static void *sleep_in_read(void *arg)
{
    struct sleeper *s = arg;
    s->n = rdp_rx_wait(s->rdp);
    s->err = errno;
    return NULL;
}

/* A datagram of no bytes to ep's address, from a plain socket. */
static void wake(const struct h_ep *ep)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CU_ASSERT_EQUAL(sendto(fd, "", 0, 0, (const struct sockaddr *)&ep->addr, sizeof ep->addr), 0);
    close(fd);
}

/* Join t within ms milliseconds: 1, or 0 if it still sleeps. */
static int joined(pthread_t t, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

/* Stop a sleeper that a test failure left asleep. */
static void end_sleeper(pthread_t t, const struct h_ep *ep)
{
    for (int i = 0; i < 50; i++) {
        wake(ep);
        if (joined(t, 100)) return;
    }
    CU_FAIL("the sleeping thread did not end");
}

static void test_claim(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 31);
    struct h_net net;
    struct h_ep a, b;
    if (h_open_pair(&net, &a, &b, key, key, NULL) < 0) return;
    h_oneway(&net, &a, &b, 1, 100); /* connected */
    CU_ASSERT_EQUAL_FATAL(h_count(&b, H_RECV, 1), 1);

    CU_ASSERT_EQUAL(rdp_rx_claim(b.rdp), 0);
    errno = 0;
    CU_ASSERT_EQUAL(rdp_rx_claim(b.rdp), -1);
    CU_ASSERT_EQUAL(errno, EBUSY);
    struct rdp_stats before, st;
    rdp_stats(b.rdp, &before);
    CU_ASSERT_EQUAL(h_send(&a, 2, 1, 1000), 0);
    CU_ASSERT_EQUAL(rdp_process(a.rdp), 0); /* sent */
    for (int i = 0; i < 20; i++) CU_ASSERT_EQUAL(rdp_process(b.rdp), 0);
    rdp_stats(b.rdp, &st);
    CU_ASSERT_EQUAL(st.pkts_recv, before.pkts_recv);
    CU_ASSERT_EQUAL(h_count(&b, H_RECV, 1), 1);

    int n = rdp_rx_wait(b.rdp); /* it is there: no sleep */
    CU_ASSERT(n >= 1);
    CU_ASSERT_EQUAL(rdp_rx_done(b.rdp, n), 0);
    CU_ASSERT_EQUAL(h_count(&b, H_RECV, 1), 2);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 2));
    rdp_stats(b.rdp, &st);
    CU_ASSERT_EQUAL(h_drops_total(&st), 0);
    CU_ASSERT_EQUAL(rdp_rx_claim(b.rdp), 0); /* claimable again; given back with nothing */
    CU_ASSERT_EQUAL(rdp_rx_done(b.rdp, -1), 0);
    h_ep_free(&a);
    h_ep_free(&b);
}

static void test_wakeup(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 32);
    struct h_net net;
    struct h_ep a, b;
    if (h_open_pair(&net, &a, &b, key, key, NULL) < 0) return;
    h_oneway(&net, &a, &b, 1, 100);
    CU_ASSERT_EQUAL(rdp_rx_claim(b.rdp), 0);
    struct sleeper s = {b.rdp, 0, 0};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sleep_in_read, &s), 0);
    CU_ASSERT_EQUAL(joined(t, 200), 0); /* nothing came: it sleeps */
    wake(&b);
    if (!joined(t, 5000)) {
        CU_FAIL("a datagram of no bytes did not wake the reader");
        end_sleeper(t, &b);
    }
    CU_ASSERT(s.n >= 1);
    CU_ASSERT_EQUAL(rdp_rx_done(b.rdp, s.n), 0);
    struct rdp_stats st;
    rdp_stats(b.rdp, &st);
    CU_ASSERT_EQUAL(st.wakeups, 1);
    CU_ASSERT_EQUAL(h_drops_total(&st), 0);
    for (uint64_t k = 1; k <= 5; k++) CU_ASSERT_EQUAL(h_send(&a, 2, k, 100), 0);
    struct h_wait_recv w = {&b, 1, 6}; /* and it still talks */
    CU_ASSERT_EQUAL(h_run(&net, h_cond_recv, &w, H_S(5)), 1);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 6));
    h_ep_free(&a);
    h_ep_free(&b);
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    handled++;
}

/* A sleeper in rdp_rx_wait, then SIGUSR1 to it with the handler's flags: 1 if the read
 * ended (with its result in *s), 0 if it went on sleeping (then a wake-up ends it). */
static int signalled(struct h_ep *b, int flags, struct sleeper *s)
{
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = flags}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    handled = 0;
    CU_ASSERT_EQUAL(rdp_rx_claim(b->rdp), 0);
    *s = (struct sleeper){b->rdp, 0, 0};
    pthread_t t;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sleep_in_read, s), 0);
    CU_ASSERT_EQUAL(joined(t, 100), 0);
    pthread_kill(t, SIGUSR1);
    int ended = joined(t, 500);
    CU_ASSERT_EQUAL(handled, 1);
    if (!ended) {
        wake(b);
        if (!joined(t, 5000)) end_sleeper(t, b);
    }
    rdp_rx_done(b->rdp, s->n);
    sigaction(SIGUSR1, &old, NULL);
    return ended;
}

static void test_signals(void)
{
    unsigned char key[RDP_KEY_BYTES];
    h_key(key, 33);
    struct h_net net;
    struct h_ep a, b;
    if (h_open_pair(&net, &a, &b, key, key, NULL) < 0) return;
    struct sleeper s;
    CU_ASSERT_EQUAL(signalled(&b, 0, &s), 1);
    CU_ASSERT_EQUAL(s.n, -1);
    CU_ASSERT_EQUAL(s.err, EINTR);
    CU_ASSERT_EQUAL(signalled(&b, SA_RESTART, &s), 0);
    CU_ASSERT(s.n >= 1); /* the wake-up, after the handler ran */
    h_oneway(&net, &a, &b, 3, 100);
    CU_ASSERT(h_check_recv_seq(&b, 1, 0, 3));
    h_ep_free(&a);
    h_ep_free(&b);
}

UNIT_SUITE(rdp_rxwait, UNIT_TEST(test_claim), UNIT_TEST(test_wakeup), UNIT_TEST(test_signals))
