/*
 * pmi1_hello.c - a program linked against libpmi.so (the PMI tests, test/shell/mpi_lib.sh):
 * PMI_Init, its rank, size, universe, appnum and KVS name, a put (its value holds spaces, as
 * Open MPI's do), the barrier, a get of every rank's value, its clique (PMI_Get_clique_size/ranks),
 * PMI_Finalize. It prints pmi1 RANK of SIZE universe U appnum A clique N: R,R,... ok or a line
 * starting with "FAIL". "abort CODE" as argument: PMI_Abort(CODE) after the barrier instead.
 */
#include <pmi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PMI_SUCCESS) {                                                                  \
            printf("FAIL %s: %d\n", #call, rc_);                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int spawned = -1, rank = -1, size = -1, univ = -1, appnum = -1, inited = 0, len = 0;
    char kvs[300], key[64], val[1100], want[400];
    CHECK(PMI_Init(&spawned));
    CHECK(PMI_Initialized(&inited));
    CHECK(PMI_Get_rank(&rank));
    CHECK(PMI_Get_size(&size));
    CHECK(PMI_Get_universe_size(&univ));
    CHECK(PMI_Get_appnum(&appnum));
    CHECK(PMI_KVS_Get_name_length_max(&len));
    if (!inited || spawned != 0 || len < 1 || len > (int)sizeof kvs) {
        printf("FAIL init: initialized %d spawned %d name max %d\n", inited, spawned, len);
        return 1;
    }
    CHECK(PMI_KVS_Get_my_name(kvs, len));
    snprintf(key, sizeof key, "k-%d", rank);
    snprintf(val, sizeof val, "v=%d %s  ", rank * 7, kvs); /* spaces, trailing too */
    CHECK(PMI_KVS_Put(kvs, key, val));
    if (PMI_KVS_Put(kvs, "bad", "a\ttab") != PMI_ERR_INVALID_VAL) {
        printf("FAIL a value with a tab was taken\n");
        return 1;
    }
    CHECK(PMI_KVS_Commit(kvs));
    if (PMI_KVS_Get(kvs, "no-such-key", val, sizeof val) == PMI_SUCCESS) {
        printf("FAIL a missing key was found\n");
        return 1;
    }
    CHECK(PMI_Barrier());
    if (argc == 3 && strcmp(argv[1], "abort") == 0) PMI_Abort(atoi(argv[2]), "pmi1_hello aborts");
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof key, "k-%d", r);
        snprintf(want, sizeof want, "v=%d %s  ", r * 7, kvs);
        CHECK(PMI_KVS_Get(kvs, key, val, sizeof val));
        if (strcmp(val, want) != 0) {
            printf("FAIL rank %d got %s=%s\n", rank, key, val);
            return 1;
        }
    }
    int csize = 0;
    CHECK(PMI_Get_clique_size(&csize));
    int *cl = calloc((size_t)(csize > 0 ? csize : 1), sizeof *cl);
    if (!cl || csize < 1) return 1;
    CHECK(PMI_Get_clique_ranks(cl, csize));
    char list[4096] = "";
    int mine = 0;
    for (int i = 0; i < csize; i++) {
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s%d", i ? "," : "", cl[i]);
        mine |= cl[i] == rank;
    }
    CHECK(PMI_Barrier());
    printf("pmi1 %d of %d universe %d appnum %d clique %d: %s %s\n", rank, size, univ, appnum,
           csize, list, mine ? "ok" : "FAIL (not in its clique)");
    free(cl);
    CHECK(PMI_Finalize());
    return mine ? 0 : 1;
}
