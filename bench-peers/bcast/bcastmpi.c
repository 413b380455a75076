/*
 * bcastmpi.c: the MPI program of `threadwire bench bcast`. Rank 0 (the
 * root) times MPI_Bcast of each size to the other ranks, one rank per
 * host, inside itself (MPI_Wtime), and prints what it measured.
 *
 *     mpicc -O2 bcastmpi.c -o bcastmpi
 *     mpirun -np K+1 ... bcastmpi MS SIZE...
 *
 *   MS         each size's timed broadcasts go on while they have taken
 *              less than MS milliseconds, at least one
 *   SIZE...    message sizes in bytes, at least one
 *
 * One broadcast, as every row of `bench bcast` times it: from before the
 * root's MPI_Bcast until the root has received an empty message (tag
 * ACK) from each other rank, which a rank sends once its MPI_Bcast has
 * returned, that is once it has the whole message. Each size is
 * broadcast once untimed first (the warm-up: connections, buffers).
 * Whether another broadcast follows is the root's decision, broadcast
 * (untimed) as one int before each.
 *
 * Rank 0 prints one line per timed broadcast on stdout, then `done` once
 * every figure is out, flushed before MPI_Finalize; nothing else:
 *
 *   bcast size=BYTES ns=NS
 *   done
 *
 * (MPICH 4.0's ch4:ucx now and then never returns from MPI_Finalize
 * across emulated hosts: one rank progresses its TCP endpoints forever
 * while the others wait in PMI's barrier. `done` lets the caller take
 * the figures and end such a launch.)
 */

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_ACK 7

/* One broadcast and the acks; the root's time in ns (others: 0). */
static double broadcast(char *buffer, int size, int rank, int ranks)
{
    double started = MPI_Wtime();
    MPI_Bcast(buffer, size, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 1; i < ranks; i++)
            MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, TAG_ACK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        return (MPI_Wtime() - started) * 1e9;
    }
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    /* MS, then the sizes: each a positive number and nothing else. */
    long values[argc > 1 ? argc - 1 : 1];
    int bad = argc < 3;
    for (int i = 1; i < argc && !bad; i++) {
        char *end;
        errno = 0;
        values[i - 1] = strtol(argv[i], &end, 10);
        bad = errno || end == argv[i] || *end || values[i - 1] <= 0 || values[i - 1] > INT_MAX;
    }
    if (bad) {
        if (rank == 0)
            fprintf(stderr, "usage: bcastmpi MS SIZE...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long ms = values[0];
    long *sizes = values + 1;
    int nsizes = argc - 2;
    long largest = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > largest)
            largest = sizes[i];
    char *buffer = malloc((size_t)largest);
    if (!buffer)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buffer, 0x5a, (size_t)largest);
    for (int i = 0; i < nsizes; i++) {
        int size = (int)sizes[i];
        broadcast(buffer, size, rank, ranks);
        double spent = 0;
        for (;;) {
            double ns = broadcast(buffer, size, rank, ranks);
            if (rank == 0) {
                spent += ns;
                printf("bcast size=%d ns=%.0f\n", size, ns);
            }
            int more = spent < ms * 1e6;
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (!more)
                break;
        }
    }
    if (rank == 0)
        printf("done\n");
    fflush(stdout);
    free(buffer);
    MPI_Finalize();
    return 0;
}
