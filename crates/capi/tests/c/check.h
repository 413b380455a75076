/* Checks shared by the C test programs: each failure names the call, the
 * code and the library's message, and ends the program with status 1. */
#ifndef THREADWIRE_TEST_CHECK_H
#define THREADWIRE_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threadwire.h>

/* The call must succeed. */
#define CHECK(call)                                                          \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != TW_SUCCESS) {                                             \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__,         \
                    __LINE__, #call, tw_strerror(rc_), tw_last_error());     \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* The call must fail with `code`. */
#define EXPECT(code, call)                                                   \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != (code)) {                                                 \
            fprintf(stderr, "%s:%d: %s returned %s (%s), expected %s\n",     \
                    __FILE__, __LINE__, #call, tw_strerror(rc_),             \
                    rc_ ? tw_last_error() : "", #code);                      \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define ASSERT(cond)                                                         \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,       \
                    __LINE__, #cond);                                        \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* The last error of this thread mentions `text`. */
#define ASSERT_LAST_ERROR_HAS(text)                                          \
    do {                                                                     \
        if (!strstr(tw_last_error(), (text))) {                              \
            fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n",       \
                    __FILE__, __LINE__, tw_last_error(), (text));            \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#endif
