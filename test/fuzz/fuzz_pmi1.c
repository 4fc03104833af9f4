/*
 * fuzz_pmi1.c - libFuzzer target for the PMI-1 wire as psid's PMI server reads it from a
 * rank (include/pmiwire.h): the bytes are a rank's stream, cut into lines by pmi1_frame
 * (over-long lines skipped to their newline, as psid/pmi.c does), each line parsed, its
 * numbers and values read, its put's pair stored in a bounded KVS (psid/pmikvs.c), an
 * answer written back with the value; a mapping value goes to pmi_map_clique.
 */
#include "../../psid/pmi.h"
#include "pmiwire.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct pmikvs kvs;
    pmikvs_init(&kvs);
    bool skipping = false;
    while (size) {
        size_t len = 0;
        int r = pmi1_frame(p, size, &len);
        if (r == 0) break;
        if (r < 0) { /* over the limit: skip to its newline */
            const char *nl = memchr(p, '\n', size);
            if (!nl) break;
            size -= (size_t)(nl - p) + 1;
            p = nl + 1;
            skipping = true;
            continue;
        }
        struct pmi_cmd c;
        const char *why;
        if (!skipping && pmi1_parse(p, len, &c, &why) == 0) {
            long v;
            pmi_get_int(&c, "pmi_version", 0, 1000, &v);
            pmi_get_int(&c, "exitcode", -2147483647L, 2147483647L, &v);
            char name[PMI_KVSNAME_MAX];
            pmi_copy(pmi_get(&c, "kvsname"), name, sizeof name);
            const struct pmi_kv *k = pmi_get(&c, "key"), *val = pmi_get(&c, "value");
            if (k && val && k->vlen && k->vlen <= PMI_KEY_MAX && val->vlen <= PMI_VAL_MAX &&
                kvs.n < 256)
                pmikvs_put(&kvs, k->val, k->vlen, val->val, val->vlen);
            size_t vl;
            const char *got = k ? pmikvs_get(&kvs, k->val, k->vlen, &vl) : NULL;
            char out[PMI_VAL_MAX + 512];
            struct pmi_out o;
            pmi_out_begin(&o, out, sizeof out, false, "get_result");
            pmi_out_add(&o, "rc", "0");
            if (got) pmi_out_addn(&o, "value", got, vl);
            pmi_out_end(&o);
            char map[PMI_VAL_MAX + 1];
            long cl[16];
            if (pmi_copy(pmi_get(&c, "map"), map, sizeof map) == 0)
                pmi_map_clique(map, 64, 5, cl, 16);
        }
        skipping = false;
        size -= len + 1;
        p += len + 1;
    }
    pmikvs_free(&kvs);
    return 0;
}
