/* The time of Open MPI's MPI_Comm_spawn, for `threadwire bench spawn`: the
 * MPI peer of adding nodes to a running job.
 *
 * Build:  mpicc.openmpi -O2 -o comm_spawn comm_spawn.c
 * Run:    mpirun.openmpi --allow-run-as-root --oversubscribe -np 1 \
 *             --mca pml ob1 --mca btl self,vader,tcp \
 *             ./comm_spawn COUNT REPETITIONS
 *         (the children reach the parent over tcp: vader does not join
 *         separate jobs; see crates/bench/src/peers/comm_spawn.rs)
 *
 * The parent (the one rank mpirun starts; MPI_Comm_get_parent gives it
 * MPI_COMM_NULL) runs REPETITIONS + 1 rounds, the first an untimed warm-up.
 * A round: read CLOCK_MONOTONIC; one MPI_Comm_spawn of COUNT copies of this
 * program (argv[0]) over MPI_COMM_SELF; MPI_Recv of one int from each child
 * on the intercommunicator (MPI_ANY_SOURCE, COUNT receives); read the clock
 * again. That is the round's time. Then MPI_Comm_disconnect of the
 * intercommunicator, which waits for the children to disconnect too, so
 * no round overlaps the previous round's children.
 *
 * A child (MPI_Comm_get_parent gives the intercommunicator) MPI_Send's its
 * rank to the parent's rank 0, disconnects and finalizes.
 *
 * Output: the parent prints one line per timed round on stdout and nothing
 * else:
 *   comm_spawn COUNT ROUND MICROSECONDS
 * with ROUND from 1 and MICROSECONDS a decimal with a fraction. Children
 * print nothing. Errors go to stderr, with a non-zero exit status.
 */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TAG 14

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void fail(const char *what) {
    fprintf(stderr, "comm_spawn: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int child(MPI_Comm parent) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (MPI_Send(&rank, 1, MPI_INT, 0, TAG, parent) != MPI_SUCCESS)
        fail("a child's send to the parent failed");
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv) {
    MPI_Comm parent, children;
    long count, repetitions;
    int *errcodes;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(parent);
    if (argc != 3)
        fail("usage: comm_spawn COUNT REPETITIONS");
    count = strtol(argv[1], NULL, 10);
    repetitions = strtol(argv[2], NULL, 10);
    if (count < 1 || count > 4096 || repetitions < 1)
        fail("COUNT must be 1 to 4096 and REPETITIONS at least 1");
    errcodes = malloc(count * sizeof *errcodes);
    if (!errcodes)
        fail("out of memory");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (long round = 0; round <= repetitions; round++) {
        double start = now_us(), elapsed;
        if (MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, (int)count, MPI_INFO_NULL, 0,
                           MPI_COMM_SELF, &children, errcodes) != MPI_SUCCESS)
            fail("MPI_Comm_spawn failed");
        for (long i = 0; i < count; i++) {
            int from;
            if (MPI_Recv(&from, 1, MPI_INT, MPI_ANY_SOURCE, TAG, children,
                         MPI_STATUS_IGNORE) != MPI_SUCCESS)
                fail("receiving from a child failed");
        }
        elapsed = now_us() - start;
        MPI_Comm_disconnect(&children);
        if (round > 0) {
            printf("comm_spawn %ld %ld %.1f\n", count, round, elapsed);
            fflush(stdout);
        }
    }
    free(errcodes);
    MPI_Finalize();
    return 0;
}
