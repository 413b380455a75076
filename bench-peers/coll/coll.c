/* Collective latency of an MPI, OSU-style, for `threadwire bench coll --peers`
 * (issue 12): barrier, bcast, allreduce, allgather and alltoall, between MPI
 * ranks or between all OpenMP threads of all ranks (hybrid).
 *
 * Build:  mpicc.openmpi -O2 -fopenmp -o coll coll.c   (or mpicc.mpich)
 * Run:    mpirun.openmpi -np 4 ./coll [options]
 *         mpiexec.mpich -n 2 ./coll --threads 8 [options]
 *
 * Options (as `threadwire bench pingpong`):
 *   --operations LIST   comma-separated, of barrier bcast allreduce allgather
 *                       alltoall (default: all five, in that order)
 *   --sizes LIST        bytes, comma-separated (default 8,65536,1048576,16777216)
 *   --repetitions N     timed repetitions per operation and size (default 5)
 *   --ms MS             milliseconds per repetition (default 100)
 *   --max-ms-per-size M stop a size's repetitions once they have taken M ms,
 *                       after at least 3 (default 0: no limit); for 16 MiB
 *   --threads T         OpenMP threads per rank (default 1: plain MPI)
 *
 * Members. A member is a rank (T = 1) or a thread of a rank (T > 1); there
 * are M = ranks x T of them, member m = rank * T + thread. Every member has
 * buffers of its own, and a collective is done when every member holds its
 * result in its own buffer. The root of bcast is member 0.
 *
 * Sizes, as the OSU micro-benchmarks count them:
 *   barrier    no data: one row, bytes 0, whatever --sizes says
 *   bcast      SIZE bytes (MPI_BYTE) from the root to every member
 *   allreduce  SIZE bytes of doubles (SIZE/8 of them, MPI_DOUBLE, MPI_SUM)
 *              from every member to every member; SIZE a multiple of 8
 *   allgather  SIZE bytes (MPI_BYTE) from every member; each receives M x SIZE
 *   alltoall   SIZE bytes (MPI_BYTE) from every member to every member; each
 *              sends and receives M x SIZE
 *
 * Hybrid (T > 1), as an MPI+OpenMP program does it: MPI_THREAD_FUNNELED, one
 * parallel region per operation and size, the master thread alone calls MPI;
 * per operation:
 *   barrier    omp barrier; MPI_Barrier (master); omp barrier
 *   bcast      master: MPI_Bcast from member 0's buffer (rank 0) or into a
 *              node buffer (other ranks); omp barrier; every thread copies
 *              into its own buffer
 *   allreduce  omp barrier (every thread's vector is ready); an OpenMP
 *              reduction inside the rank (`omp for` over elements, each
 *              summing the T threads' vectors into a node vector, so threads
 *              share the work and touch disjoint lines); master:
 *              MPI_Allreduce in place among ranks; omp barrier; every thread
 *              copies the result into its own buffer
 *   allgather  every thread copies its block into the node's slot of a node
 *              buffer; omp barrier; master: MPI_Allgather in place;
 *              omp barrier; every thread copies the M blocks out
 *   alltoall   every thread copies its T x ranks outgoing blocks into a node
 *              buffer ordered [dest rank][dest thread][source thread];
 *              omp barrier; master: MPI_Alltoall of T x T blocks per rank;
 *              omp barrier; every thread copies its M incoming blocks out
 * Node buffers written by copies are used alternately (two of each), so that
 * one iteration's copies out need no barrier before the next iteration's
 * writes: those come after the next barrier.
 *
 * Timing (per operation and size):
 *   1. Check: one operation on known contents, every member's result checked;
 *      a wrong result aborts the run (stderr, exit status non-zero).
 *   2. Warm-up and calibration: batches of k = 1, 2, 4, ... iterations until
 *      they have taken half of --ms together; iterations = --ms divided by
 *      the last batch's time per operation (at least 1).
 *   3. Repetitions: each starts with every member in step (the barrier
 *      above), runs the iterations, ends when every member of the rank has
 *      finished (omp barrier); its time is MPI_Wtime around it on the master,
 *      the maximum over ranks (MPI_Allreduce MAX), divided by the iterations.
 *   4. Row: median (the upper one for an even count), minimum and maximum over
 *      repetitions, in microseconds per operation.
 *
 * Output: on rank 0's stdout, one JSON object per line and nothing else:
 *   {"operation":"allreduce","bytes":8,"ranks":2,"threads":1,"members":2,
 *    "repetitions":5,"iterations":123456,"median_us":0.21,"min_us":0.2,
 *    "max_us":0.25}
 * Errors go to stderr, with a non-zero exit status.
 */
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { BARRIER, BCAST, ALLREDUCE, ALLGATHER, ALLTOALL, OPS };
static const char *const op_names[OPS] = {"barrier", "bcast", "allreduce", "allgather",
                                          "alltoall"};

#define MAX_LIST 64
#define MAX_REPETITIONS 100000
#define MAX_ITERATIONS 10000000L

struct args {
    enum op ops[MAX_LIST];
    int n_ops;
    size_t sizes[MAX_LIST];
    int n_sizes;
    int repetitions;
    double seconds;          /* per repetition */
    double max_seconds;      /* per size, 0: no limit */
    int threads;
};

/* The run: its shape, its buffers, and what the master tells the threads. */
struct run {
    int rank, ranks, threads, members;
    enum op op;
    size_t size;
    /* Per thread (member of this rank): its own buffers. */
    unsigned char **send, **recv;
    /* Per rank: node buffers, two each (see the header), and the one the
     * current iteration uses. */
    unsigned char *node[2], *node_send;
    /* Per thread: iterations done, whose parity picks the node buffer. */
    long *iteration;
    /* Set by the master between barriers. */
    double elapsed;
    int failed;
};

static void die(const char *what)
{
    fprintf(stderr, "coll: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void usage(const char *why)
{
    fprintf(stderr,
            "coll: %s\nusage: coll [--operations LIST] [--sizes LIST] [--repetitions N] "
            "[--ms MS] [--max-ms-per-size M] [--threads T]\n",
            why);
    exit(2);
}

static long parse_number(const char *s, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0)
        usage(what);
    return v;
}

static void parse_args(int argc, char **argv, struct args *a)
{
    static const size_t default_sizes[] = {8, 65536, 1048576, 16777216};
    *a = (struct args){.repetitions = 5, .seconds = 0.1, .threads = 1};
    for (int o = 0; o < OPS; o++)
        a->ops[a->n_ops++] = o;
    for (size_t i = 0; i < sizeof default_sizes / sizeof *default_sizes; i++)
        a->sizes[a->n_sizes++] = default_sizes[i];
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (i + 1 >= argc)
            usage("a flag without its value");
        char *value = argv[++i];
        if (!strcmp(flag, "--operations")) {
            a->n_ops = 0;
            for (char *t = strtok(value, ","); t; t = strtok(NULL, ",")) {
                int o = 0;
                while (o < OPS && strcmp(t, op_names[o]))
                    o++;
                if (o == OPS || a->n_ops == MAX_LIST)
                    usage("unknown operation, or too many");
                a->ops[a->n_ops++] = o;
            }
        } else if (!strcmp(flag, "--sizes")) {
            a->n_sizes = 0;
            for (char *t = strtok(value, ","); t; t = strtok(NULL, ",")) {
                if (a->n_sizes == MAX_LIST)
                    usage("too many sizes");
                a->sizes[a->n_sizes++] = (size_t)parse_number(t, "a size is a number of bytes");
            }
        } else if (!strcmp(flag, "--repetitions")) {
            a->repetitions = (int)parse_number(value, "--repetitions takes a count");
        } else if (!strcmp(flag, "--ms")) {
            a->seconds = (double)parse_number(value, "--ms takes milliseconds") / 1e3;
        } else if (!strcmp(flag, "--max-ms-per-size")) {
            a->max_seconds = (double)parse_number(value, "--max-ms-per-size takes ms") / 1e3;
        } else if (!strcmp(flag, "--threads")) {
            a->threads = (int)parse_number(value, "--threads takes a count");
        } else {
            usage("unknown flag");
        }
    }
    if (a->n_ops == 0 || a->n_sizes == 0)
        usage("no operations or no sizes");
    if (a->repetitions < 1 || a->repetitions > MAX_REPETITIONS || a->threads < 1 ||
        a->threads > 1024)
        usage("--repetitions and --threads take 1 or more");
    for (int o = 0; o < a->n_ops; o++)
        for (int s = 0; s < a->n_sizes; s++)
            if (a->ops[o] == ALLREDUCE && (a->sizes[s] == 0 || a->sizes[s] % 8))
                usage("allreduce sizes are whole doubles: multiples of 8 bytes");
}

/* The byte sizes of a member's send and receive buffers, and of one node
 * buffer. */
static void buffer_sizes(const struct run *r, size_t *send, size_t *recv, size_t *node)
{
    size_t s = r->size, m = (size_t)r->members, t = (size_t)r->threads;
    switch (r->op) {
    case BARRIER: *send = *recv = *node = 0; break;
    case BCAST: *send = 0; *recv = s; *node = s; break;
    case ALLREDUCE: *send = s; *recv = s; *node = s; break;
    case ALLGATHER: *send = s; *recv = m * s; *node = m * s; break;
    case ALLTOALL: *send = m * s; *recv = m * s; *node = m * s * t; break;
    default: *send = *recv = *node = 0;
    }
    if (r->threads == 1)
        *node = 0;
}

/* The largest count the operation passes to MPI. */
static size_t largest_count(const struct run *r)
{
    size_t s = r->size, t = (size_t)r->threads;
    switch (r->op) {
    case BCAST: return s;
    case ALLREDUCE: return s / 8;
    case ALLGATHER: return t * s;
    case ALLTOALL: return t * t * s;
    default: return 0;
    }
}

static unsigned char *alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1))
        die("out of memory for the buffers");
    memset(p, 0, bytes ? bytes : 1); /* touched here, not in the first timed op */
    return p;
}

static void alloc_buffers(struct run *r)
{
    size_t send, recv, node;
    buffer_sizes(r, &send, &recv, &node);
    r->send = calloc((size_t)r->threads, sizeof *r->send);
    r->recv = calloc((size_t)r->threads, sizeof *r->recv);
    r->iteration = calloc((size_t)r->threads, sizeof *r->iteration);
    if (!r->send || !r->recv || !r->iteration)
        die("out of memory");
    for (int t = 0; t < r->threads; t++) {
        r->send[t] = alloc(send);
        r->recv[t] = alloc(recv);
    }
    r->node[0] = r->threads > 1 ? alloc(node) : NULL;
    r->node[1] = r->threads > 1 ? alloc(node) : NULL;
    r->node_send = r->threads > 1 && r->op == ALLTOALL ? alloc(node) : NULL;
}

static void free_buffers(struct run *r)
{
    for (int t = 0; t < r->threads; t++) {
        free(r->send[t]);
        free(r->recv[t]);
    }
    free(r->send);
    free(r->recv);
    free(r->iteration);
    free(r->node[0]);
    free(r->node[1]);
    free(r->node_send);
}

static void check_mpi(int rc)
{
    if (rc != MPI_SUCCESS)
        die("an MPI call failed");
}

/* Plain MPI: one member per rank. */
static void op_mpi(struct run *r)
{
    int n = (int)r->size;
    switch (r->op) {
    case BARRIER: check_mpi(MPI_Barrier(MPI_COMM_WORLD)); break;
    case BCAST: check_mpi(MPI_Bcast(r->recv[0], n, MPI_BYTE, 0, MPI_COMM_WORLD)); break;
    case ALLREDUCE:
        check_mpi(MPI_Allreduce(r->send[0], r->recv[0], n / 8, MPI_DOUBLE, MPI_SUM,
                                MPI_COMM_WORLD));
        break;
    case ALLGATHER:
        check_mpi(MPI_Allgather(r->send[0], n, MPI_BYTE, r->recv[0], n, MPI_BYTE,
                                MPI_COMM_WORLD));
        break;
    case ALLTOALL:
        check_mpi(MPI_Alltoall(r->send[0], n, MPI_BYTE, r->recv[0], n, MPI_BYTE,
                               MPI_COMM_WORLD));
        break;
    default: break;
    }
}

/* Hybrid: called by every thread of the rank's parallel region. */
static void op_hybrid(struct run *r, int tid)
{
    size_t s = r->size, T = (size_t)r->threads, R = (size_t)r->ranks;
    unsigned char *node = r->node[r->iteration[tid]++ & 1];
    int master = tid == 0;
    switch (r->op) {
    case BARRIER: {
#pragma omp barrier
        if (master)
            check_mpi(MPI_Barrier(MPI_COMM_WORLD));
#pragma omp barrier
        break;
    }
    case BCAST: {
        unsigned char *from = r->rank == 0 ? r->recv[0] : node;
        if (master)
            check_mpi(MPI_Bcast(from, (int)s, MPI_BYTE, 0, MPI_COMM_WORLD));
#pragma omp barrier
        if (from != r->recv[tid])
            memcpy(r->recv[tid], from, s);
        break;
    }
    case ALLREDUCE: {
        double *sum = (double *)node;
        long n = (long)(s / 8);
        /* Each thread reads every thread's vector: all must have entered. */
#pragma omp barrier
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++) {
            double v = 0;
            for (size_t t = 0; t < T; t++)
                v += ((const double *)r->send[t])[i];
            sum[i] = v;
        }
        /* the implicit barrier of `omp for` */
        if (master)
            check_mpi(MPI_Allreduce(MPI_IN_PLACE, sum, (int)n, MPI_DOUBLE, MPI_SUM,
                                    MPI_COMM_WORLD));
#pragma omp barrier
        memcpy(r->recv[tid], sum, s);
        break;
    }
    case ALLGATHER:
        memcpy(node + ((size_t)r->rank * T + (size_t)tid) * s, r->send[tid], s);
#pragma omp barrier
        if (master)
            check_mpi(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, node, (int)(T * s),
                                    MPI_BYTE, MPI_COMM_WORLD));
#pragma omp barrier
        memcpy(r->recv[tid], node, R * T * s);
        break;
    case ALLTOALL:
        /* node_send[dest rank][dest thread][source thread] */
        for (size_t d = 0; d < R * T; d++)
            memcpy(r->node_send + ((d * T) + (size_t)tid) * s, r->send[tid] + d * s, s);
#pragma omp barrier
        if (master)
            check_mpi(MPI_Alltoall(r->node_send, (int)(T * T * s), MPI_BYTE, node,
                                   (int)(T * T * s), MPI_BYTE, MPI_COMM_WORLD));
#pragma omp barrier
        /* node[source rank][this thread][source thread] -> recv[source member] */
        for (size_t q = 0; q < R; q++)
            memcpy(r->recv[tid] + q * T * s, node + ((q * T + (size_t)tid) * T) * s, T * s);
        break;
    default: break;
    }
}

static void iterate(struct run *r, int tid, long iterations)
{
    for (long i = 0; i < iterations; i++) {
        if (r->threads == 1)
            op_mpi(r);
        else
            op_hybrid(r, tid);
    }
}

/* Every member in step: omp barrier; MPI_Barrier; omp barrier. */
static void in_step(int tid)
{
#pragma omp barrier
    if (tid == 0)
        check_mpi(MPI_Barrier(MPI_COMM_WORLD));
#pragma omp barrier
}

/* Seconds per batch of `iterations`, the maximum over ranks; every member
 * returns the same value. */
static double timed_batch(struct run *r, int tid, long iterations)
{
    double start = 0;
    in_step(tid);
    if (tid == 0)
        start = MPI_Wtime();
    iterate(r, tid, iterations);
#pragma omp barrier
    if (tid == 0) {
        double local = MPI_Wtime() - start;
        check_mpi(MPI_Allreduce(&local, &r->elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    }
#pragma omp barrier
    return r->elapsed;
}

static unsigned char pattern(size_t a, size_t b, size_t j)
{
    return (unsigned char)(a * 7 + b * 13 + j * 3 + 1);
}

/* Step 1 of the header: fill every member's buffers, run one operation,
 * check every member's result. Returns whether every rank found it right. */
static int check_once(struct run *r, int tid)
{
    size_t s = r->size, M = (size_t)r->members;
    size_t me = (size_t)r->rank * (size_t)r->threads + (size_t)tid;
    int wrong = 0;
    switch (r->op) {
    case BCAST:
        for (size_t j = 0; j < s; j++)
            r->recv[tid][j] = me == 0 ? pattern(0, 0, j) : 0;
        break;
    case ALLREDUCE:
        for (size_t i = 0; i < s / 8; i++)
            ((double *)r->send[tid])[i] = (double)((me + i) % 13);
        break;
    case ALLGATHER:
        for (size_t j = 0; j < s; j++)
            r->send[tid][j] = pattern(me, 0, j);
        break;
    case ALLTOALL:
        for (size_t d = 0; d < M; d++)
            for (size_t j = 0; j < s; j++)
                r->send[tid][d * s + j] = pattern(me, d, j);
        break;
    default: break;
    }
    iterate(r, tid, 1);
    switch (r->op) {
    case BCAST:
        for (size_t j = 0; j < s && !wrong; j++)
            wrong = r->recv[tid][j] != pattern(0, 0, j);
        break;
    case ALLREDUCE:
        for (size_t i = 0; i < s / 8 && !wrong; i++) {
            double expected = 0;
            for (size_t m = 0; m < M; m++)
                expected += (double)((m + i) % 13);
            wrong = ((double *)r->recv[tid])[i] != expected;
        }
        break;
    case ALLGATHER:
        for (size_t m = 0; m < M && !wrong; m++)
            for (size_t j = 0; j < s && !wrong; j++)
                wrong = r->recv[tid][m * s + j] != pattern(m, 0, j);
        break;
    case ALLTOALL:
        for (size_t m = 0; m < M && !wrong; m++)
            for (size_t j = 0; j < s && !wrong; j++)
                wrong = r->recv[tid][m * s + j] != pattern(m, me, j);
        break;
    default: break;
    }
    if (wrong)
        fprintf(stderr, "coll: %s of %zu bytes: member %zu has a wrong result\n",
                op_names[r->op], s, me);
#pragma omp atomic
    r->failed |= wrong;
#pragma omp barrier
    if (tid == 0) {
        int mine = r->failed, any = 0;
        check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        r->failed = any;
    }
#pragma omp barrier
    return !r->failed;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Steps 1-3 of the header, run by every member; the master fills `times`
 * (seconds per operation) and returns through `r` and the pointers. */
static void measure(struct run *r, int tid, const struct args *a, double *times,
                    int *repetitions, long *iterations)
{
    if (!check_once(r, tid)) {
        if (tid == 0)
            die("a collective gave a wrong result");
        return;
    }
    /* Doubling batches until they have taken half a repetition together:
     * a first batch slowed by the scheduler does not end the calibration
     * alone. The last, longest batch sets the iterations: a short batch's
     * rate can be far above what a repetition sustains (MPICH's
     * oversubscribed bcast ran 1000 times slower in long batches). */
    long k = 1;
    double warm = 0, last;
    for (;;) {
        last = timed_batch(r, tid, k);
        warm += last;
        if (warm >= a->seconds / 2 || k >= MAX_ITERATIONS)
            break;
        k *= 2;
    }
    double scaled = last > 0 ? (double)k * a->seconds / last : (double)MAX_ITERATIONS;
    long n = scaled < 1 ? 1 : scaled > (double)MAX_ITERATIONS ? MAX_ITERATIONS : (long)scaled;
    double spent = 0;
    int done = 0;
    while (done < a->repetitions) {
        double t = timed_batch(r, tid, n);
        if (tid == 0)
            times[done] = t / (double)n;
        done++;
        spent += t;
        if (a->max_seconds > 0 && spent >= a->max_seconds && done >= 3)
            break;
    }
    if (tid == 0) {
        *repetitions = done;
        *iterations = n;
    }
}

int main(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    int provided = MPI_THREAD_SINGLE;
    if (a.threads > 1) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
        if (provided < MPI_THREAD_FUNNELED)
            die("this MPI does not provide MPI_THREAD_FUNNELED");
    } else {
        MPI_Init(&argc, &argv);
    }
    struct run r = {.threads = a.threads};
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.ranks);
    r.members = r.ranks * r.threads;
    double *times = malloc(sizeof *times * (size_t)a.repetitions);
    if (!times)
        die("out of memory");
    for (int o = 0; o < a.n_ops; o++) {
        for (int s = 0; s < a.n_sizes; s++) {
            if (a.ops[o] == BARRIER && s > 0)
                break;
            r.op = a.ops[o];
            r.size = r.op == BARRIER ? 0 : a.sizes[s];
            if (largest_count(&r) > (size_t)INT32_MAX)
                die("a size too large for MPI's int counts");
            r.failed = 0;
            alloc_buffers(&r);
            int repetitions = 0;
            long iterations = 0;
            if (r.threads == 1) {
                measure(&r, 0, &a, times, &repetitions, &iterations);
            } else {
#pragma omp parallel num_threads(r.threads)
                measure(&r, omp_get_thread_num(), &a, times, &repetitions, &iterations);
            }
            free_buffers(&r);
            if (r.rank == 0) {
                qsort(times, (size_t)repetitions, sizeof *times, compare_doubles);
                printf("{\"operation\":\"%s\",\"bytes\":%zu,\"ranks\":%d,\"threads\":%d,"
                       "\"members\":%d,\"repetitions\":%d,\"iterations\":%ld,"
                       "\"median_us\":%.6g,\"min_us\":%.6g,\"max_us\":%.6g}\n",
                       op_names[r.op], r.size, r.ranks, r.threads, r.members, repetitions,
                       iterations, times[repetitions / 2] * 1e6, times[0] * 1e6,
                       times[repetitions - 1] * 1e6);
                fflush(stdout);
            }
        }
    }
    free(times);
    MPI_Finalize();
    return 0;
}
