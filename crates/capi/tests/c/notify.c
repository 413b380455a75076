/* Failure notification: node 0 asks to be told when node 1 leaves, by a
 * message and by a callback; node 1 finishes. Run with -n 2. */
#include "check.h"

static int told_node = -1, told_failed = -1;

static void peer_lost(uint32_t node, int failed, void *user) {
    (void)user;
    __atomic_store_n(&told_failed, failed, __ATOMIC_SEQ_CST);
    __atomic_store_n(&told_node, (int)node, __ATOMIC_SEQ_CST);
}

int main(void) {
    CHECK(tw_init(0));
    uint32_t me;
    CHECK(tw_node_id(&me));
    tw_group *world = TW_GROUP_NULL;
    CHECK(tw_group_world(&world));
    if (me == 0) {
        CHECK(tw_on_peer_lost(peer_lost, NULL));
        CHECK(tw_notify(1, 500));
    }
    CHECK(tw_barrier(world)); /* subscribed before node 1 leaves */
    CHECK(tw_group_free(&world));
    if (me == 0) {
        tw_message *m = TW_MESSAGE_NULL;
        CHECK(tw_recv_message(TW_ANY_SOURCE, 500, &m));
        tw_status st;
        CHECK(tw_message_status(m, &st));
        ASSERT(st.source.node == 1 && st.source.thread == 0);
        tw_unpacker *u = TW_UNPACKER_NULL;
        CHECK(tw_unpacker_new(&m, &u));
        uint32_t kind, node, cause;
        CHECK(tw_unpack_uint32(u, &kind));
        CHECK(tw_unpack_uint32(u, &node));
        CHECK(tw_unpack_uint32(u, &cause));
        char why[256];
        size_t len;
        CHECK(tw_unpack_string(u, why, sizeof why, &len));
        ASSERT(kind == 1 && node == 1 && cause == 0 && len == 0);
        CHECK(tw_unpacker_free(&u));
    }
    CHECK(tw_finalize());
    if (me == 0) {
        /* The callback ran in the thread that read node 1's goodbye:
         * this one, the only one driving progress in this program, before
         * its receive returned. */
        ASSERT(__atomic_load_n(&told_node, __ATOMIC_SEQ_CST) == 1);
        ASSERT(__atomic_load_n(&told_failed, __ATOMIC_SEQ_CST) == 0);
    }
    printf("n%u passed\n", me);
    return 0;
}
