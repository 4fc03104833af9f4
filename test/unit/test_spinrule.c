/*
 * test_spinrule.c - unit tests for the spin rule (preload/spinrule.h): the mode moves one
 * step per sample of the node's runnable threads, toward sleeping when they outnumber the
 * CPUs and toward spinning when not; a sample without information keeps it; and the
 * parsing of /proc/loadavg's text, malformed text included.
 */
#include "../../preload/spinrule.h"
#include "unit.h"

#include <string.h>

/* the mode after the samples RUN[0..n) on a node of NCPU CPUs, from FROM */
static enum spin_mode after(enum spin_mode from, unsigned ncpu, const unsigned *run, int n)
{
    for (int i = 0; i < n; i++) from = spin_rule(from, run[i], ncpu);
    return from;
}

static void test_spinrule_idle(void)
{
    /* as many runnable as CPUs (a ping-pong pair spinning on 2 CPUs, the sampler one of
     * them) is not oversubscribed: today's spin stays */
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 1, 2), SPIN_FULL);
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 2, 2), SPIN_FULL);
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 64, 64), SPIN_FULL);
}

static void test_spinrule_oversubscribed(void)
{
    /* four CPU-bound spinners beside a pair on 2 CPUs: 5 or 6 runnable. The first sample
     * doubts, the second sleeps, and it stays asleep */
    const unsigned load[] = {6, 5, 6, 6, 5};
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 6, 2), SPIN_DOUBT);
    CU_ASSERT_EQUAL(after(SPIN_FULL, 2, load, 2), SPIN_SLEEP);
    CU_ASSERT_EQUAL(after(SPIN_FULL, 2, load, 5), SPIN_SLEEP);
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 3, 2), SPIN_DOUBT); /* one more than the CPUs */
    CU_ASSERT_EQUAL(spin_rule(SPIN_SLEEP, 3, 2), SPIN_SLEEP);
    CU_ASSERT_EQUAL(spin_rule(SPIN_FULL, 2, 1), SPIN_DOUBT); /* a pair on one CPU */
}

static void test_spinrule_hysteresis(void)
{
    /* the load goes: two samples back to the full spin, one only to the doubt */
    const unsigned back[] = {1, 2};
    CU_ASSERT_EQUAL(spin_rule(SPIN_SLEEP, 1, 2), SPIN_DOUBT);
    CU_ASSERT_EQUAL(after(SPIN_SLEEP, 2, back, 2), SPIN_FULL);
    /* one thread that woke for a moment: a doubt, then the full spin again */
    const unsigned blip[] = {3, 2};
    CU_ASSERT_EQUAL(after(SPIN_FULL, 2, blip, 1), SPIN_DOUBT);
    CU_ASSERT_EQUAL(after(SPIN_FULL, 2, blip, 2), SPIN_FULL);
    /* a load that comes and goes at every sample: from the full spin it never sleeps,
     * from the doubt it never spins in full */
    const unsigned flap[] = {3, 2, 3, 2, 3, 2, 3};
    for (int n = 1; n <= 7; n++) {
        CU_ASSERT_EQUAL(after(SPIN_FULL, 2, flap, n), n % 2 ? SPIN_DOUBT : SPIN_FULL);
        CU_ASSERT_EQUAL(after(SPIN_DOUBT, 2, flap, n), n % 2 ? SPIN_SLEEP : SPIN_DOUBT);
    }
}

static void test_spinrule_no_information(void)
{
    /* an unreadable sample or an unknown CPU count keeps the mode, whichever it is */
    for (int m = SPIN_FULL; m <= SPIN_SLEEP; m++) {
        CU_ASSERT_EQUAL(spin_rule((enum spin_mode)m, 0, 2), m);
        CU_ASSERT_EQUAL(spin_rule((enum spin_mode)m, 9, 0), m);
    }
}

static unsigned parse(const char *s)
{
    return spin_runnable(s, strlen(s));
}

static void test_spinrule_parse(void)
{
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.30 3/120 4567\n"), 3);
    CU_ASSERT_EQUAL(parse("12.05 9.76 10.73 13/185 20817\n"), 13);
    CU_ASSERT_EQUAL(parse("0.00 0.00 0.00 1/1 1"), 1);
    /* the length bounds it: "3/12" cut before the slash is nothing */
    const char *t = "0.52 0.41 0.30 3/120 4567\n";
    CU_ASSERT_EQUAL(spin_runnable(t, 17), 3);
    CU_ASSERT_EQUAL(spin_runnable(t, 16), 0);
    CU_ASSERT_EQUAL(spin_runnable(t, 0), 0);
    /* malformed: fields missing, letters, no slash, no number, absurd numbers */
    CU_ASSERT_EQUAL(parse(""), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 3/120 4567"), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.3x 3/120 4567"), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.30 3 120"), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.30 /120"), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.30 -3/120"), 0);
    CU_ASSERT_EQUAL(parse("0.52 0.41 0.30 99999999999999999999/120"), 0);
    CU_ASSERT_EQUAL(parse("0.52  0.41 0.30 3/120"), 0);
}

UNIT_SUITE(spinrule, UNIT_TEST(test_spinrule_idle), UNIT_TEST(test_spinrule_oversubscribed),
           UNIT_TEST(test_spinrule_hysteresis), UNIT_TEST(test_spinrule_no_information),
           UNIT_TEST(test_spinrule_parse));
