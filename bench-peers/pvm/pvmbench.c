/*
 * pvmbench.c: the PVM 3.4 program of `threadwire bench pvm`. It times
 * round trips, one-way bandwidth and pvm_spawn inside itself, with
 * CLOCK_MONOTONIC, and writes what it measured to a file, so that the
 * same binary is timed alike under PVM's pvmd and under threadwire's
 * libpvm3 (`threadwire pvm -- pvmbench ...`).
 *
 * Built as any PVM program is, against PVM's own header and library
 * (package pvm-dev):
 *
 *     cc -O2 pvmbench.c -o pvmbench -lpvm3
 *
 * with pvmtask.h, which it shares with bcastpvm.c, beside it.
 *
 * The task started at the command line is the parent; it spawns its
 * partners (this program again, with -c) by its absolute path.
 *
 *     pvmbench -o FILE [-m pingpong|spawn] [-r direct|daemon]
 *              [-e raw|default|inplace] [-s SIZES] [-t MS] [-n COUNTS]
 *              [-H HOST]
 *
 *   -o FILE    where the results go (below); required
 *   -m         pingpong (default): one partner, the round trip and the
 *              one-way bandwidth at each size; spawn: the time of
 *              pvm_spawn at each count
 *   -r         the route both tasks ask for with pvm_setopt(PvmRoute):
 *              direct (PvmRouteDirect, default) or daemon (PvmDontRoute)
 *   -e         the encoding of pvm_initsend: raw (PvmDataRaw, default),
 *              default (PvmDataDefault, XDR) or inplace (PvmDataInPlace)
 *   -s SIZES   message sizes in bytes, comma-separated, each a positive
 *              multiple of 4: the messages are arrays of ints
 *              (default 8,1000,100000,1000000)
 *   -t MS      milliseconds each timed measurement lasts, at least one
 *              round trip or message (default 50)
 *   -n COUNTS  tasks per pvm_spawn, comma-separated (default 1,16)
 *   -H HOST    spawn the partners on HOST (PvmTaskHost); default
 *              anywhere (PvmTaskDefault)
 *
 * What is timed, per size (ping-pong mode): the parent first tells the
 * partner the size (untimed), then runs round trips untimed for about a
 * tenth of MS (at least two) to warm up; then
 *
 *   pingpong: N round trips, as many as begin within MS (at least 1),
 *     the clock read after each. One is
 *     pvm_initsend, pvm_pkint of the array, pvm_send, pvm_recv of the
 *     answer and pvm_upkint of it; the partner answers the same way
 *     (receive, unpack, pack, send), as a PVM program does.
 *   stream: N messages of the size sent back to back (initsend, pkint,
 *     send each), the partner receiving and unpacking each, then a
 *     4-byte answer to the last; N = MS / half the round trip just
 *     measured (at least 1), so that a stream lasts about MS wherever
 *     the time goes in latency, and no longer where it goes in bytes. The one-way bandwidth is N * size / the time.
 *
 * Spawn mode, per count: one untimed pvm_spawn of COUNT tasks, each of
 * which sends its tid to the parent and exits, and the parent receives
 * COUNT messages; then the same, timed from the call of pvm_spawn until
 * the last message has been received.
 *
 * The results file holds one line per measurement, nothing else, and is
 * written once all measurements are done:
 *
 *   pingpong size=BYTES iterations=N ns=NS
 *   stream size=BYTES messages=N ns=NS
 *   spawn count=N ns=NS
 *
 * NS is the whole measurement in nanoseconds. Exit status 0 once the
 * file is written; on any failure a message on stderr and status 1.
 */

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pvm3.h>

#define PROGRAM "pvmbench"
#include "pvmtask.h"

enum {
    TAG_READY = 1,  /* partner -> parent: enrolled, route set */
    TAG_SIZE,       /* parent -> partner: the number of ints from now on */
    TAG_PING,       /* a round trip's message, either way */
    TAG_STREAM,     /* one of a stream's messages, no answer */
    TAG_STREAM_END, /* a stream's last message, answered with TAG_ACK */
    TAG_ACK,        /* partner -> parent: the stream has arrived */
    TAG_DONE,       /* parent -> partner: leave */
    TAG_HELLO       /* spawned task -> parent: its tid */
};

static int encoding = PvmDataRaw;
static int route = PvmRouteDirect;

static void send_ints(int to, int tag, int *data, int n)
{
    check("pvm_initsend", pvm_initsend(encoding));
    check("pvm_pkint", pvm_pkint(data, n, 1));
    check("pvm_send", pvm_send(to, tag));
}

/* The partner of ping-pong mode: answers until TAG_DONE. */
static void partner(void)
{
    int parent = check("pvm_parent", pvm_parent());
    int n = 1, tag, bytes, from;
    int *data = calloc(1, sizeof(int));
    int one = 1;
    send_ints(parent, TAG_READY, &one, 1);
    for (;;) {
        int buf = check("pvm_recv", pvm_recv(parent, -1));
        check("pvm_bufinfo", pvm_bufinfo(buf, &bytes, &tag, &from));
        switch (tag) {
        case TAG_SIZE:
            check("pvm_upkint", pvm_upkint(&n, 1, 1));
            free(data);
            data = calloc((size_t)n, sizeof(int));
            if (!data)
                fail("calloc", -1);
            break;
        case TAG_PING:
            check("pvm_upkint", pvm_upkint(data, n, 1));
            send_ints(parent, TAG_PING, data, n);
            break;
        case TAG_STREAM:
            check("pvm_upkint", pvm_upkint(data, n, 1));
            break;
        case TAG_STREAM_END:
            check("pvm_upkint", pvm_upkint(data, n, 1));
            send_ints(parent, TAG_ACK, &n, 1);
            break;
        case TAG_DONE:
            free(data);
            return;
        default:
            fail("an unknown tag", tag);
        }
    }
}

static void round_trip(int child, int *data, int n)
{
    send_ints(child, TAG_PING, data, n);
    check("pvm_recv", pvm_recv(child, TAG_PING));
    check("pvm_upkint", pvm_upkint(data, n, 1));
}

static long long stream(int child, int *data, int n, long long messages)
{
    long long start = now_ns();
    int ack;
    for (long long i = 1; i < messages; i++)
        send_ints(child, TAG_STREAM, data, n);
    send_ints(child, TAG_STREAM_END, data, n);
    check("pvm_recv", pvm_recv(child, TAG_ACK));
    check("pvm_upkint", pvm_upkint(&ack, 1, 1));
    return now_ns() - start;
}

static void pingpong(FILE *out, int child, const long *sizes, int nsizes, long long budget_ns)
{
    for (int s = 0; s < nsizes; s++) {
        int n = (int)(sizes[s] / 4);
        int *data = malloc((size_t)n * sizeof(int));
        if (!data)
            fail("malloc", -1);
        for (int i = 0; i < n; i++)
            data[i] = i;
        send_ints(child, TAG_SIZE, &n, 1);
        /* Warm-up; the first round trip also checks the data. */
        long long start = now_ns(), warm = 0, elapsed;
        do {
            round_trip(child, data, n);
            if (warm++ == 0 && (data[0] != 0 || data[n - 1] != n - 1)) {
                fprintf(stderr, "pvmbench: the answer at %ld bytes is not the message\n", sizes[s]);
                pvm_exit();
                exit(1);
            }
            elapsed = now_ns() - start;
        } while (warm < 2 || elapsed < budget_ns / 10);
        long long iterations = 0;
        start = now_ns();
        do {
            round_trip(child, data, n);
            iterations++;
            elapsed = now_ns() - start;
        } while (elapsed < budget_ns);
        fprintf(out, "pingpong size=%ld iterations=%lld ns=%lld\n", sizes[s], iterations, elapsed);
        long long one_way = elapsed / iterations / 2;
        long long messages = budget_ns / (one_way > 0 ? one_way : 1);
        if (messages < 1)
            messages = 1;
        elapsed = stream(child, data, n, messages);
        fprintf(out, "stream size=%ld messages=%lld ns=%lld\n", sizes[s], messages, elapsed);
        free(data);
    }
}

static int spawn_tasks(char *self, char **args, int flag, char *where, int count)
{
    int *tids = malloc((size_t)count * sizeof(int));
    if (!tids)
        fail("malloc", -1);
    for (int i = 0; i < count; i++)
        tids[i] = 0;
    int started = pvm_spawn(self, args, flag, where, count, tids);
    if (started != count) {
        int code = started;
        for (int i = 0; i < count && code >= 0; i++)
            if (tids[i] < 0)
                code = tids[i];
        fail("pvm_spawn", code < 0 ? code : -1);
    }
    free(tids);
    return started;
}

static void spawn_times(FILE *out, char *self, int flag, char *where, const long *counts, int ncounts)
{
    char *args[] = {"-c", "-m", "spawn", NULL};
    for (int c = 0; c < ncounts; c++) {
        for (int timed = 0; timed < 2; timed++) {
            long long start = now_ns();
            spawn_tasks(self, args, flag, where, (int)counts[c]);
            for (long i = 0; i < counts[c]; i++)
                check("pvm_recv", pvm_recv(-1, TAG_HELLO));
            if (timed)
                fprintf(out, "spawn count=%ld ns=%lld\n", counts[c], now_ns() - start);
        }
    }
}

static void usage(void)
{
    fputs("usage: pvmbench -o FILE [-m pingpong|spawn] [-r direct|daemon] "
          "[-e raw|default|inplace] [-s SIZES] [-t MS] [-n COUNTS] [-H HOST]\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *output = NULL, *mode = "pingpong";
    char *host = NULL;
    long sizes[MAX_ITEMS] = {8, 1000, 100000, 1000000}, counts[MAX_ITEMS] = {1, 16};
    int nsizes = 4, ncounts = 2, is_partner = 0;
    long ms = 50;
    int opt;
    while ((opt = getopt(argc, argv, "co:m:r:e:s:t:n:H:")) != -1) {
        switch (opt) {
        case 'c': is_partner = 1; break;
        case 'o': output = optarg; break;
        case 'm': mode = optarg; break;
        case 'H': host = optarg; break;
        case 'r':
            if (!strcmp(optarg, "direct")) route = PvmRouteDirect;
            else if (!strcmp(optarg, "daemon")) route = PvmDontRoute;
            else usage();
            break;
        case 'e':
            if (!strcmp(optarg, "raw")) encoding = PvmDataRaw;
            else if (!strcmp(optarg, "default")) encoding = PvmDataDefault;
            else if (!strcmp(optarg, "inplace")) encoding = PvmDataInPlace;
            else usage();
            break;
        case 's':
            nsizes = parse_list(optarg, sizes);
            for (int i = 0; i < nsizes; i++)
                if (sizes[i] % 4)
                    usage();
            if (nsizes <= 0) usage();
            break;
        case 't': ms = strtol(optarg, NULL, 10); if (ms <= 0) usage(); break;
        case 'n': ncounts = parse_list(optarg, counts); if (ncounts <= 0) usage(); break;
        default: usage();
        }
    }
    int is_spawn = !strcmp(mode, "spawn");
    if (!is_spawn && strcmp(mode, "pingpong"))
        usage();
    check("pvm_mytid", pvm_mytid());
    if (is_partner) {
        if (is_spawn) {
            int me = pvm_mytid();
            send_ints(check("pvm_parent", pvm_parent()), TAG_HELLO, &me, 1);
        } else {
            check("pvm_setopt", pvm_setopt(PvmRoute, route));
            partner();
        }
        pvm_exit();
        return 0;
    }
    if (!output)
        usage();
    /* The partners run by absolute path: no search path needed on any host. */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        fail("readlink /proc/self/exe", -1);
    self[len] = '\0';
    int flag = host ? PvmTaskHost : PvmTaskDefault;
    char anywhere[] = "";
    char *where = host ? host : anywhere;
    /* Kept in memory until the end: the file is written once, after the
     * measurements, so no write falls into a timed section. */
    char *text = NULL;
    size_t text_len = 0;
    FILE *out = open_memstream(&text, &text_len);
    if (!out)
        fail("open_memstream", -1);
    if (is_spawn) {
        spawn_times(out, self, flag, where, counts, ncounts);
    } else {
        check("pvm_setopt", pvm_setopt(PvmRoute, route));
        char route_name[] = "direct", daemon_name[] = "daemon";
        char raw[] = "raw", xdr[] = "default", inplace[] = "inplace";
        char *enc = encoding == PvmDataRaw ? raw : encoding == PvmDataDefault ? xdr : inplace;
        char *args[] = {"-c", "-r", route == PvmRouteDirect ? route_name : daemon_name, "-e", enc, NULL};
        int child;
        spawn_tasks(self, args, flag, where, 1);
        check("pvm_recv", pvm_recv(-1, TAG_READY));
        check("pvm_bufinfo", pvm_bufinfo(pvm_getrbuf(), NULL, NULL, &child));
        pingpong(out, child, sizes, nsizes, ms * 1000000LL);
        check("pvm_initsend", pvm_initsend(encoding));
        check("pvm_send", pvm_send(child, TAG_DONE));
    }
    fclose(out);
    FILE *file = fopen(output, "w");
    if (!file || fwrite(text, 1, text_len, file) != text_len || fclose(file)) {
        perror(output);
        pvm_exit();
        return 1;
    }
    free(text);
    pvm_exit();
    return 0;
}
