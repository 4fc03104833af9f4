/*
 * fuzz_bcastwire.c - libFuzzer target for the file broadcast's decoders: any bytes as a
 * message; a PSM_D_BCAST_OPEN body decoded for node 1 and, if it decodes, its invariants
 * checked and its children found (psid/bcastwire.c); a chunk's and an end's fields; an
 * outcome (psi/bcast.c), which must encode and decode to the same; and the privileged child's
 * PRIV_BCAST_OPEN (psid/privwire.c).
 */
#include "../../psid/bcastwire.h"
#include "../../psid/privsep.h"
#include "../../psid/treewire.h"
#include "psi_bcast.h"
#include "psproto.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_open(const struct psmsg *m)
{
    struct bcast_open o;
    const char *why = NULL;
    if (bcast_open_decode(&m->body, 1, &o, &why) < 0) {
        if (!why) abort();
        return;
    }
    if (!o.n || o.parts[0].node != 1 || o.width < 1 || o.chunk < BCAST_CHUNK_MIN ||
        o.chunk > PSBCAST_CHUNK_MAX || o.dest[0] != '/' || o.flags & ~PSBCAST_F_ALL)
        abort();
    uint32_t *kid_of = calloc(o.n, sizeof *kid_of), *kids = calloc(o.n, sizeof *kids);
    if (kid_of && kids) {
        size_t nkids = bcast_kids(&o, kid_of, kids);
        if (nkids > o.width || nkids + 1 > o.n) abort();
        for (size_t i = 1; i < o.n; i++)
            if (kid_of[i] >= nkids ||
                !tree_under(o.parts[i].pos, o.parts[kids[kid_of[i]]].pos, o.width))
                abort();
    }
    free(kid_of);
    free(kids);
    bcast_open_free(&o);
}

static void check_outcome(const struct psmsg *m)
{
    static struct psi_bcast_result r, r2;
    const char *why = NULL;
    if (psi_bcast_result_parse(&m->body, &r, &why) < 0) {
        if (!why) abort();
        return;
    }
    if (r.nfails > PSBCAST_FAILS || r.failed < r.nfails) abort();
    struct psmsg_buf b = {0};
    psmsg_begin(&b, PSM_D_BCAST_DONE, 0);
    psmsg_put_u32(&b, PSF_COUNT, r.ok);
    psmsg_put_u32(&b, PSF_N, r.failed);
    for (size_t i = 0; i < r.nfails; i++)
        psi_bcast_fail_put(&b, r.fails[i].node, r.fails[i].err, r.fails[i].text);
    struct psmsg m2;
    if (psmsg_end(&b) < 0 || psmsg_parse(b.data, b.len, &m2) < 0 ||
        psi_bcast_result_parse(&m2.body, &r2, &why) < 0 || r2.ok != r.ok || r2.failed != r.failed ||
        r2.nfails != r.nfails)
        abort();
    for (size_t i = 0; i < r.nfails; i++)
        if (r2.fails[i].node != r.fails[i].node || r2.fails[i].err != r.fails[i].err ||
            strcmp(r2.fails[i].text, r.fails[i].text))
            abort();
    psmsg_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct psmsg m;
    if (psmsg_parse(data, size, &m) < 0) return 0;
    check_open(&m);
    uint64_t id;
    uint32_t idx;
    struct psmsg_field f;
    uint8_t sum[32];
    if (bcast_data_decode(&m.body, &id, &idx, &f) == 0 && f.val + f.len > m.body.p + m.body.len)
        abort();
    bcast_end_decode(&m.body, &id, sum);
    check_outcome(&m);
    struct priv_bcast_open po;
    char why[300];
    if (priv_decode_bcast_open(&m, &po, why, sizeof why) == 0 &&
        (po.dest[0] != '/' || po.mode > 0777 || po.uid == UINT32_MAX))
        abort();
    return 0;
}
