/* memcpy bandwidth between two pre-touched malloc'd buffers.
 * For each size (64 KiB, 1 MiB, 16 MiB): 20 samples; a sample times
 * `reps` back-to-back memcpy(dst, src, size) calls (reps chosen so a
 * sample moves >= 64 MiB; 16 MiB: reps=4). MB/s = size*reps / time / 1e6,
 * i.e. bytes copied (each byte counted once, not read+write).
 * Output: size best_MB/s median_MB/s
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    size_t sizes[] = { 64 << 10, 1 << 20, 16 << 20 };
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        char *src = malloc(n), *dst = malloc(n);
        memset(src, 1, n);
        memset(dst, 2, n);
        int reps = (int)((64u << 20) / n);
        if (reps < 4) reps = 4;
        double bw[20];
        for (int i = 0; i < 20; i++) {
            double t0 = now();
            for (int r = 0; r < reps; r++) {
                memcpy(dst, src, n);
                __asm__ volatile("" : : "r"(dst), "r"(src) : "memory");
            }
            double t = now() - t0;
            bw[i] = (double)n * reps / t / 1e6;
        }
        qsort(bw, 20, sizeof bw[0], cmp);
        printf("%zu best=%.0f median=%.0f\n", n, bw[19], (bw[9] + bw[10]) / 2);
        free(src);
        free(dst);
    }
    return 0;
}
