/* Active messages between two nodes: inline and fiber handlers, one-way
 * messages and requests, a failing handler, an unknown one, a panic inside
 * a handler, and what an inline handler may not do. Node 0 asks, node 1
 * serves. Run with -n 2. */
#include "check.h"

static int counted;

/* Inline: answers the sum of two ints. */
static int add(tw_am_message *m, void *user) {
    (void)user;
    const void *data;
    size_t len;
    CHECK(tw_am_data(m, &data, &len));
    if (len != 2 * sizeof(int)) return 2;
    const int *v = data;
    int sum = v[0] + v[1];
    return tw_am_reply(m, &sum, sizeof sum);
}

/* Inline, one-way: counts. */
static int count(tw_am_message *m, void *user) {
    int is_request = -1;
    CHECK(tw_am_is_request(m, &is_request));
    if (is_request) return 4;
    __atomic_fetch_add((int *)user, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* Fails: the sender sees TW_ERR_HANDLER_FAILED. */
static int fail(tw_am_message *m, void *user) {
    (void)m;
    (void)user;
    return 3;
}

/* Inline handlers have no endpoint: answers what tw_send returned. */
static int inline_send(tw_am_message *m, void *user) {
    (void)user;
    tw_address from;
    CHECK(tw_am_source(m, &from));
    int rc = tw_send(from, 1, NULL, 0);
    return tw_am_reply(m, &rc, sizeof rc);
}

/* A fiber handler has an endpoint: answers the payload reversed and sends
 * a message of its own to the requester. */
static int reverse(tw_am_message *m, void *user) {
    (void)user;
    const void *data;
    size_t len;
    CHECK(tw_am_data(m, &data, &len));
    char out[64];
    if (len > sizeof out) return 5;
    for (size_t i = 0; i < len; i++) out[i] = ((const char *)data)[len - 1 - i];
    tw_address from, self;
    CHECK(tw_am_source(m, &from));
    CHECK(tw_self(&self));
    CHECK(tw_send(from, 9, &self, sizeof self));
    return tw_am_reply(m, out, len);
}

/* A panic inside the library, in a fiber handler: an error code there. */
static int panics(tw_am_message *m, void *user) {
    (void)user;
    int rc = tw_debug_panic("boom in a handler");
    if (!strstr(tw_last_error(), "boom in a handler")) return 6;
    return tw_am_reply(m, &rc, sizeof rc);
}

static int request(tw_handler *h, const void *data, size_t len, void *answer, size_t cap,
                   tw_status *st) {
    tw_request *r = TW_REQUEST_NULL;
    CHECK(tw_am_request(1, h, data, len, answer, cap, &r));
    return tw_wait(&r, st);
}

int main(void) {
    CHECK(tw_init(0));
    uint32_t me;
    CHECK(tw_node_id(&me));
    tw_handler *h_add, *h_count, *h_fail, *h_inline_send, *h_reverse, *h_panics;
    CHECK(tw_am_register("test.add", TW_AM_INLINE, add, NULL, &h_add));
    CHECK(tw_am_register("test.count", TW_AM_INLINE, count, &counted, &h_count));
    CHECK(tw_am_register("test.fail", TW_AM_INLINE, fail, NULL, &h_fail));
    CHECK(tw_am_register("test.inline_send", TW_AM_INLINE, inline_send, NULL, &h_inline_send));
    CHECK(tw_am_register("test.reverse", TW_AM_FIBER, reverse, NULL, &h_reverse));
    CHECK(tw_am_register("test.panics", TW_AM_FIBER, panics, NULL, &h_panics));
    EXPECT(TW_ERR_ALREADY, tw_am_register("test.add", TW_AM_INLINE, add, NULL, NULL));
    EXPECT(TW_ERR_INVALID, tw_am_register("test.kind", 7, add, NULL, NULL));
    EXPECT(TW_ERR_INVALID, tw_am_register(NULL, TW_AM_INLINE, add, NULL, NULL));
    EXPECT(TW_ERR_INVALID, tw_am_register("test.null", TW_AM_INLINE, NULL, NULL, NULL));
    tw_group *world = TW_GROUP_NULL;
    CHECK(tw_group_world(&world));
    CHECK(tw_barrier(world)); /* every node has registered */

    if (me == 0) {
        tw_status st;
        int pair[2] = {2, 3}, sum = 0;
        CHECK(request(h_add, pair, sizeof pair, &sum, sizeof sum, &st));
        ASSERT(sum == 5 && st.len == sizeof sum);
        char small[2];
        EXPECT(TW_ERR_TRUNCATED, request(h_add, pair, sizeof pair, small, sizeof small, &st));
        ASSERT(st.len == sizeof sum);

        EXPECT(TW_ERR_HANDLER_FAILED, request(h_fail, NULL, 0, NULL, 0, NULL));
        ASSERT_LAST_ERROR_HAS("returned 3");

        tw_handler *h_nope = TW_HANDLER_NULL;
        CHECK(tw_am_handler("test.nope", &h_nope));
        EXPECT(TW_ERR_UNKNOWN_HANDLER, request(h_nope, NULL, 0, NULL, 0, NULL));
        ASSERT_LAST_ERROR_HAS("test.nope");
        CHECK(tw_handler_free(&h_nope));

        int rc = 0;
        CHECK(request(h_inline_send, NULL, 0, &rc, sizeof rc, NULL));
        ASSERT(rc == TW_ERR_NO_ENDPOINT);

        char reversed[5];
        CHECK(request(h_reverse, "hello", 5, reversed, sizeof reversed, &st));
        ASSERT(st.len == 5 && memcmp(reversed, "olleh", 5) == 0);
        tw_address handler_fiber;
        CHECK(tw_recv((tw_address){1, TW_ANY}, 9, &handler_fiber, sizeof handler_fiber, &st));
        ASSERT(handler_fiber.node == 1 && handler_fiber.thread != 0);
        ASSERT(st.source.thread == handler_fiber.thread);

        CHECK(request(h_panics, NULL, 0, &rc, sizeof rc, NULL));
        ASSERT(rc == TW_ERR_PANIC);

        /* One-way messages, handled in the order sent; a failure shows in
         * tw_am_check once a later request has come back. */
        for (int i = 0; i < 10; i++) CHECK(tw_am_send(1, h_count, NULL, 0));
        CHECK(tw_am_send(1, h_fail, NULL, 0));
        CHECK(request(h_add, pair, sizeof pair, &sum, sizeof sum, NULL));
        EXPECT(TW_ERR_HANDLER_FAILED, tw_am_check());
        CHECK(tw_am_check());
        EXPECT(TW_ERR_NO_SUCH_ENDPOINT, tw_am_send(7, h_count, NULL, 0));
        EXPECT(TW_ERR_INVALID, tw_am_send(1, NULL, NULL, 0));
    }
    CHECK(tw_barrier(world));
    if (me == 1) ASSERT(__atomic_load_n(&counted, __ATOMIC_SEQ_CST) == 10);

    tw_handler **all[] = {&h_add, &h_count, &h_fail, &h_inline_send, &h_reverse, &h_panics};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CHECK(tw_handler_free(all[i]));
    CHECK(tw_group_free(&world));
    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
