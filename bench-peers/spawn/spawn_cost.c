/*
 * Why `threadwire run -n 256` is slow to start its nodes (docs/PERFORMANCE.md,
 * "Starting jobs under launchers"): start N children of /bin/true from a
 * process that gains T idle threads (2 MiB stacks) per child started, as
 * threadwire's launcher does (two output forwarders, a waiter and a control
 * reader per node), by fork + exec or by posix_spawn, and wait for all.
 *
 *   gcc -O2 -pthread -o spawn_cost spawn_cost.c
 *   ./spawn_cost 256 4 fork; ./spawn_cost 256 4 spawn; ./spawn_cost 256 0 fork
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static int gate[2];
static void *idle(void *arg) { char c; read(gate[0], &c, 1); return arg; }
int main(int argc, char **argv) {
    int n = atoi(argv[1]), per = atoi(argv[2]), use_fork = !strcmp(argv[3], "fork");
    pipe(gate);
    pthread_attr_t attr; pthread_attr_init(&attr); pthread_attr_setstacksize(&attr, 2 << 20);
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    char *args[] = {"/bin/true", NULL};
    for (int i = 0; i < n; i++) {
        pid_t pid;
        if (use_fork) {
            pid = fork();
            if (pid == 0) { execv(args[0], args); _exit(127); }
        } else {
            posix_spawn(&pid, args[0], NULL, NULL, args, environ);
        }
        for (int t = 0; t < per; t++) { pthread_t th; pthread_create(&th, &attr, idle, NULL); }
    }
    for (int i = 0; i < n; i++) wait(NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%s n=%d threads/child=%d: %.3f s\n", argv[3], n, per, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
