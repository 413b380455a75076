/*
 * The MPI peer of `threadwire bench spawn`'s launcher rows (issue 15):
 * a job of N ranks where each initializes, passes one int to its right
 * neighbour (rank + 1 mod N) while receiving one from its left
 * (rank - 1 mod N), and finalizes. The launcher's whole run, from its
 * start to its exit, is what is timed, by the caller; this program prints
 * nothing unless the int it received is not its left neighbour's rank.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, received = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 15, &received, 1, MPI_INT, left, 15,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int failed = received != left;
    if (failed)
        fprintf(stderr, "ring: rank %d received %d from %d\n", rank, received, left);
    MPI_Finalize();
    return failed;
}
