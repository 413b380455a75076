/* The shared memory from fibers: F fibers per node take the job's lock
 * and their node's in turn, add to shared counters (each node's homed on
 * another, so that faults park the fibers), meet at barriers and check
 * every node's sums. Run with -n 3. */
#include "check.h"

#define F 4       /* fibers per node, all in the barriers */
#define ROUNDS 50 /* locked increments per fiber */

static uint32_t me, nodes;
static long *counts; /* one per node, each homed on the next node */
static long *total;  /* under lock 9 */

static int body(void *arg) {
    long k = (long)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(tw_dsm_lock(9));
        (*total)++;
        CHECK(tw_dsm_unlock(9));
        CHECK(tw_dsm_lock(100 + me)); /* this node's own lock */
        counts[me * 512] += k + 1;
        CHECK(tw_dsm_unlock(100 + me));
        if (r % 10 == 0) CHECK(tw_dsm_barrier());
    }
    CHECK(tw_dsm_barrier());
    ASSERT(*total == (long)nodes * F * ROUNDS);
    for (uint32_t n = 0; n < nodes; n++) ASSERT(counts[n * 512] == ROUNDS * F * (F + 1) / 2);
    CHECK(tw_dsm_barrier());
    return 0;
}

int main(void) {
    CHECK(tw_init(0));
    CHECK(tw_node_id(&me));
    CHECK(tw_node_count(&nodes));
    CHECK(tw_dsm_init(0, 4096, F));
    /* A page (512 longs) per node, homed round robin from the next unit:
     * counts[n * 512] lives on node n + 1 (mod nodes). */
    void *p;
    CHECK(tw_dsm_malloc(4096, TW_DSM_NODE(0), &p));
    total = p;
    CHECK(tw_dsm_malloc(nodes * 4096, TW_DSM_ROUND_ROBIN, &p));
    counts = p;

    tw_thread *fibers[F];
    for (long k = 0; k < F; k++) CHECK(tw_fiber_spawn(body, (void *)(intptr_t)k, &fibers[k]));
    for (int k = 0; k < F; k++) {
        int result = -1;
        CHECK(tw_thread_join(&fibers[k], &result));
        ASSERT(result == 0);
    }
    tw_dsm_counters stats;
    CHECK(tw_dsm_stats(&stats));
    if (nodes > 1) ASSERT(stats.fetches > 0 && stats.diffs > 0);
    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
