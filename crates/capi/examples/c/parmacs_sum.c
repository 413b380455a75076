/* PARMACS on the shared memory: T processes per node add their ids to a
 * shared sum under a lock; after a barrier process 0 prints it.
 *   cc -I crates/capi/include parmacs_sum.c -lthreadwire -o parmacs_sum
 *   threadwire run -n 2 -- ./parmacs_sum   # 4 processes, sum of pids 6 */
#include <stdio.h>
#include <parmacs.h>

#define T 2 /* processes per node */

MAIN_ENV

struct shared {
    LOCKDEC(lock)
    long sum;
    BARDEC(bar)
} *g;

static void work(void) {
    long pid, P = parmacs_processes();
    GET_PID(pid);
    LOCK(g->lock)
    g->sum += pid;
    UNLOCK(g->lock)
    BARRIER(g->bar, P)
    if (pid == 0) printf("%ld processes, sum of pids %ld\n", P, g->sum);
}

int main(void) {
    MAIN_INITENV(T, 0)        /* every node runs main */
    g = G_MALLOC(sizeof *g);  /* collective: the same address everywhere */
    LOCKINIT(g->lock)
    BARINIT(g->bar)
    for (int i = 0; i < T; i++) CREATE(work)
    WAIT_FOR_END(T)
    MAIN_END
}
