/*
 * fuzz_cpus.c - libFuzzer target for the CPU and size parsers (psi/cpus.c) that take what a
 * user typed (psrun) and what a spawn request carries (psid: PSF_CPU_MAP): the input's first
 * byte chooses the parser, the rest (to a NUL) is its text. A list that parses must format
 * back and parse to the same set; a map or mask list that passes its check must give an
 * entry for any rank, within PSCPU_MAX; a bind value's list must pass the check too.
 */
#include "pscpus.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    char text[2048];
    size_t n = size - 1 < sizeof text - 1 ? size - 1 : sizeof text - 1;
    memcpy(text, data + 1, n);
    text[n] = 0;
    char why[256], out[8192];
    struct pscpuset s, t, all;
    uint64_t v;
    uint32_t mode;
    const char *list;
    switch (data[0] % 5) {
    case 0:
        if (pscpu_parse_list(text, &s, why, sizeof why) == 0) {
            if (pscpu_format_list(&s, out, sizeof out) != 0) abort();
            if (pscpu_parse_list(out, &t, why, sizeof why) != 0) abort();
            if (memcmp(&s, &t, sizeof s) != 0) abort();
        }
        break;
    case 1:
    case 2: {
        bool mask = data[0] % 5 == 2;
        int k = pscpu_map_check(text, mask, &all, why, sizeof why);
        if (k < 0) break;
        if (k == 0 || k > PSCPU_MAP_MAX) abort();
        for (uint32_t r = 0; r < 3; r++) {
            if (pscpu_map_entry(text, mask, r * 7919u, &s) != 0) abort();
            if (!pscpu_count(&s) || !pscpu_subset(&s, &all)) abort();
        }
        break;
    }
    case 3:
        if (pscpu_parse_bind(text, &mode, &list, why, sizeof why) == 0 && list) {
            uint32_t m = mode & PSBIND_MODE_MASK;
            if (m != PSBIND_MAP_CPU && m != PSBIND_MASK_CPU) abort();
            if (pscpu_map_check(list, m == PSBIND_MASK_CPU, NULL, NULL, 0) <= 0) abort();
        }
        break;
    default:
        if (ps_parse_size(text, 1ull << 20, &v) == 0) ps_format_size(v, out, 64);
        break;
    }
    return 0;
}
