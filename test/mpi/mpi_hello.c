/*
 * mpi_hello.c - an MPI program for the PMI tests (test/shell/mpi_pmi.sh) and the launch
 * benchmark (bench/mpi.sh): every rank prints "hello RANK of SIZE on NAME", then an
 * MPI_Allreduce of the ranks' (rank + 1) whose sum every rank checks and prints as
 * "sum RANK S ok" (or "bad"). Exit 0 if the sum is right. With -t, rank 0 also prints
 * "init_ms MAX" (the longest MPI_Init of all ranks, bench/mpi.sh) and -q silences the
 * per-rank lines.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int timed = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0) timed = 1;
        if (strcmp(argv[i], "-q") == 0) quiet = 1;
    }
    double t0 = now_ms();
    MPI_Init(&argc, &argv);
    double init = now_ms() - t0, worst = 0;
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    if (!quiet) printf("hello %d of %d on %s\n", rank, size, name);
    long mine = rank + 1, sum = 0, want = (long)size * (size + 1) / 2;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!quiet || sum != want) printf("sum %d %ld %s\n", rank, sum, sum == want ? "ok" : "bad");
    if (timed) {
        MPI_Reduce(&init, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("init_ms %.1f\n", worst);
    }
    fflush(stdout);
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
