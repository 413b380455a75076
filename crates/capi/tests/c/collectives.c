/* Groups and collectives over thread 0 of four nodes: the world group,
 * a list, split and dup; barrier, bcast, allreduce, reduce, allgather,
 * gather and scatter on several datatypes; and the errors every member
 * gets. Run with -n 4. */
#include "check.h"

static int use_from_fiber(void *arg) {
    tw_group *g = arg;
    uint32_t rank;
    /* A group belongs to the thread that built it. */
    return tw_group_rank(g, &rank);
}

int main(void) {
    CHECK(tw_init(0));
    uint32_t me, n;
    CHECK(tw_node_id(&me));
    CHECK(tw_node_count(&n));
    ASSERT(n == 4);

    tw_group *world = TW_GROUP_NULL;
    CHECK(tw_group_world(&world));
    uint32_t rank, size;
    CHECK(tw_group_rank(world, &rank));
    CHECK(tw_group_size(world, &size));
    ASSERT(rank == me && size == n);
    tw_address a;
    CHECK(tw_group_address(world, 3, &a));
    ASSERT(a.node == 3 && a.thread == 0);
    EXPECT(TW_ERR_GROUP, tw_group_address(world, 4, &a));
    CHECK(tw_barrier(world));

    int32_t b[3] = {0, 0, 0};
    if (rank == 1) b[0] = 1, b[1] = 2, b[2] = 3;
    CHECK(tw_bcast(world, b, 3, TW_INT32, 1));
    ASSERT(b[0] == 1 && b[1] == 2 && b[2] == 3);

    int32_t isum = (int32_t)rank + 1;
    CHECK(tw_allreduce(world, &isum, 1, TW_INT32, TW_SUM));
    ASSERT(isum == 10);
    int64_t lmax[2] = {(int64_t)rank << 33, -(int64_t)rank};
    CHECK(tw_allreduce(world, lmax, 2, TW_INT64, TW_MAX));
    ASSERT(lmax[0] == 3ll << 33 && lmax[1] == 0);
    float fsum = 0.5f * (float)rank;
    CHECK(tw_allreduce(world, &fsum, 1, TW_FLOAT, TW_SUM));
    ASSERT(fsum == 3.0f);
    double dmin = 10.0 - rank;
    CHECK(tw_allreduce(world, &dmin, 1, TW_DOUBLE, TW_MIN));
    ASSERT(dmin == 7.0);
    uint32_t bits = 1u << rank;
    CHECK(tw_allreduce(world, &bits, 1, TW_UINT32, TW_BOR));
    ASSERT(bits == 15);

    double dsend[2] = {rank, 1.0}, dresult[2] = {-1, -1};
    CHECK(tw_reduce(world, dsend, rank == 2 ? dresult : NULL, 2, TW_DOUBLE, TW_SUM, 2));
    if (rank == 2) ASSERT(dresult[0] == 6.0 && dresult[1] == 4.0);

    int32_t mine = (int32_t)rank * 10, all[4] = {0};
    CHECK(tw_allgather(world, &mine, 1, TW_INT32, all));
    for (int i = 0; i < 4; i++) ASSERT(all[i] == i * 10);

    uint64_t g = rank + 100, gathered[4] = {0};
    CHECK(tw_gather(world, &g, 1, TW_UINT64, rank == 0 ? gathered : NULL, 0));
    if (rank == 0)
        for (int i = 0; i < 4; i++) ASSERT(gathered[i] == (uint64_t)i + 100);

    int16_t parts[8] = {0, 1, 3, 4, 6, 7, 9, 10}, part[2] = {-1, -1};
    CHECK(tw_scatter(world, rank == 3 ? parts : NULL, 2, TW_INT16, part, 3));
    ASSERT(part[0] == (int16_t)(rank * 3) && part[1] == (int16_t)(rank * 3 + 1));

    /* Split by parity, ranked by descending world rank. */
    tw_group *half = TW_GROUP_NULL;
    CHECK(tw_group_split(world, (int)(rank % 2), -(int64_t)rank, &half));
    uint32_t hrank, hsize;
    CHECK(tw_group_rank(half, &hrank));
    CHECK(tw_group_size(half, &hsize));
    ASSERT(hsize == 2 && hrank == (rank < 2 ? 1u : 0u));
    int32_t hsum = (int32_t)rank;
    CHECK(tw_allreduce(half, &hsum, 1, TW_INT32, TW_SUM));
    ASSERT(hsum == (rank % 2 ? 4 : 2));
    tw_group *none = TW_GROUP_NULL;
    CHECK(tw_group_split(world, rank == 0 ? 0 : -1, 0, &none));
    ASSERT((rank == 0) == (none != TW_GROUP_NULL));
    CHECK(tw_group_free(&none));

    tw_group *copy = TW_GROUP_NULL;
    CHECK(tw_group_dup(world, &copy));
    CHECK(tw_barrier(copy));
    CHECK(tw_group_free(&copy));

    /* A list, in reverse: rank = 3 - node. */
    tw_address reversed[4] = {{3, 0}, {2, 0}, {1, 0}, {0, 0}};
    tw_group *list = TW_GROUP_NULL;
    CHECK(tw_group_create(reversed, 4, &list));
    CHECK(tw_group_rank(list, &rank));
    ASSERT(rank == 3 - me);
    CHECK(tw_group_free(&list));

    /* Errors every member sees alike. */
    EXPECT(TW_ERR_GROUP, tw_bcast(world, b, 3, TW_INT32, 99));
    double dd = 1.0;
    EXPECT(TW_ERR_GROUP, tw_allreduce(world, &dd, 1, TW_DOUBLE, TW_BAND));
    EXPECT(TW_ERR_INVALID, tw_allreduce(world, &dd, 1, 99, TW_SUM));
    EXPECT(TW_ERR_INVALID, tw_allreduce(world, &dd, 1, TW_DOUBLE, 99));
    EXPECT(TW_ERR_INVALID, tw_allreduce(world, NULL, 1, TW_DOUBLE, TW_SUM));
    int64_t aligned[2] = {0, 0};
    EXPECT(TW_ERR_INVALID, tw_allreduce(world, (char *)aligned + 1, 1, TW_INT64, TW_SUM));
    EXPECT(TW_ERR_INVALID, tw_barrier(NULL));
    CHECK(tw_barrier(world));

    tw_thread *t = TW_THREAD_NULL;
    int result = 0;
    CHECK(tw_fiber_spawn(use_from_fiber, world, &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_ERR_WRONG_THREAD);

    CHECK(tw_group_free(&half));
    CHECK(tw_group_free(&world));
    ASSERT(world == TW_GROUP_NULL);
    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
