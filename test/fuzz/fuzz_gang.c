/*
 * fuzz_gang.c - libFuzzer target for the gang switch record's decoder (psid/gangwire.c):
 * any bytes; what decodes must encode to the same bytes.
 */
#include "../../psid/gangwire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gang_switch s;
    static uint8_t out[GANG_WIRE_HEAD + GANG_WIRE_ENTRY * GANG_WIRE_MAX_JOBS];
    const char *why = NULL;
    if (gang_decode(data, size, &s, &why) < 0) {
        if (!why) abort();
        return 0;
    }
    size_t n = gang_encode(out, sizeof out, &s);
    if (n != size || memcmp(out, data, n) != 0) abort();
    return 0;
}
