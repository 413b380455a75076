/* A SPLASH-2-style program in PARMACS (parmacs.h) on the shared memory:
 * processes take their numbers under a lock, count under a lock and an
 * array of locks, and relax a grid red-black; after barriers every
 * process checks the counts, and the first process of each node checks
 * the whole grid against the same relaxation done alone in private
 * memory, bit for bit. Run with -n 1, 2 or 4: T processes per node. */
#include "check.h"
#include <parmacs.h>

#define T 2          /* processes per node */
#define N 96         /* interior points per side; the border is fixed */
#define SWEEPS 8     /* red and black half-sweeps each */
#define COUNTS 200   /* increments of the shared counter per process */
#define SLOTS 3      /* locks of the array */

MAIN_ENV

struct GlobalMemory {
    LOCKDEC(idlock)
    long id;
    LOCKDEC(countlock)
    long counter;
    ALOCKDEC(slotlock, SLOTS)
    long slot[SLOTS];
    BARDEC(start)
} *Global;

static double *grid; /* (N + 2) x (N + 2), shared, homed by row blocks */
static long *finished; /* per process, homed on the last node */
static long P;

#define AT(g, i, j) ((g)[(long)(i) * (N + 2) + (j)])

/* One point's relaxation; the same code for the shared and the private
 * grid, so the two agree to the bit. */
static void relax(double *g, int i, int j) {
    double around = AT(g, i - 1, j) + AT(g, i + 1, j) + AT(g, i, j - 1) + AT(g, i, j + 1);
    AT(g, i, j) = 0.25 * around + 0.5 * (AT(g, i, j) - 0.25 * around);
}

static void border(double *g) {
    for (int k = 0; k < N + 2; k++) {
        AT(g, 0, k) = 1.0 + k;
        AT(g, N + 1, k) = 2.0 * k;
        AT(g, k, 0) = 3.0;
        AT(g, k, N + 1) = 0.5 * k;
    }
}

static void sweep(double *g, int first, int last, int color) {
    for (int i = first; i < last; i++)
        for (int j = 1; j <= N; j++)
            if ((i + j) % 2 == color) relax(g, i, j);
}

static void SlaveStart(void) {
    long pid, my_num;
    GET_PID(pid);
    ASSERT(pid >= 0 && pid < P);

    /* SPLASH-2's numbering: a counter under a lock. */
    LOCK(Global->idlock)
    my_num = Global->id;
    Global->id++;
    UNLOCK(Global->idlock)
    ASSERT(my_num >= 0 && my_num < P);

    for (int k = 0; k < COUNTS; k++) {
        LOCK(Global->countlock)
        Global->counter++;
        UNLOCK(Global->countlock)
    }
    ALOCK(Global->slotlock, pid % SLOTS)
    Global->slot[pid % SLOTS] += pid + 1;
    AULOCK(Global->slotlock, pid % SLOTS)

    /* Rows [first, last) are this process's; process 0 sets the border. */
    int first = 1 + (int)(pid * N / P), last = 1 + (int)((pid + 1) * N / P);
    if (pid == 0) border(grid);
    BARRIER(Global->start, P)

    unsigned long began, ended;
    CLOCK(began);
    for (int s = 0; s < SWEEPS; s++) {
        for (int color = 0; color < 2; color++) {
            sweep(grid, first, last, color);
            BARRIER(Global->start, P);
        }
    }
    CLOCK(ended);
    ASSERT(ended >= began);

    ASSERT(Global->id == P);
    ASSERT(Global->counter == P * COUNTS);
    for (int k = 0; k < SLOTS; k++) {
        long want = 0;
        for (long p = k; p < P; p += SLOTS) want += p + 1;
        ASSERT(Global->slot[k] == want);
    }
    if (pid % T == 0) {
        double *alone = calloc((N + 2) * (N + 2), sizeof *alone);
        ASSERT(alone != NULL);
        border(alone);
        for (int s = 0; s < SWEEPS; s++)
            for (int color = 0; color < 2; color++) sweep(alone, 1, N + 1, color);
        for (int i = 0; i < N + 2; i++)
            for (int j = 0; j < N + 2; j++) {
                if (AT(grid, i, j) != AT(alone, i, j)) {
                    fprintf(stderr, "process %ld: grid[%d][%d] = %.17g, alone %.17g\n",
                            pid, i, j, AT(grid, i, j), AT(alone, i, j));
                    exit(1);
                }
            }
        free(alone);
    }
    finished[pid] = pid + 1;
    BARRIER(Global->start, P)
}

int main(void) {
    MAIN_INITENV(T, 16 << 20)
    P = parmacs_processes();
    long pid;
    GET_PID(pid);
    ASSERT(pid == -1);

    Global = G_MALLOC(sizeof *Global);
    grid = G_MALLOC_HOMED((N + 2) * (N + 2) * sizeof *grid, TW_DSM_BLOCKS);
    finished = G_MALLOC_HOMED(P * sizeof *finished, TW_DSM_NODE(parmacs_nodes() - 1));
    ASSERT(Global != NULL && grid != NULL && finished != NULL);
    LOCKINIT(Global->idlock)
    LOCKINIT(Global->countlock)
    ALOCKINIT(Global->slotlock, SLOTS)
    BARINIT(Global->start)
    ASSERT(Global->idlock == 0 && Global->countlock == 1 && Global->slotlock[SLOTS - 1] == 1 + SLOTS);

    for (int p = 0; p < T; p++) CREATE(SlaveStart)
    WAIT_FOR_END(T)

    /* Written on every node in the last interval: main fetches it from
     * the last node, which must not have left yet (tw_finalize meets). */
    for (long p = 0; p < P; p++) ASSERT(finished[p] == p + 1);

    tw_dsm_counters stats;
    CHECK(tw_dsm_stats(&stats));
    /* One node holds everything: no fetch, and its barriers are its
     * threads' alone (no message). */
    if (parmacs_nodes() > 1) {
        ASSERT(stats.fetches > 0 && stats.fetch.requests >= stats.fetches);
        ASSERT(stats.barrier.requests >= 2 * SWEEPS);
    } else {
        ASSERT(stats.fetches == 0 && stats.barrier.requests == 0);
    }

    printf("n%u passed\n", parmacs_node());
    MAIN_END
}
