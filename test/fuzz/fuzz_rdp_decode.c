/*
 * fuzz_rdp_decode.c - libFuzzer target for the RDP header decoder: any byte string must be
 * either rejected with a reason or decoded into fields that obey the invariants the state
 * machine relies on.
 */
#include "../../rdp/wire.h"

#include <stdbool.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rdp_hdr h;
    enum rdp_drop_reason why;
    if (!rdp_hdr_decode(data, size, &h, &why)) {
        if (why >= RDP_DROP__COUNT) abort();
        return 0;
    }
    if ((size_t)h.len + RDP_OVERHEAD != size || h.version != RDP_VERSION || h.src_conn == 0)
        abort();
    if (h.type == RDP_T_DATA && (h.msg_len == 0 || h.msg_len > RDP_MAX_MSG || h.len > h.msg_len))
        abort();
    bool hs = h.type == RDP_T_SYN || h.type == RDP_T_SYNACK || h.type == RDP_T_RST;
    if (hs && h.len != RDP_HS_LEN) abort();
    if (hs ? h.pn != 0 : h.pn == 0) abort(); /* handshakes unnumbered, data from 1 */
    return 0;
}
