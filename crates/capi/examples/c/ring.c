/* A ring over every node, in C: node 0 starts a packed token (a counter and
 * the path so far) that each node extends and passes on; then every node
 * learns the sum of all node numbers with an allreduce.
 *
 *   cargo build --release -p threadwire-capi
 *   cc -I crates/capi/include crates/capi/examples/c/ring.c \
 *      -L target/release -lthreadwire -Wl,-rpath,$PWD/target/release -o ring
 *   threadwire run -n 4 -- ./ring
 */
#include <stdio.h>
#include <string.h>
#include <threadwire.h>

#define TOKEN 1

static int fail(const char *what, int rc) {
    fprintf(stderr, "%s: %s (%s)\n", what, tw_strerror(rc), tw_last_error());
    return 1;
}

/* Receives the token from `from` and returns its counter and path. */
static int receive_token(tw_address from, uint32_t *hops, char *path, size_t cap) {
    tw_message *m = TW_MESSAGE_NULL;
    tw_unpacker *u = TW_UNPACKER_NULL;
    size_t len;
    int rc;
    if ((rc = tw_recv_message(from, TOKEN, &m)) ||
        (rc = tw_unpacker_new(&m, &u)) ||
        (rc = tw_unpack_uint32(u, hops)) ||
        (rc = tw_unpack_string(u, path, cap, &len))) {
        tw_message_free(&m);
        tw_unpacker_free(&u);
        return rc;
    }
    return tw_unpacker_free(&u);
}

static int send_token(tw_address to, uint32_t hops, const char *path) {
    tw_packer *p = TW_PACKER_NULL;
    int rc;
    if ((rc = tw_packer_new(TW_ENCODING_PORTABLE, &p)) ||
        (rc = tw_pack_uint32(p, hops)) ||
        (rc = tw_pack_string(p, path))) {
        tw_packer_free(&p);
        return rc;
    }
    return tw_send_packed(to, TOKEN, &p);
}

int main(void) {
    int rc;
    if ((rc = tw_init(0))) return fail("tw_init", rc);
    uint32_t me, n;
    tw_node_id(&me);
    tw_node_count(&n);
    tw_address next = {(me + 1) % n, 0}, prev = {(me + n - 1) % n, 0};

    char path[1024] = "n0";
    uint32_t hops = 0;
    if (me != 0 && (rc = receive_token(prev, &hops, path, sizeof path)))
        return fail("receive", rc);
    if (me != 0) {
        size_t used = strlen(path);
        snprintf(path + used, sizeof path - used, " -> n%u", me);
    }
    if ((rc = send_token(next, hops + 1, path))) return fail("send", rc);
    if (me == 0) {
        if ((rc = receive_token(prev, &hops, path, sizeof path))) return fail("receive", rc);
        printf("token came back after %u hops: %s -> n0\n", hops, path);
    }

    tw_group *world = TW_GROUP_NULL;
    int64_t sum = me;
    if ((rc = tw_group_world(&world)) ||
        (rc = tw_allreduce(world, &sum, 1, TW_INT64, TW_SUM)))
        return fail("allreduce", rc);
    printf("n%u: sum of node numbers %lld\n", me, (long long)sum);
    tw_group_free(&world);
    return tw_finalize() ? 1 : 0;
}
