/*
 * fuzz_outfile.c - libFuzzer target for psrun's -o/-e arguments (logger/outfile.c): the
 * input's first line is parsed as an IO mode or filename pattern, and a pattern that passes
 * is expanded for a few ranks over a few nodes (the rest of the input says which node each
 * rank is on), with stderr following it and apart. Nothing may read or write out of bounds,
 * and every name built must fit.
 */
#include "../../logger/outfile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *name_of(void *ctx, uint32_t id)
{
    (void)ctx;
    return id % 3 == 2 ? NULL : id % 3 ? "node-with-a-long-name" : "n0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[512];
    size_t n = 0;
    while (n < size && n < sizeof line - 1 && data[n] && data[n] != '\n') {
        line[n] = (char)data[n];
        n++;
    }
    line[n] = '\0';
    uint32_t node[16];
    uint32_t np = 0;
    for (size_t i = n + 1; i < size && np < 16; i++) node[np++] = data[i];
    if (!np) node[np++] = 0;
    char err[256];
    struct lg_outspec o, e = {.kind = LG_OUT_FILE, .pat = "err-%t"};
    if (lg_outspec_parse(line, &o, err, sizeof err) < 0) return 0;
    struct lg_jobfacts f = {.np = np,
                            .node = node,
                            .node_name = name_of,
                            .job = "12:1700000000",
                            .user = "someone",
                            .name = "prog"};
    struct lg_routes r;
    for (int k = 0; k < 2; k++)
        if (lg_routes_build(&o, k ? &e : NULL, &f, &r, err, sizeof err) == 0) {
            for (uint32_t i = 0; i < np; i++)
                for (int s = 0; s < 2; s++) {
                    uint32_t to = r.route[s][i];
                    if (to != LG_ROUTE_STD && to != LG_ROUTE_NONE &&
                        (to >= r.paths.n || strlen(r.paths.v[to]) >= 4096))
                        abort();
                }
            lg_routes_free(&r);
        }
    return 0;
}
