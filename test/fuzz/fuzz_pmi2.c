/*
 * fuzz_pmi2.c - libFuzzer target for the PMI-2 wire as psid's PMI server reads it from a
 * rank (include/pmiwire.h): the bytes are a stream of length-prefixed frames, each framed by
 * pmi2_frame, parsed by pmi2_parse (';;' unescaped into the scratch buffer), its pairs read
 * and written back into a PMI-2 answer, which must parse again to the same value.
 */
#include "pmiwire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char scratch[PMI2_FRAME_MAX];
    static char out[PMI2_FRAME_MAX + 64], scratch2[PMI2_FRAME_MAX];
    const char *p = (const char *)data;
    while (size) {
        size_t len = 0;
        const char *why;
        if (pmi2_frame(p, size, &len, &why) != 1) break;
        const char *body = p + PMI2_LEN_DIGITS;
        struct pmi_cmd c;
        if (pmi2_parse(body, len, scratch, sizeof scratch, &c, &why) == 0) {
            long v;
            pmi_get_int(&c, "pmirank", 0, 1 << 30, &v);
            const struct pmi_kv *val = pmi_get(&c, "value");
            if (val) {
                struct pmi_out o;
                pmi_out_begin(&o, out, sizeof out, true, "kvs-get-response");
                pmi_out_addn(&o, "value", val->val, val->vlen);
                size_t n = pmi_out_end(&o), l2;
                struct pmi_cmd c2;
                if (n) {
                    if (pmi2_frame(out, n, &l2, &why) != 1 ||
                        pmi2_parse(out + PMI2_LEN_DIGITS, l2, scratch2, sizeof scratch2, &c2,
                                   &why) != 0)
                        abort(); /* what we write must read back */
                    const struct pmi_kv *v2 = pmi_get(&c2, "value");
                    if (!v2 || v2->vlen != val->vlen || memcmp(v2->val, val->val, val->vlen))
                        abort();
                }
            }
        }
        size -= PMI2_LEN_DIGITS + len;
        p += PMI2_LEN_DIGITS + len;
    }
    return 0;
}
