/*
 * fuzz_psmsg.c - libFuzzer target for the psid message decoder: parse any bytes; if they
 * parse, walk every field and record (two levels) and read them with every getter.
 */
#include "psmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const struct psmsg_view *v, int depth)
{
    size_t pos = 0;
    struct psmsg_field f;
    char s[64];
    uint32_t u;
    uint64_t u64;
    while (psmsg_next(v, &pos, &f)) {
        psmsg_field_str(&f, s, sizeof s);
        psmsg_field_u32(&f, &u);
        psmsg_field_u64(&f, &u64);
        struct psmsg_view r = psmsg_record(&f);
        if (r.len && depth < PSMSG_DEPTH) walk(&r, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct psmsg m;
    psmsg_frame_len(data, size);
    if (psmsg_parse(data, size, &m) == 0) walk(&m.body, 0);
    return 0;
}
