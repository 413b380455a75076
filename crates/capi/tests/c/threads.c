/* Threads of their own: fibers and an OS thread spawned by the library,
 * each an endpoint talking to its twin on the other node; a pthread made an
 * endpoint; a panic inside a fiber's call reported as an error; calls that
 * belong to thread 0. Run with -n 2. */
#include <pthread.h>
#include "check.h"

static uint32_t me;

/* Exchanges a number with the thread of the same number on the other node
 * and returns its own thread number. */
static int twin(void *arg) {
    (void)arg;
    tw_address self;
    CHECK(tw_self(&self));
    tw_address peer = {1 - me, self.thread};
    int out = (int)(self.thread * 10 + me), in = -1;
    CHECK(tw_send(peer, 11, &out, sizeof out));
    CHECK(tw_recv(peer, 11, &in, sizeof in, NULL));
    ASSERT(in == (int)(self.thread * 10 + (1 - me)));
    return (int)self.thread;
}

static int panics(void *arg) {
    int rc = tw_debug_panic(arg);
    ASSERT_LAST_ERROR_HAS("fiber boom");
    return rc;
}

/* Exported: the square of its int argument, from a fiber of the node it
 * was spawned on, which has an endpoint of its own. */
static int square(const void *args, size_t len, void *user) {
    (void)user;
    tw_address self;
    if (len != sizeof(int) || tw_self(&self) != TW_SUCCESS || self.thread == 0) return -1;
    int x;
    memcpy(&x, args, sizeof x);
    return x * x;
}

static int finalizes(void *arg) {
    (void)arg;
    return tw_finalize();
}

static void *attached(void *arg) {
    (void)arg;
    EXPECT(TW_ERR_NO_ENDPOINT, tw_send((tw_address){0, 0}, 1, NULL, 0));
    tw_address self;
    CHECK(tw_thread_attach(&self));
    EXPECT(TW_ERR_ALREADY, tw_thread_attach(NULL));
    ASSERT(self.node == me && self.thread == 5);
    twin(NULL);
    CHECK(tw_thread_detach());
    EXPECT(TW_ERR_NO_ENDPOINT, tw_self(&self));
    return NULL;
}

int main(void) {
    CHECK(tw_init(0));
    CHECK(tw_node_id(&me));

    /* Threads 1-3 are fibers, 4 an OS thread, in the order spawned, on
     * both nodes alike. */
    tw_thread *threads[4];
    for (int i = 0; i < 3; i++) CHECK(tw_fiber_spawn(twin, NULL, &threads[i]));
    CHECK(tw_os_thread_spawn(twin, NULL, &threads[3]));
    for (int i = 0; i < 4; i++) {
        tw_address a;
        CHECK(tw_thread_address(threads[i], &a));
        ASSERT(a.node == me && a.thread == (uint32_t)i + 1);
        int result = -1;
        CHECK(tw_thread_join(&threads[i], &result));
        ASSERT(result == i + 1 && threads[i] == TW_THREAD_NULL);
    }

    /* A C thread of the program's own, made thread 5. */
    pthread_t p;
    ASSERT(pthread_create(&p, NULL, attached, NULL) == 0);
    ASSERT(pthread_join(p, NULL) == 0);

    /* A panic inside the library, caught in the fiber's call. */
    tw_thread *t = TW_THREAD_NULL;
    int result = 0;
    CHECK(tw_fiber_spawn(panics, "fiber boom", &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_ERR_PANIC);

    /* Remote spawn: every node exports, then node 0 spawns on node 1. */
    tw_group *world = TW_GROUP_NULL;
    CHECK(tw_export("test.square", square, NULL));
    EXPECT(TW_ERR_ALREADY, tw_export("test.square", square, NULL));
    CHECK(tw_group_world(&world));
    CHECK(tw_barrier(world));
    if (me == 0) {
        int x = 12;
        tw_remote *r = TW_REMOTE_NULL;
        CHECK(tw_spawn_remote(1, "test.square", &x, sizeof x, &r));
        tw_address a;
        CHECK(tw_remote_address(r, &a));
        ASSERT(a.node == 1 && a.thread != 0);
        CHECK(tw_remote_join(&r, &result));
        ASSERT(result == 144 && r == TW_REMOTE_NULL);
        EXPECT(TW_ERR_SPAWN, tw_spawn_remote(1, "test.nope", NULL, 0, &r));
        ASSERT_LAST_ERROR_HAS("test.nope");
    }
    CHECK(tw_barrier(world));
    CHECK(tw_group_free(&world));

    /* Only thread 0 finalizes; it is no attached thread either. */
    CHECK(tw_fiber_spawn(finalizes, NULL, &t));
    CHECK(tw_thread_join(&t, &result));
    ASSERT(result == TW_ERR_WRONG_THREAD);
    EXPECT(TW_ERR_WRONG_THREAD, tw_thread_detach());
    EXPECT(TW_ERR_ALREADY, tw_thread_attach(NULL));

    EXPECT(TW_ERR_INVALID, tw_fiber_spawn(NULL, NULL, &t));
    EXPECT(TW_ERR_INVALID, tw_fiber_spawn(twin, NULL, NULL));
    EXPECT(TW_ERR_INVALID, tw_thread_join(NULL, NULL));
    t = TW_THREAD_NULL;
    EXPECT(TW_ERR_INVALID, tw_thread_join(&t, NULL));

    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
