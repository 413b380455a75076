/* Pack and unpack every scalar type, arrays, strings and bytes, in the
 * portable and raw encodings; reads of the wrong type or into buffers too
 * small consume nothing. Run with -n 2. */
#include "check.h"

static void pack_all(tw_packer *p) {
    CHECK(tw_pack_uint8(p, 200));
    CHECK(tw_pack_int8(p, -5));
    CHECK(tw_pack_uint16(p, 60000));
    CHECK(tw_pack_int16(p, -30000));
    CHECK(tw_pack_uint32(p, 4000000000u));
    CHECK(tw_pack_int32(p, -2000000000));
    CHECK(tw_pack_uint64(p, 1ull << 40));
    CHECK(tw_pack_int64(p, -(1ll << 40)));
    CHECK(tw_pack_float(p, 1.5f));
    CHECK(tw_pack_double(p, -2.25));
    int32_t ints[5] = {1, 2, 3, 4, 5};
    CHECK(tw_pack_array(p, TW_INT32, ints, 5));
    double doubles[3] = {0.5, 1e300, -0.0};
    CHECK(tw_pack_array(p, TW_DOUBLE, doubles, 3));
    CHECK(tw_pack_string(p, "gr\xc3\xbc\xc3\x9f" "e"));
    unsigned char bytes[4] = {0, 1, 2, 255};
    CHECK(tw_pack_bytes(p, bytes, 4));
    CHECK(tw_pack_array(p, TW_UINT8, NULL, 0));
}

static void unpack_all(tw_unpacker *u) {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f;
    double d;
    /* The wrong type first: an error, and nothing is consumed. */
    EXPECT(TW_ERR_UNPACK, tw_unpack_int32(u, &i32));
    ASSERT_LAST_ERROR_HAS("expected");
    CHECK(tw_unpack_uint8(u, &u8));
    ASSERT(u8 == 200);
    CHECK(tw_unpack_int8(u, &i8));
    ASSERT(i8 == -5);
    CHECK(tw_unpack_uint16(u, &u16));
    ASSERT(u16 == 60000);
    CHECK(tw_unpack_int16(u, &i16));
    ASSERT(i16 == -30000);
    CHECK(tw_unpack_uint32(u, &u32));
    ASSERT(u32 == 4000000000u);
    CHECK(tw_unpack_int32(u, &i32));
    ASSERT(i32 == -2000000000);
    CHECK(tw_unpack_uint64(u, &u64));
    ASSERT(u64 == 1ull << 40);
    CHECK(tw_unpack_int64(u, &i64));
    ASSERT(i64 == -(1ll << 40));
    CHECK(tw_unpack_float(u, &f));
    ASSERT(f == 1.5f);
    CHECK(tw_unpack_double(u, &d));
    ASSERT(d == -2.25);

    /* An array: its length asked first, then too small, then read. */
    int32_t ints[8] = {0};
    size_t count = 0;
    EXPECT(TW_ERR_TRUNCATED, tw_unpack_array(u, TW_INT32, NULL, 0, &count));
    ASSERT(count == 5);
    EXPECT(TW_ERR_TRUNCATED, tw_unpack_array(u, TW_INT32, ints, 2, &count));
    ASSERT(count == 5 && ints[0] == 0);
    int64_t longs[8];
    EXPECT(TW_ERR_UNPACK, tw_unpack_array(u, TW_INT64, longs, 8, &count));
    CHECK(tw_unpack_array(u, TW_INT32, ints, 8, &count));
    ASSERT(count == 5 && ints[0] == 1 && ints[4] == 5);
    double doubles[3];
    CHECK(tw_unpack_array(u, TW_DOUBLE, doubles, 3, &count));
    ASSERT(count == 3 && doubles[0] == 0.5 && doubles[1] == 1e300 && doubles[2] == 0.0);

    /* A string that does not fit stays the next item. */
    char text[64];
    size_t len = 0;
    EXPECT(TW_ERR_TRUNCATED, tw_unpack_string(u, text, 3, &len));
    ASSERT(len == 7);
    EXPECT(TW_ERR_UNPACK, tw_unpack_uint8(u, &u8));
    CHECK(tw_unpack_string(u, text, sizeof text, &len));
    ASSERT(len == 7 && strcmp(text, "gr\xc3\xbc\xc3\x9f" "e") == 0);

    unsigned char bytes[4];
    CHECK(tw_unpack_bytes(u, bytes, sizeof bytes, &len));
    ASSERT(len == 4 && bytes[0] == 0 && bytes[3] == 255);
    CHECK(tw_unpack_array(u, TW_UINT8, NULL, 0, &count));
    ASSERT(count == 0);

    size_t remaining = 1;
    CHECK(tw_unpack_remaining(u, &remaining));
    ASSERT(remaining == 0);
    EXPECT(TW_ERR_UNPACK, tw_unpack_uint8(u, &u8));
}

int main(void) {
    CHECK(tw_init(0));
    uint32_t me;
    CHECK(tw_node_id(&me));
    tw_address peer = {1 - me, 0};
    if (me == 0) {
        int encodings[2] = {TW_ENCODING_PORTABLE, TW_ENCODING_RAW};
        for (int i = 0; i < 2; i++) {
            tw_packer *p = TW_PACKER_NULL;
            CHECK(tw_packer_new(encodings[i], &p));
            pack_all(p);
            CHECK(tw_send_packed(peer, 10 + (uint32_t)i, &p));
            ASSERT(p == TW_PACKER_NULL);
        }
        /* A packer freed unsent. */
        tw_packer *p = TW_PACKER_NULL;
        CHECK(tw_packer_new(TW_ENCODING_NATIVE, &p));
        CHECK(tw_pack_int32(p, 1));
        CHECK(tw_packer_free(&p));
        ASSERT(p == TW_PACKER_NULL);
        /* Plain bytes, which do not unpack. */
        CHECK(tw_send(peer, 12, "plain", 5));
    } else {
        for (uint32_t tag = 10; tag < 12; tag++) {
            tw_message *m = TW_MESSAGE_NULL;
            CHECK(tw_recv_message(peer, tag, &m));
            tw_unpacker *u = TW_UNPACKER_NULL;
            CHECK(tw_unpacker_new(&m, &u));
            ASSERT(m == TW_MESSAGE_NULL);
            unpack_all(u);
            CHECK(tw_unpacker_free(&u));
            ASSERT(u == TW_UNPACKER_NULL);
        }
        tw_message *m = TW_MESSAGE_NULL;
        CHECK(tw_recv_message(peer, 12, &m));
        tw_unpacker *u = TW_UNPACKER_NULL;
        EXPECT(TW_ERR_UNPACK, tw_unpacker_new(&m, &u));
        ASSERT(m != TW_MESSAGE_NULL && u == TW_UNPACKER_NULL);
        CHECK(tw_message_free(&m));
    }
    CHECK(tw_finalize());
    printf("n%u passed\n", me);
    return 0;
}
