/*
 * pmi2_hello.c - a program linked against libpmi2.so (the PMI tests, test/shell/mpi_lib.sh):
 * PMI2_Init, the job's id, a put whose value holds ';' and '=', the fence, a get of every
 * rank's value, the job attributes PMI_process_mapping and universeSize, the node's
 * localRanks, a node attribute put by the node's first rank and read by the others
 * (waiting for it), PMI2_Finalize. It prints
 *   pmi2 RANK of SIZE job ID mapping M local N: R,R,... ok
 * or a line starting with "FAIL". "abort" as argument: PMI2_Abort after the fence instead.
 */
#include <pmi2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != PMI2_SUCCESS) {                                                                 \
            printf("FAIL %s: %d\n", #call, rc_);                                                   \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int spawned = -1, size = -1, rank = -1, appnum = -1, found = 0, vlen = 0;
    char job[300], key[64], val[PMI2_MAX_VALLEN + 1], want[PMI2_MAX_VALLEN + 1];
    char map[PMI2_MAX_ATTRVALUE + 1];
    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    if (!PMI2_Initialized() || spawned != 0 || appnum != 0) {
        printf("FAIL init: spawned %d appnum %d\n", spawned, appnum);
        return 1;
    }
    CHECK(PMI2_Job_GetId(job, sizeof job));
    snprintf(key, sizeof key, "k-%d", rank);
    snprintf(val, sizeof val, "a;b;;c=%d;%s", rank * 3, job);
    CHECK(PMI2_KVS_Put(key, val));
    CHECK(PMI2_KVS_Fence());
    if (argc == 2 && strcmp(argv[1], "abort") == 0) PMI2_Abort(1, "pmi2_hello aborts");
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof key, "k-%d", r);
        snprintf(want, sizeof want, "a;b;;c=%d;%s", r * 3, job);
        CHECK(PMI2_KVS_Get(r % 2 ? job : NULL, r, key, val, sizeof val, &vlen));
        if (strcmp(val, want) != 0 || vlen != (int)strlen(want)) {
            printf("FAIL rank %d got %s=%s (%d)\n", rank, key, val, vlen);
            return 1;
        }
    }
    if (PMI2_KVS_Get(NULL, PMI2_ID_NULL, "no-such-key", val, sizeof val, &vlen) == PMI2_SUCCESS) {
        printf("FAIL a missing key was found\n");
        return 1;
    }
    CHECK(PMI2_Info_GetJobAttr("PMI_process_mapping", map, sizeof map, &found));
    if (!found) snprintf(map, sizeof map, "none");
    int univ[1] = {0}, n = 0;
    CHECK(PMI2_Info_GetJobAttrIntArray("universeSize", univ, 1, &n, &found));
    if (!found || n != 1 || univ[0] != size) {
        printf("FAIL universeSize %d (found %d, %d values)\n", univ[0], found, n);
        return 1;
    }
    int cnt[1] = {0}, ranks[256];
    CHECK(PMI2_Info_GetNodeAttrIntArray("localRanksCount", cnt, 1, &n, &found));
    CHECK(PMI2_Info_GetNodeAttrIntArray("localRanks", ranks, 256, &n, &found));
    if (n != cnt[0] || n < 1) {
        printf("FAIL localRanks %d, localRanksCount %d\n", n, cnt[0]);
        return 1;
    }
    /* a node attribute: the node's first rank puts it, the others wait for it */
    snprintf(want, sizeof want, "node-of-%d", ranks[0]);
    if (rank == ranks[0]) CHECK(PMI2_Info_PutNodeAttr("leader", want));
    CHECK(PMI2_Info_GetNodeAttr("leader", val, sizeof val, &found, 1));
    if (!found || strcmp(val, want) != 0) {
        printf("FAIL node attribute leader=%s (found %d)\n", val, found);
        return 1;
    }
    char list[4096] = "";
    int mine = 0;
    for (int i = 0; i < n; i++) {
        size_t o = strlen(list);
        snprintf(list + o, sizeof list - o, "%s%d", i ? "," : "", ranks[i]);
        mine |= ranks[i] == rank;
    }
    CHECK(PMI2_KVS_Fence());
    printf("pmi2 %d of %d job %s mapping %s local %d: %s %s\n", rank, size, job, map, n, list,
           mine ? "ok" : "FAIL (not in its node's ranks)");
    CHECK(PMI2_Finalize());
    return mine ? 0 : 1;
}
