/*
 * pvmtask.h: what the PVM programs of `threadwire bench` share
 * (pvmbench.c, bcastpvm.c): a monotonic clock, failing with a message
 * and PVM's error code, and the comma-separated lists of their options.
 * The program defines PROGRAM, its name in messages, before including it;
 * `threadwire bench` writes this header beside the program it builds.
 */

#ifndef PVMTASK_H
#define PVMTASK_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <pvm3.h>

/* The most items of a list. */
#define MAX_ITEMS 64

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Leaves the virtual machine and exits with status 1. */
static void fail(const char *what, int code)
{
    fprintf(stderr, PROGRAM ": %s failed (%d)\n", what, code);
    pvm_exit();
    exit(1);
}

/* `code`, unless it is one of PVM's errors (negative): then fail. */
static int check(const char *what, int code)
{
    if (code < 0)
        fail(what, code);
    return code;
}

/* A comma-separated list of positive ints into `out` (at most
 * MAX_ITEMS); their number, or -1 for anything else. */
static int parse_list(const char *text, long *out)
{
    int count = 0;
    const char *p = text;
    while (*p && count < MAX_ITEMS) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v <= 0 || v > INT_MAX || (*end && *end != ','))
            return -1;
        out[count++] = v;
        p = *end ? end + 1 : end;
    }
    return *p ? -1 : count;
}

#endif
