/*
 * fuzz_swim.c - libFuzzer target for SWIM (psid/swim.c): any bytes to the decoder, with the
 * MAC made valid half of the time so that the field checks behind it are reached, and every
 * packet that decodes fed to a member of 8, whose state machine must stay sound (ticks
 * in between, driven by the input's own bytes).
 */
#include "../../psid/hbwire.h"
#include "../../psid/swim.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_send(void *ctx, uint32_t to, const uint8_t *pkt, size_t len)
{
    (void)ctx, (void)to, (void)pkt, (void)len;
}

static void fz_change(void *ctx, uint32_t m, enum swim_state from, enum swim_state to, bool r)
{
    (void)ctx, (void)m, (void)from, (void)to, (void)r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[32] = {7};
    static const struct swim_io io = {.send = fz_send, .change = fz_change};
    struct swim_config c;
    swim_config_default(&c, 8, 0);
    struct swim *s = swim_new(&c, key, 1, 1, &io, NULL, 0);
    if (!s) return 0;
    uint64_t now = 0;
    /* the input is a series of packets, each led by a length byte and a time step */
    while (size >= 2) {
        size_t n = data[0];
        now += (uint64_t)data[1] * 10000000ull;
        data += 2, size -= 2;
        if (n > size) n = size;
        uint8_t buf[SWIM_MAX_PKT + 8];
        size_t len = n > sizeof buf ? sizeof buf : n;
        memcpy(buf, data, len);
        data += n, size -= n;
        if (len > SWIM_MAC && (buf[len - 1] & 1))
            hb_mac(buf + len - SWIM_MAC, buf, len - SWIM_MAC, key);
        swim_recv(s, buf, len, now);
        swim_tick(s, now);
    }
    swim_free(s);
    return 0;
}
