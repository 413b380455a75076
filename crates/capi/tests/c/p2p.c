/* Point to point between two nodes: blocking and nonblocking sends and
 * receives, wildcards, truncation, library-owned messages, probes, and a
 * withdrawn receive that loses no message. Run with -n 2. */
#include "check.h"

int main(void) {
    CHECK(tw_init(0));
    uint32_t me, n;
    CHECK(tw_node_id(&me));
    CHECK(tw_node_count(&n));
    ASSERT(n == 2);
    tw_address self;
    CHECK(tw_self(&self));
    ASSERT(self.node == me && self.thread == 0);
    tw_address peer = {1 - me, 0};
    tw_status st;

    /* Blocking ping-pong, the reply matched by source and tag. */
    if (me == 0) {
        int v = 7;
        CHECK(tw_send(peer, 1, &v, sizeof v));
        CHECK(tw_recv(peer, 2, &v, sizeof v, &st));
        ASSERT(v == 8 && st.source.node == 1 && st.source.thread == 0);
        ASSERT(st.tag == 2 && st.len == sizeof v);
    } else {
        int v = 0;
        CHECK(tw_recv(TW_ANY_SOURCE, TW_ANY_TAG, &v, sizeof v, &st));
        ASSERT(st.tag == 1 && st.source.node == 0 && v == 7);
        v++;
        CHECK(tw_send(peer, 2, &v, sizeof v));
    }

    /* Truncation: the buffer gets the first bytes, the status the length. */
    if (me == 0) {
        char big[100];
        memset(big, 'x', sizeof big);
        CHECK(tw_send(peer, 3, big, sizeof big));
    } else {
        char small[10] = {0};
        EXPECT(TW_ERR_TRUNCATED, tw_recv(peer, 3, small, sizeof small, &st));
        ASSERT(st.len == 100 && st.tag == 3 && small[9] == 'x');
        ASSERT_LAST_ERROR_HAS("100 bytes");
    }

    /* A long message: probed (any thread of node 0), then received into a
     * buffer the library owns. */
    size_t long_len = 1 << 20;
    if (me == 0) {
        unsigned char *buf = malloc(long_len);
        for (size_t i = 0; i < long_len; i++) buf[i] = (unsigned char)(i % 251);
        CHECK(tw_send(peer, 4, buf, long_len));
        free(buf);
    } else {
        tw_address any_of_node0 = {0, TW_ANY};
        CHECK(tw_probe(any_of_node0, 4, &st));
        ASSERT(st.len == long_len && st.source.node == 0);
        tw_message *m = TW_MESSAGE_NULL;
        CHECK(tw_recv_message(any_of_node0, 4, &m));
        const void *data;
        size_t len;
        CHECK(tw_message_data(m, &data, &len));
        ASSERT(len == long_len);
        const unsigned char *bytes = data;
        for (size_t i = 0; i < long_len; i++) ASSERT(bytes[i] == (unsigned char)(i % 251));
        CHECK(tw_message_status(m, &st));
        ASSERT(st.tag == 4 && st.len == long_len);
        CHECK(tw_message_free(&m));
        ASSERT(m == TW_MESSAGE_NULL);
        CHECK(tw_message_free(&m)); /* freeing NULL does nothing */
    }

    /* Nonblocking exchange: the send's buffer is free at once. */
    {
        int in = -1, out = (int)me + 100;
        tw_request *recv_req = TW_REQUEST_NULL, *send_req = TW_REQUEST_NULL;
        CHECK(tw_irecv(peer, 5, &in, sizeof in, &recv_req));
        CHECK(tw_isend(peer, 5, &out, sizeof out, &send_req));
        out = 0;
        int done = 0;
        CHECK(tw_test(&recv_req, &done, &st));
        if (!done) CHECK(tw_wait(&recv_req, &st));
        ASSERT(recv_req == TW_REQUEST_NULL);
        ASSERT(in == (int)(1 - me) + 100 && st.len == sizeof in && st.tag == 5);
        CHECK(tw_wait(&send_req, NULL));
        ASSERT(send_req == TW_REQUEST_NULL);
    }

    /* Probes without waiting: nothing with tag 99; the message of tag 6
     * once a blocking probe has seen it. */
    {
        int found = -1;
        CHECK(tw_iprobe(TW_ANY_SOURCE, 99, &found, NULL));
        ASSERT(found == 0);
        int v = 6;
        CHECK(tw_send(peer, 6, &v, sizeof v));
        CHECK(tw_probe(peer, 6, NULL));
        CHECK(tw_iprobe(peer, 6, &found, &st));
        ASSERT(found == 1 && st.len == sizeof v);
        CHECK(tw_recv(peer, 6, &v, sizeof v, NULL));
    }

    /* A receive freed before a message matched it is withdrawn: the
     * message goes to the next receive. */
    if (me == 1) {
        int v = 0;
        tw_request *r = TW_REQUEST_NULL;
        CHECK(tw_irecv(peer, 7, &v, sizeof v, &r));
        CHECK(tw_request_free(&r));
        ASSERT(r == TW_REQUEST_NULL);
        CHECK(tw_send(peer, 8, NULL, 0));
        CHECK(tw_recv(peer, 7, &v, sizeof v, NULL));
        ASSERT(v == 77);
    } else {
        CHECK(tw_recv(peer, 8, NULL, 0, &st));
        ASSERT(st.len == 0);
        int v = 77;
        CHECK(tw_send(peer, 7, &v, sizeof v));
    }

    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
