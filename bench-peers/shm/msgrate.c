/* 8-byte message rate between two MPI processes with T threads each.
 *
 * Rank 0: T threads, thread t sends N 8-byte messages to rank 1 with
 * tag t, as MPI_Isend in windows of W followed by MPI_Waitall.
 * Rank 1: T threads, thread t receives N messages with tag t, as MPI_Irecv
 * in windows of W followed by MPI_Waitall.
 *
 * Timing (rank 0): t0 = MPI_Wtime() right after an MPI_Barrier; the threads
 * are already created and are released through a pthread barrier.
 *   send  = t0 .. last thread's last MPI_Waitall (the requested figure; 8 B
 *           sends are eager, so this is local completion)
 *   e2e   = t0 .. arrival of a 0-byte ack rank 1 sends once all its threads
 *           have received everything (end-to-end, includes one latency)
 * One untimed warm-up round (1000 messages per thread) precedes the timed
 * round. Output (rank 0): T N W provided-level send_msgs/s e2e_msgs/s
 *
 * Usage: msgrate T [N] [W]     (defaults N=200000, W=64)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

#define MAXW 1024
static int T, N, W, rank;
static pthread_barrier_t start_bar;
static double t_done[64];

struct arg { int tid; int n; int timed; };

static void *worker(void *p)
{
    struct arg *a = p;
    MPI_Request req[MAXW];
    uint64_t buf[MAXW];
    pthread_barrier_wait(&start_bar);
    for (int i = 0; i < W; i++) buf[i] = (uint64_t)a->tid << 32 | i;
    for (int done = 0; done < a->n; ) {
        int k = a->n - done < W ? a->n - done : W;
        for (int i = 0; i < k; i++) {
            if (rank == 0)
                MPI_Isend(&buf[i], 8, MPI_BYTE, 1, a->tid, MPI_COMM_WORLD, &req[i]);
            else
                MPI_Irecv(&buf[i], 8, MPI_BYTE, 0, a->tid, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        done += k;
    }
    t_done[a->tid] = MPI_Wtime();
    return NULL;
}

static void round_(int n, double *send_s, double *e2e_s)
{
    pthread_t th[64];
    struct arg args[64];
    pthread_barrier_init(&start_bar, NULL, T + 1);
    for (int t = 0; t < T; t++) {
        args[t] = (struct arg){ t, n, 1 };
        pthread_create(&th[t], NULL, worker, &args[t]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pthread_barrier_wait(&start_bar);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    double last = 0;
    for (int t = 0; t < T; t++) if (t_done[t] > last) last = t_done[t];
    if (rank == 0) {
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 9999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double tack = MPI_Wtime();
        *send_s = last - t0;
        *e2e_s = tack - t0;
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, 9999, MPI_COMM_WORLD);
    }
    pthread_barrier_destroy(&start_bar);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    T = argc > 1 ? atoi(argv[1]) : 1;
    N = argc > 2 ? atoi(argv[2]) : 200000;
    W = argc > 3 ? atoi(argv[3]) : 64;
    if (T < 1 || T > 64 || W < 1 || W > MAXW) MPI_Abort(MPI_COMM_WORLD, 2);
    if (provided < MPI_THREAD_MULTIPLE && T > 1) {
        if (rank == 0)
            fprintf(stderr, "MPI_THREAD_MULTIPLE not provided (got %d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    double s, e;
    round_(1000, &s, &e);          /* warm-up */
    round_(N, &s, &e);
    if (rank == 0)
        printf("T=%d N=%d W=%d provided=%s send_rate=%.0f e2e_rate=%.0f\n",
               T, N, W, provided == MPI_THREAD_MULTIPLE ? "MULTIPLE" : "lower",
               (double)T * N / s, (double)T * N / e);
    MPI_Finalize();
    return 0;
}
