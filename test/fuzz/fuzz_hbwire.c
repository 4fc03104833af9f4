/*
 * fuzz_hbwire.c - libFuzzer target for psid's heartbeat decoder: any bytes, with the MAC
 * made valid half of the time so that the field checks behind it are reached too.
 */
#include "../../psid/hbwire.h"

#include <sodium.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[32] = {7};
    uint8_t buf[HB_LEN + 8];
    struct hb h;
    const char *why;
    if (size > sizeof buf) size = sizeof buf;
    memcpy(buf, data, size);
    if (size == HB_LEN && (buf[HB_LEN - 1] & 1)) crypto_generichash(buf + 40, 16, buf, 40, key, 32);
    hb_decode(buf, size, &h, key, &why);
    return 0;
}
