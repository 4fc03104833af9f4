/*
 * trace.h - timestamps of the steps of a message, for bench/profile/rdp-timeline.sh: when
 * rdp_send is called and returns, each sendmmsg and recvmmsg, each delivery. Compiled in only
 * with -DRDP_TRACE (a separate build; see that script); otherwise every call is empty and the
 * library has no trace state at all.
 *
 * With RDP_TRACE, a process records only when the environment names a file prefix
 * (RDP_TRACE_FILE); the events go to PREFIX.PID at exit, one line each: CLOCK_MONOTONIC
 * nanoseconds, event, argument. Both ends of a connection share that clock on one machine,
 * so their files merge into one timeline.
 */
#ifndef PSCLUSTER_RDP_TRACE_H
#define PSCLUSTER_RDP_TRACE_H

#include <stdint.h>

enum rdp_trace_event {
    RDP_TR_SENDV_IN = 1, /* rdp_send/rdp_sendv called (argument: message bytes) */
    RDP_TR_SENDV_OUT,    /* ... and returned */
    RDP_TR_SEND_IN,      /* sendmmsg called (argument: packets in the batch) */
    RDP_TR_SEND_OUT,     /* ... returned (argument: sends done) */
    RDP_TR_RECV_IN,      /* recvmmsg called */
    RDP_TR_RECV_OUT,     /* ... returned (argument: reads, 0 for none) */
    RDP_TR_DELIVER,      /* a whole message goes to the application (argument: bytes) */
};

#ifdef RDP_TRACE
void rdp_trace(enum rdp_trace_event ev, uint32_t arg);
#else
static inline void rdp_trace(enum rdp_trace_event ev, uint32_t arg)
{
    (void)ev;
    (void)arg;
}
#endif

#endif
