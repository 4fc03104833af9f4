/*
 * mpi_pingpong.c - MPI ping-pong and bandwidth between ranks 0 and 1 (issue 30 point 5:
 * MPI traffic over the preload library, bench/mpi.sh and test/netns/mpi_preload.sh). For
 * each size from 8 B to 4 MiB (x8 steps, and 4 MiB): a ping-pong of ITER round trips (the
 * half round trip's median, in us) and a stream of WINDOW messages rank 0 -> 1 answered by
 * one ack (MB/s, the median of REPS streams). Every message's bytes are a pattern of (size,
 * iteration) that the receiver checks; a checksum of all it received is printed, equal on
 * every run. Rank 0 prints per size
 *   pp SIZE lat_us L bw_MBs B ok
 * and at the end "check C ok" (or "bad" lines and exit 1). Exactly 2 ranks. -q: fewer
 * iterations (the make check test).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSZ  (4u << 20)
#define WINDOW 16

static void fill(unsigned char *b, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, quick = argc > 1 && strcmp(argv[1], "-q") == 0, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *buf = malloc(MAXSZ), *want = malloc(MAXSZ);
    double *t = malloc(1000 * sizeof *t);
    uint64_t sum = 0;
    if (!buf || !want || !t || size != 2) {
        if (rank == 0) printf("bad: needs exactly 2 ranks, and memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t sizes[16];
    int ns = 0;
    for (size_t s = 8; s < MAXSZ; s *= 8) sizes[ns++] = s;
    sizes[ns++] = MAXSZ;
    for (int k = 0; k < ns && rank < 2; k++) {
        size_t n = sizes[k];
        int iter = n >= (1u << 20) ? (quick ? 4 : 20) : (quick ? 20 : 200);
        int reps = quick ? 2 : 5, peer = 1 - rank;
        for (int i = 0; i < iter; i++) {
            uint32_t seed = (uint32_t)(n * 1000 + (size_t)i);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                fill(buf, n, seed);
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                fill(want, n, seed + 7);
            } else {
                MPI_Recv(buf, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                fill(want, n, seed);
                if (memcmp(buf, want, n) != 0) bad++;
                fill(buf, n, seed + 7);
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                continue;
            }
            t[i] = (MPI_Wtime() - t0) * 1e6 / 2;
            if (memcmp(buf, want, n) != 0) bad++;
            for (size_t j = 0; j < n; j += 4096) sum = sum * 31 + buf[j];
        }
        double lat = rank == 0 ? median(t, iter) : 0;
        for (int r = 0; r < reps; r++) {
            double t0 = MPI_Wtime();
            for (int w = 0; w < WINDOW; w++) {
                uint32_t seed = (uint32_t)(n * 7 + (size_t)(r * WINDOW + w));
                if (rank == 0) {
                    fill(buf, n, seed);
                    MPI_Send(buf, (int)n, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
                } else {
                    MPI_Recv(buf, (int)n, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    fill(want, n, seed);
                    if (memcmp(buf, want, n) != 0) bad++;
                }
            }
            char ack = 0;
            if (rank == 0)
                MPI_Recv(&ack, 1, MPI_CHAR, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else
                MPI_Send(&ack, 1, MPI_CHAR, peer, 4, MPI_COMM_WORLD);
            t[r] = (double)n * WINDOW / (MPI_Wtime() - t0) / 1e6;
        }
        int badall = 0;
        MPI_Allreduce(&bad, &badall, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("pp %zu lat_us %.1f bw_MBs %.1f %s\n", n, lat, median(t, reps),
                   badall ? "bad" : "ok");
    }
    int badall = 0;
    MPI_Allreduce(&bad, &badall, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("check %016llx %s\n", (unsigned long long)sum, badall ? "bad" : "ok");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return badall != 0;
}
