/*
 * fuzz_treewire.c - libFuzzer target for the launch tree's decoders (psid/treewire.c): any
 * bytes as a message; a PSM_D_SPAWN_TREE body is decoded for node 1 and, if it decodes,
 * each part made into a local spawn that must parse; every PSF_START record of it is
 * decoded, and what decodes must encode and decode to the same answer; every PSF_EXIT
 * record is decoded, and what decodes has its fields, and is urgent exactly when its
 * status or PMI state says so.
 */
#include "../../psid/treewire.h"
#include "psproto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct psmsg m;
    if (psmsg_parse(data, size, &m) < 0) return 0;
    struct tree_spawn t;
    const char *why = NULL;
    if (tree_spawn_decode(&m.body, 1, &t, &why) == 0) {
        if (!t.n || t.parts[0].node != 1) abort();
        for (size_t i = 0; i < t.n; i++) {
            if (!t.parts[i].nranks || (i && t.parts[i].pos <= t.parts[i - 1].pos)) abort();
            struct psmsg_buf b = {0};
            psmsg_begin(&b, PSM_D_SPAWN, 0);
            tree_put_local(&b, &m.body, &t.parts[i]);
            struct psmsg lm;
            if (psmsg_end(&b) == 0 && psmsg_parse(b.data, b.len, &lm) < 0) abort();
            psmsg_buf_free(&b);
        }
        tree_spawn_free(&t);
    } else if (!why) {
        abort();
    }
    size_t pos = 0;
    static struct tree_start s, s2;
    for (int rc; (rc = tree_start_next(&m.body, &pos, &s, &why)) != 0;) {
        if (rc < 0) continue;
        struct psmsg_buf b = {0};
        psmsg_begin(&b, PSM_D_STARTED, 0);
        tree_start_put(&b, &s);
        struct psmsg m2;
        struct psmsg_field f2;
        if (psmsg_end(&b) < 0 || psmsg_parse(b.data, b.len, &m2) < 0 ||
            !psmsg_find(&m2.body, PSF_START, &f2))
            abort();
        struct psmsg_view rec2 = psmsg_record(&f2);
        if (tree_start_decode(&rec2, &s2, &why) < 0 || s2.rank != s.rank || s2.node != s.node ||
            s2.ok != s.ok || s2.tid != s.tid || s2.err != s.err || strcmp(s2.text, s.text) ||
            strcmp(s2.cpus, s.cpus))
            abort();
        psmsg_buf_free(&b);
    }
    pos = 0;
    struct tree_exit x;
    for (int rc; (rc = tree_exit_next(&m.body, &pos, &x, &why)) != 0;) {
        if (rc < 0) {
            if (!why) abort();
            continue;
        }
        uint32_t st = 1;
        if (psmsg_get_u32(&x.rec, PSF_STATUS, &st) < 0 || st != x.status ||
            x.urgent != tree_exit_urgent(&x.rec))
            abort();
    }
    return 0;
}
