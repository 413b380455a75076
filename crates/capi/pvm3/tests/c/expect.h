/*
 * The checks of the C tests: EXPECT(call, want) counts a failure in
 * `failures` and says where, what and what instead.
 */
#ifndef EXPECT_H
#define EXPECT_H

#include <stdio.h>

static int failures;

#define EXPECT(call, want)                                                     \
	do {                                                                   \
		int got_ = (call);                                             \
		if (got_ != (want)) {                                          \
			fprintf(stderr, "FAILED %s:%d: %s = %d, expected %d\n", \
				__FILE__, __LINE__, #call, got_, (want));      \
			failures++;                                            \
		}                                                              \
	} while (0)

#endif
