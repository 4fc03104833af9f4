/*
 * mpi_fail.c - an MPI program that fails on purpose, for test/shell/mpi_pmi.sh. Every rank
 * calls MPI_Init and prints "pid PID" (the tests kill by pid), then by MODE (argv[1]):
 *   ring       a token goes around the ranks twice (MPI_Send/MPI_Recv), each adding its
 *              rank; rank 0 prints "ring TOTAL ok" (or "bad"); exit 0
 *   abort N    rank 1 calls MPI_Abort(MPI_COMM_WORLD, N) while the others wait in MPI_Barrier
 *   hang       rank 1 prints "waiting" and sleeps (a test kills it); the others wait in
 *              MPI_Barrier
 *   nofinal    every rank passes one MPI_Barrier (so all have left MPI_Init: a rank gone
 *              while the others still connect to it in MPI_Init makes UCX abort them,
 *              which is another failure), then rank 1 returns 0 without MPI_Finalize and
 *              the others wait in a second MPI_Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ring(int rank, int size)
{
    long tok = 0;
    for (int lap = 0; lap < 2; lap++) {
        if (rank == 0) {
            MPI_Send(&tok, 1, MPI_LONG, 1 % size, 0, MPI_COMM_WORLD);
            MPI_Recv(&tok, 1, MPI_LONG, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&tok, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            tok += rank;
            MPI_Send(&tok, 1, MPI_LONG, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
    }
    long want = (long)size * (size - 1); /* two laps of 1 + ... + size-1 */
    if (rank == 0) printf("ring %ld %s\n", tok, tok == want ? "ok" : "bad");
    return rank == 0 && tok != want;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    const char *mode = argc > 1 ? argv[1] : "ring";
    int rc = 0;
    if (strcmp(mode, "ring") == 0) {
        rc = ring(rank, size);
    } else if (rank == 1 && strcmp(mode, "abort") == 0) {
        MPI_Abort(MPI_COMM_WORLD, argc > 2 ? atoi(argv[2]) : 1);
    } else if (rank == 1 && strcmp(mode, "hang") == 0) {
        printf("waiting\n");
        fflush(stdout);
        for (;;) pause();
    } else if (strcmp(mode, "nofinal") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) return 0;
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
