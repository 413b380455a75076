/*
 * bcastmpi.c: the MPI program of `threadwire bench bcast`. Rank 0 (the
 * root) times MPI_Bcast of each size to the other ranks, one rank per
 * host, inside itself (MPI_Wtime), and prints what it measured.
 *
 *     mpicc -O2 bcastmpi.c -o bcastmpi
 *     mpirun -np K+1 ... bcastmpi [-s SIZES] [-t MS]
 *
 *   -s SIZES   message sizes in bytes, comma-separated (default
 *              8,100,1000,60000,1000000)
 *   -t MS      each size's timed broadcasts go on while they have taken
 *              less than MS milliseconds, at least one (default 200)
 *
 * One broadcast, as every row of `bench bcast` times it: from before the
 * root's MPI_Bcast until the root has received an empty message (tag
 * ACK) from each other rank, which a rank sends once its MPI_Bcast has
 * returned, that is once it has the whole message. Each size is
 * broadcast once untimed first (the warm-up: connections, buffers).
 * Whether another broadcast follows is the root's decision, broadcast
 * (untimed) as one int before each.
 *
 * Rank 0 prints one line per timed broadcast on stdout, nothing else:
 *
 *   bcast size=BYTES ns=NS
 */

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 64
#define TAG_ACK 7

static int parse_sizes(const char *text, long *out)
{
    int count = 0;
    const char *p = text;
    while (*p && count < MAX_ITEMS) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v <= 0 || v > INT_MAX || (*end && *end != ','))
            return -1;
        out[count++] = v;
        p = *end ? end + 1 : end;
    }
    return *p ? -1 : count;
}

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
    long sizes[MAX_ITEMS] = {8, 100, 1000, 60000, 1000000};
    int nsizes = 5;
    long ms = 200;
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            nsizes = parse_sizes(argv[++i], sizes);
        } else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            ms = atol(argv[++i]);
        } else {
            nsizes = -1;
        }
    }
    if (nsizes <= 0 || ms <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: bcastmpi [-s SIZES] [-t MS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
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
    fflush(stdout);
    free(buffer);
    MPI_Finalize();
    return 0;
}
