/*
 * fuzz_plwire.c - libFuzzer target for the preload library's message header decoder
 * (preload/wire.h): decode any bytes as a message of their length, and re-encode what
 * decodes, which must give the same header.
 */
#include "../../preload/wire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct plw_msg m;
    if (plw_decode(data, size, &m) == 0) {
        uint8_t h[PLW_HDR];
        plw_encode(h, m.type, m.flags, m.conn, m.aux);
        if (memcmp(h, data, PLW_HDR) != 0 || m.len != size - PLW_HDR) abort();
    }
    return 0;
}
