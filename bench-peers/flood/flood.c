/* The memory of a flooding sender in an MPI, for `threadwire bench flood
 * --peers` (issue 13, point-to-point under load).
 *
 * Build:  mpicc.openmpi -O2 -o flood flood.c
 * Run:    mpirun.openmpi -np 2 ./flood [options]
 *         mpirun.openmpi -np 2 --mca pml ob1 --mca btl self,tcp ./flood [options]
 *
 * Options (as `threadwire bench flood`):
 *   --count N       messages (default 2000)
 *   --size BYTES    bytes per message (default 1048576)
 *   --delay SECONDS how late the receiver starts (default 3)
 *
 * Rank 0 fills one buffer of SIZE bytes, writes the message's index into its
 * first 8 bytes (when SIZE >= 8) and MPI_Send's it N times to rank 1, the
 * same buffer each time. Rank 1 sleeps DELAY seconds, then MPI_Recv's the N
 * messages into one reused buffer, checking each one's length and index;
 * its time runs from the end of the sleep to the last receive. Both then
 * meet in an MPI_Barrier (rank 0's sends may have returned long before the
 * data left), and each reads its peak resident set (VmHWM of
 * /proc/self/status) and its resident set before the flood (VmHWM read
 * after the buffer was filled).
 *
 * Output: each rank prints one JSON object on a line of stdout and nothing
 * else (mpirun gathers them, in either order):
 *   {"rank":0,"messages":2000,"seconds":0.91,"start_kib":9000,
 *    "peak_kib":12000}
 * rank 0's seconds are the time its N sends took; rank 1's the flood's after
 * it started receiving. Errors go to stderr, with a non-zero exit status.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 13

/* VmHWM of this process in KiB, or -1 if it cannot be read. */
static long vm_hwm_kib(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!status)
        return -1;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(status);
    return kib;
}

static void fail(const char *what) {
    fprintf(stderr, "flood: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    long count = 2000, size = 1 << 20;
    double delay = 3.0;
    int rank, ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--delay"))
            delay = atof(argv[i + 1]);
        else
            fail("unknown option (--count, --size, --delay)");
    }
    if (ranks != 2 || count < 1 || size < 0 || size > INT32_MAX || delay < 0)
        fail("needs 2 ranks, --count >= 1, 0 <= --size < 2^31, --delay >= 0");
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf)
        fail("out of memory");
    memset(buf, 0x5a, size);
    long start_kib = vm_hwm_kib();
    long messages = 0;
    double t0, seconds;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        t0 = MPI_Wtime();
        for (long i = 0; i < count; i++) {
            uint64_t index = (uint64_t)i;
            if (size >= 8)
                memcpy(buf, &index, 8);
            MPI_Send(buf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
            messages++;
        }
        seconds = MPI_Wtime() - t0;
    } else {
        struct timespec late = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
        while (nanosleep(&late, &late) != 0)
            ;
        t0 = MPI_Wtime();
        for (long i = 0; i < count; i++) {
            MPI_Status status;
            int received;
            uint64_t index;
            MPI_Recv(buf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &status);
            MPI_Get_count(&status, MPI_BYTE, &received);
            if (received != size)
                fail("a message of the wrong length");
            if (size >= 8) {
                memcpy(&index, buf, 8);
                if (index != (uint64_t)i)
                    fail("a message out of order");
            }
            messages++;
        }
        seconds = MPI_Wtime() - t0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("{\"rank\":%d,\"messages\":%ld,\"seconds\":%.6f,\"start_kib\":%ld,\"peak_kib\":%ld}\n",
           rank, messages, seconds, start_kib, vm_hwm_kib());
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}
