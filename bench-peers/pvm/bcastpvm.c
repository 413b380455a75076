/*
 * bcastpvm.c: the PVM 3.4 program of `threadwire bench bcast`. One
 * parent (the root, on the host it is started on) spawns one receiver on
 * each host given, then times broadcasts of each size to all of them,
 * with pvm_mcast or with pvm_bcast to a group, inside itself
 * (CLOCK_MONOTONIC), and writes what it measured to a file.
 *
 * Built as any PVM program is (packages pvm-dev; pvm for pvmgs, the group
 * server that pvm_joingroup starts):
 *
 *     cc -O2 bcastpvm.c -o bcastpvm -lgpvm3 -lpvm3
 *
 * with pvmtask.h, which it shares with pvmbench.c, beside it.
 *
 *     bcastpvm -o FILE -m mcast|bcast -H HOST[,HOST...] [-s SIZES] [-t MS]
 *
 *   -o FILE    where the results go (below); required
 *   -m         mcast: pvm_mcast to the receivers' tids; bcast: the root
 *              spawns the group server (pvmgs, which pvmd must find) on
 *              its own host, every task joins the group "twbcast", which
 *              is then frozen (pvm_freezegroup, so that pvm_bcast takes
 *              the members from a local cache, not from the group
 *              server), and the root sends with pvm_bcast
 *   -H HOSTS   one receiver on each, comma-separated (PvmTaskHost): k
 *              hosts, k receivers
 *   -s SIZES   message sizes in bytes, comma-separated (default
 *              8,100,1000,60000,1000000)
 *   -t MS      each size's timed broadcasts go on while they have taken
 *              less than MS milliseconds, at least one (default 200)
 *
 * Every task keeps PVM's default route (PvmAllowDirect, which no task
 * upgrades: every message goes through the daemons), as a 1998 program
 * that sets nothing did.
 *
 * One broadcast, as every row of `bench bcast` times it: from before the
 * root's pvm_initsend until the root has received an empty
 * acknowledgement from each receiver, which a receiver sends once it has
 * received and unpacked the whole message (pvm_upkbyte). Each size is
 * broadcast once untimed first (the warm-up: connections, buffers).
 *
 * The results file holds one line per timed broadcast, nothing else, and
 * is written once all are done:
 *
 *   bcast size=BYTES ns=NS
 *
 * Exit status 0 once the file is written; on any failure a message on
 * stderr and status 1.
 */

#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pvm3.h>

#define PROGRAM "bcastpvm"
#include "pvmtask.h"

enum {
    TAG_READY = 1, /* receiver -> root: enrolled (and joined) */
    TAG_DATA,      /* root -> receivers: a broadcast */
    TAG_ACK,       /* receiver -> root: the broadcast has arrived */
    TAG_DONE       /* root -> receivers: leave */
};

#define GROUP "twbcast"
#define MAX_SAMPLES 100000

static int use_group;

static void join_group(void)
{
    check("pvm_joingroup", pvm_joingroup(GROUP));
}

/* Waits until all `members` have joined, then caches the group. */
static void freeze(int members)
{
    check("pvm_freezegroup", pvm_freezegroup(GROUP, members));
}

/* A receiver: acknowledges every broadcast until TAG_DONE. */
static void receiver(int members)
{
    int parent = pvm_parent();
    if (parent < 0)
        fail("pvm_parent", parent);
    if (use_group)
        join_group();
    check("pvm_initsend", pvm_initsend(PvmDataRaw));
    check("pvm_send", pvm_send(parent, TAG_READY));
    if (use_group)
        freeze(members);
    char *buffer = NULL;
    size_t capacity = 0;
    for (;;) {
        int id = check("pvm_recv", pvm_recv(parent, -1));
        int bytes, tag, from;
        check("pvm_bufinfo", pvm_bufinfo(id, &bytes, &tag, &from));
        if (tag == TAG_DONE)
            break;
        if (tag != TAG_DATA)
            fail("an unexpected message", tag);
        if ((size_t)bytes > capacity) {
            free(buffer);
            capacity = (size_t)bytes;
            buffer = malloc(capacity);
            if (!buffer)
                fail("malloc", -1);
        }
        check("pvm_upkbyte", pvm_upkbyte(buffer, bytes, 1));
        check("pvm_initsend", pvm_initsend(PvmDataRaw));
        check("pvm_send", pvm_send(parent, TAG_ACK));
    }
    free(buffer);
    if (use_group)
        pvm_lvgroup(GROUP);
    pvm_exit();
}

/* One broadcast of `size` bytes of `buffer` and every receiver's ack. */
static long long broadcast(const char *buffer, int size, int *tids, int receivers)
{
    long long started = now_ns();
    check("pvm_initsend", pvm_initsend(PvmDataRaw));
    check("pvm_pkbyte", pvm_pkbyte((char *)buffer, size, 1));
    if (use_group)
        check("pvm_bcast", pvm_bcast(GROUP, TAG_DATA));
    else
        check("pvm_mcast", pvm_mcast(tids, receivers, TAG_DATA));
    for (int i = 0; i < receivers; i++)
        check("pvm_recv", pvm_recv(-1, TAG_ACK));
    return now_ns() - started;
}

int main(int argc, char **argv)
{
    const char *output = NULL, *hosts = NULL;
    long sizes[MAX_ITEMS] = {8, 100, 1000, 60000, 1000000};
    int nsizes = 5;
    long ms = 200;
    int child = 0, members = 0;
    int opt;
    while ((opt = getopt(argc, argv, "o:m:H:s:t:c:g")) != -1) {
        switch (opt) {
        case 'o': output = optarg; break;
        case 'm':
            if (strcmp(optarg, "mcast") == 0)
                use_group = 0;
            else if (strcmp(optarg, "bcast") == 0)
                use_group = 1;
            else
                goto usage;
            break;
        case 'H': hosts = optarg; break;
        case 's':
            nsizes = parse_list(optarg, sizes);
            if (nsizes <= 0)
                goto usage;
            break;
        case 't':
            ms = atol(optarg);
            if (ms <= 0)
                goto usage;
            break;
        case 'c': child = 1; members = atoi(optarg); break;
        case 'g': use_group = 1; break;
        default: goto usage;
        }
    }
    check("pvm_mytid", pvm_mytid());
    if (child) {
        receiver(members);
        return 0;
    }
    if (!output || !hosts)
        goto usage;

    char *list = strdup(hosts);
    char *names[MAX_ITEMS];
    int receivers = 0;
    for (char *h = strtok(list, ","); h && receivers < MAX_ITEMS; h = strtok(NULL, ","))
        names[receivers++] = h;
    if (receivers == 0)
        goto usage;
    char program[PATH_MAX];
    if (!realpath(argv[0], program))
        fail("realpath", -errno);
    char count[16];
    snprintf(count, sizeof count, "%d", receivers + 1);
    char *child_args[] = {"-c", count, use_group ? "-g" : NULL, NULL};
    if (use_group) {
        /* The group server on this host, before anyone needs it: left to
         * pvm_joingroup, it is spawned wherever pvmd's round robin
         * places it, perhaps on a host whose pvmd cannot find it, and
         * by every receiver at once. Failing here, pvm_joingroup tries
         * on its own. */
        int server;
        pvm_spawn("pvmgs", NULL, PvmTaskHost, ".", 1, &server);
        join_group();
    }
    int tids[MAX_ITEMS];
    for (int i = 0; i < receivers; i++) {
        int n = pvm_spawn(program, child_args, PvmTaskHost, names[i], 1, &tids[i]);
        if (n != 1)
            fail("pvm_spawn", n < 0 ? n : tids[i]);
    }
    for (int i = 0; i < receivers; i++)
        check("pvm_recv", pvm_recv(-1, TAG_READY));
    if (use_group)
        freeze(receivers + 1);

    long largest = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > largest)
            largest = sizes[i];
    char *buffer = malloc((size_t)largest);
    long long *samples = malloc(sizeof *samples * MAX_SAMPLES);
    int *sample_size = malloc(sizeof *sample_size * MAX_SAMPLES);
    if (!buffer || !samples || !sample_size)
        fail("malloc", -1);
    memset(buffer, 0x5a, (size_t)largest);
    int taken = 0;
    for (int i = 0; i < nsizes; i++) {
        int size = (int)sizes[i];
        broadcast(buffer, size, tids, receivers);
        long long spent = 0;
        do {
            long long ns = broadcast(buffer, size, tids, receivers);
            spent += ns;
            samples[taken] = ns;
            sample_size[taken++] = size;
        } while (spent < ms * 1000000LL && taken < MAX_SAMPLES);
    }
    check("pvm_initsend", pvm_initsend(PvmDataRaw));
    check("pvm_mcast", pvm_mcast(tids, receivers, TAG_DONE));

    FILE *out = fopen(output, "w");
    if (!out)
        fail("fopen of the results file", -errno);
    for (int i = 0; i < taken; i++)
        fprintf(out, "bcast size=%d ns=%lld\n", sample_size[i], samples[i]);
    if (fclose(out) != 0)
        fail("writing the results file", -errno);
    if (use_group)
        pvm_lvgroup(GROUP);
    pvm_exit();
    return 0;

usage:
    fprintf(stderr,
            "usage: bcastpvm -o FILE -m mcast|bcast -H HOST[,HOST...] [-s SIZES] [-t MS]\n");
    return 2;
}
