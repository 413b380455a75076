/* Bad input gives typed codes, never a crash: calls before tw_init, NULL
 * pointers, wildcards where an address is needed, unknown datatypes and
 * encodings, endpoints that do not exist, a panic inside the library, calls
 * after tw_finalize. Run with -n 2. */
#include "check.h"

int main(void) {
    tw_address self = {0, 0};
    uint32_t me = 0;

    /* Before tw_init. */
    EXPECT(TW_ERR_NO_ENDPOINT, tw_send(self, 1, NULL, 0));
    EXPECT(TW_ERR_NO_ENDPOINT, tw_node_id(&me));
    ASSERT_LAST_ERROR_HAS("tw_init");
    ASSERT(strncmp(tw_strerror(TW_ERR_TRUNCATED), "TW_ERR_TRUNCATED", 16) == 0);
    ASSERT(strcmp(tw_strerror(12345), "unknown threadwire error code") == 0);
    EXPECT(TW_ERR_INVALID, tw_init(0x80));

    CHECK(tw_init(0));
    EXPECT(TW_ERR_ALREADY, tw_init(0));
    CHECK(tw_node_id(&me));
    CHECK(tw_self(&self));
    EXPECT(TW_ERR_INVALID, tw_node_id(NULL));
    EXPECT(TW_ERR_INVALID, tw_self(NULL));

    /* Sends and receives. */
    int v = 1;
    EXPECT(TW_ERR_INVALID, tw_send((tw_address){TW_ANY, 0}, 1, &v, sizeof v));
    EXPECT(TW_ERR_INVALID, tw_send((tw_address){0, TW_ANY}, 1, &v, sizeof v));
    EXPECT(TW_ERR_INVALID, tw_send(self, TW_ANY_TAG, &v, sizeof v));
    EXPECT(TW_ERR_INVALID, tw_send(self, 1, NULL, 4));
    ASSERT_LAST_ERROR_HAS("NULL");
    EXPECT(TW_ERR_INVALID, tw_send(self, 1, &v, SIZE_MAX)); /* longer than memory */
    EXPECT(TW_ERR_INVALID, tw_recv(self, 1, &v, SIZE_MAX / 2 + 1, NULL));
    EXPECT(TW_ERR_NO_SUCH_ENDPOINT, tw_send((tw_address){99, 0}, 1, &v, sizeof v));
    EXPECT(TW_ERR_NO_SUCH_ENDPOINT, tw_recv((tw_address){99, 0}, 1, &v, sizeof v, NULL));
    EXPECT(TW_ERR_INVALID, tw_recv((tw_address){TW_ANY, 3}, 1, &v, sizeof v, NULL));
    EXPECT(TW_ERR_INVALID, tw_recv(self, 1, NULL, 8, NULL));
    EXPECT(TW_ERR_INVALID, tw_recv_message(self, 1, NULL));
    EXPECT(TW_ERR_INVALID, tw_iprobe(self, 1, NULL, NULL));
    EXPECT(TW_ERR_INVALID, tw_isend(self, 1, &v, sizeof v, NULL));
    EXPECT(TW_ERR_INVALID, tw_irecv(self, 1, NULL, 4, NULL));
    EXPECT(TW_ERR_INVALID, tw_wait(NULL, NULL));
    tw_request *r = TW_REQUEST_NULL;
    EXPECT(TW_ERR_INVALID, tw_wait(&r, NULL));
    CHECK(tw_request_free(&r));
    EXPECT(TW_ERR_INVALID, tw_message_free(NULL));

    /* An empty message to oneself, NULL being fine for no bytes. */
    CHECK(tw_send(self, 2, NULL, 0));
    tw_status st;
    CHECK(tw_recv(self, 2, NULL, 0, &st));
    ASSERT(st.len == 0 && st.source.node == me);

    /* Packing. */
    tw_packer *p = TW_PACKER_NULL;
    EXPECT(TW_ERR_INVALID, tw_packer_new(99, &p));
    EXPECT(TW_ERR_INVALID, tw_packer_new(TW_ENCODING_PORTABLE, NULL));
    EXPECT(TW_ERR_INVALID, tw_pack_int32(NULL, 1));
    CHECK(tw_packer_new(TW_ENCODING_PORTABLE, &p));
    EXPECT(TW_ERR_INVALID, tw_pack_array(p, 0, &v, 1));
    EXPECT(TW_ERR_INVALID, tw_pack_array(p, TW_INT32, NULL, 1));
    EXPECT(TW_ERR_INVALID, tw_pack_string(p, NULL));
    EXPECT(TW_ERR_INVALID, tw_pack_string(p, "\xff\xfe"));
    int64_t wide = 0;
    EXPECT(TW_ERR_INVALID, tw_pack_array(p, TW_INT64, &wide, SIZE_MAX / 4)); /* overflows */
    EXPECT(TW_ERR_INVALID, tw_pack_array(p, TW_INT32, (char *)&v + 1, 1)); /* misaligned */
    CHECK(tw_pack_array(p, TW_INT32, NULL, 0));
    EXPECT(TW_ERR_INVALID, tw_send_packed((tw_address){TW_ANY, TW_ANY}, 1, &p));
    ASSERT(p != TW_PACKER_NULL);
    CHECK(tw_packer_free(&p));
    EXPECT(TW_ERR_INVALID, tw_send_packed(self, 1, &p));
    EXPECT(TW_ERR_INVALID, tw_unpack_int32(NULL, &v));

    /* Handles. */
    uint32_t rank;
    EXPECT(TW_ERR_INVALID, tw_group_rank(NULL, &rank));
    EXPECT(TW_ERR_INVALID, tw_group_world(NULL));
    tw_group *g = TW_GROUP_NULL;
    CHECK(tw_group_free(&g));
    EXPECT(TW_ERR_INVALID, tw_group_create(NULL, 2, &g));
    EXPECT(TW_ERR_INVALID, tw_notify(me, 3));
    EXPECT(TW_ERR_NO_SUCH_ENDPOINT, tw_notify(99, 3));
    EXPECT(TW_ERR_INVALID, tw_notify(TW_ANY, TW_ANY_TAG));
    EXPECT(TW_ERR_INVALID, tw_on_peer_lost(NULL, NULL));

    /* A panic inside the library is an error code, and the library goes on. */
    EXPECT(TW_ERR_PANIC, tw_debug_panic("boom"));
    ASSERT_LAST_ERROR_HAS("boom");
    EXPECT(TW_ERR_PANIC, tw_debug_panic(NULL));
    CHECK(tw_send(self, 3, &v, sizeof v));
    CHECK(tw_recv(self, 3, &v, sizeof v, NULL));

    CHECK(tw_finalize());
    EXPECT(TW_ERR_NO_ENDPOINT, tw_send(self, 1, &v, sizeof v));
    EXPECT(TW_ERR_NO_ENDPOINT, tw_node_id(&me));
    EXPECT(TW_ERR_NO_ENDPOINT, tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
