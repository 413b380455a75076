/* The shared memory's errors: calls before tw_init and before tw_dsm_init,
 * bad arguments, tw_dsm_init from another thread and twice, a full space,
 * unlocking a lock not held (or another's), locking one held, a lock
 * given up when its fiber ends, and nodes that allocate differently.
 * Run with -n 2. */
#include "check.h"

static int init_from_a_fiber(void *arg) {
    (void)arg;
    return tw_dsm_init(0, 0, 1);
}

static int unlock_main_lock(void *arg) {
    (void)arg;
    return tw_dsm_unlock(3);
}

static int lock_and_leave(void *arg) {
    (void)arg;
    return tw_dsm_lock(4);
}

int main(void) {
    void *p = NULL;
    tw_dsm_counters stats;

    /* Before tw_init. */
    EXPECT(TW_ERR_NO_ENDPOINT, tw_dsm_malloc(64, TW_DSM_ROUND_ROBIN, &p));
    ASSERT_LAST_ERROR_HAS("tw_init");
    EXPECT(TW_ERR_NO_ENDPOINT, tw_dsm_init(0, 0, 1));

    CHECK(tw_init(0));
    uint32_t me, nodes;
    CHECK(tw_node_id(&me));
    CHECK(tw_node_count(&nodes));

    /* Before tw_dsm_init. */
    EXPECT(TW_ERR_NO_DSM, tw_dsm_malloc(64, TW_DSM_ROUND_ROBIN, &p));
    ASSERT_LAST_ERROR_HAS("tw_dsm_init");
    EXPECT(TW_ERR_NO_DSM, tw_dsm_barrier());
    EXPECT(TW_ERR_NO_DSM, tw_dsm_lock(1));
    EXPECT(TW_ERR_NO_DSM, tw_dsm_unlock(1));
    EXPECT(TW_ERR_NO_DSM, tw_dsm_stats(&stats));
    ASSERT(strncmp(tw_strerror(TW_ERR_NO_DSM), "TW_ERR_NO_DSM", 13) == 0);
    ASSERT(strncmp(tw_strerror(TW_ERR_NOT_HELD), "TW_ERR_NOT_HELD", 15) == 0);

    /* tw_dsm_init: thread 0 only, a unit of whole pages. */
    tw_thread *t = TW_THREAD_NULL;
    int result = 0;
    CHECK(tw_fiber_spawn(init_from_a_fiber, NULL, &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_ERR_WRONG_THREAD);
    EXPECT(TW_ERR_INVALID, tw_dsm_init(0, 1000, 1));
    ASSERT_LAST_ERROR_HAS("4096");
    EXPECT(TW_ERR_INVALID, tw_dsm_init(SIZE_MAX, 0, 1));
    CHECK(tw_dsm_init(1 << 20, 4096, 1)); /* 256 units */
    EXPECT(TW_ERR_ALREADY, tw_dsm_init(1 << 20, 4096, 1));

    /* Allocation. */
    EXPECT(TW_ERR_INVALID, tw_dsm_malloc(64, TW_DSM_ROUND_ROBIN, NULL));
    EXPECT(TW_ERR_INVALID, tw_dsm_malloc(64, -3, &p));
    EXPECT(TW_ERR_DSM_FULL, tw_dsm_malloc((1 << 20) + 1, TW_DSM_ROUND_ROBIN, &p));
    EXPECT(TW_ERR_DSM_FULL, tw_dsm_malloc(SIZE_MAX, TW_DSM_BLOCKS, &p));
    uint64_t *a = NULL, *b = NULL;
    CHECK(tw_dsm_malloc(8 * 1024, TW_DSM_NODE(1), (void **)&a));
    CHECK(tw_dsm_malloc(8, TW_DSM_BLOCKS, (void **)&b));
    ASSERT(a != NULL && (uintptr_t)a % 4096 == 0 && (uintptr_t)b == (uintptr_t)a + 8192);
    ASSERT(a[1000] == 0 && b[0] == 0);
    CHECK(tw_dsm_stats(&stats));
    EXPECT(TW_ERR_INVALID, tw_dsm_stats(NULL));

    /* Locks: the taker's until it unlocks; not recursive. */
    EXPECT(TW_ERR_NOT_HELD, tw_dsm_unlock(3));
    ASSERT_LAST_ERROR_HAS("lock 3 is not held");
    CHECK(tw_dsm_lock(3));
    EXPECT(TW_ERR_ALREADY, tw_dsm_lock(3));
    CHECK(tw_fiber_spawn(unlock_main_lock, NULL, &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_ERR_NOT_HELD);
    a[me] = me + 1; /* under lock 3; read by the others under it below */
    CHECK(tw_dsm_unlock(3));
    EXPECT(TW_ERR_NOT_HELD, tw_dsm_unlock(3));

    /* A fiber that ends holding lock 4 gives it up: taking it returns. */
    CHECK(tw_fiber_spawn(lock_and_leave, NULL, &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_SUCCESS);
    CHECK(tw_dsm_lock(4));
    CHECK(tw_dsm_unlock(4));

    CHECK(tw_dsm_barrier());
    for (uint32_t n = 0; n < nodes; n++) ASSERT(a[n] == n + 1);

    /* Nodes that allocate differently: the next barrier says so. */
    CHECK(tw_dsm_malloc(me == 0 ? 4096 : 8192, TW_DSM_ROUND_ROBIN, &p));
    EXPECT(TW_ERR_DSM_DIVERGED, tw_dsm_barrier());
    ASSERT_LAST_ERROR_HAS("allocated differently");

    CHECK(tw_finalize());
    EXPECT(TW_ERR_NO_ENDPOINT, tw_dsm_malloc(64, TW_DSM_ROUND_ROBIN, &p));
    printf("n%u passed\n", me);
    return 0;
}
