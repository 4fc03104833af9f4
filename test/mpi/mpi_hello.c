/*
 * mpi_hello.c - an MPI program for the PMI tests (test/shell/mpi_pmi.sh) and the launch
 * benchmark (bench/mpi.sh): every rank prints "hello RANK of SIZE on NAME", then an
 * MPI_Allreduce of the ranks' (rank + 1) whose sum every rank checks and prints as
 * "sum RANK S ok" (or "bad"). Exit 0 if the sum is right.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    printf("hello %d of %d on %s\n", rank, size, name);
    long mine = rank + 1, sum = 0, want = (long)size * (size + 1) / 2;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    printf("sum %d %ld %s\n", rank, sum, sum == want ? "ok" : "bad");
    fflush(stdout);
    MPI_Finalize();
    return sum == want ? 0 : 1;
}
