/*
 * fuzz_rdpbench_ctl.c - libFuzzer target for rdpbench's control protocol decoders
 * (rdpbench/ctl.c): the input is read as a stream of frames as a session reads it; each
 * whole frame's body goes to every body decoder, and decoded HELLOs are encoded again and
 * must decode to the same.
 */
#include "../../rdpbench/ctl.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    for (;;) {
        uint8_t type;
        uint32_t len;
        char why[128];
        if (rb_ctl_frame_parse(data + pos, size - pos, &type, &len, why, sizeof why) != 1) break;
        const uint8_t *p = data + pos + RB_CTL_HDR;
        struct rb_hello h, h2;
        if (rb_hello_decode(p, len, &h, why, sizeof why) == 0) {
            uint8_t e[RB_HELLO_LEN];
            rb_hello_encode(&h, e);
            if (rb_hello_decode(e, sizeof e, &h2, why, sizeof why) != 0 || h2.count != h.count ||
                h2.addrlen != h.addrlen || memcmp(&h2.addr, &h.addr, h.addrlen) != 0)
                abort();
        }
        struct rb_ready r;
        rb_ready_decode(p, len, &r);
        uint64_t a, b;
        uint32_t st;
        rb_done_decode(p, len, &a, &b);
        rb_tcp_result_decode(p, len, &st, &a);
        struct rb_stats s;
        rb_stats_decode(p, len, &s);
        char t[RB_CTL_ERR_MAX + 1];
        rb_err_text(p, len, t);
        pos += RB_CTL_HDR + len;
    }
    return 0;
}
