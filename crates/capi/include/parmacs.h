/* PARMACS over threadwire's distributed shared memory: the Argonne macros
 * the SPLASH-2 programs are written in, on the tw_dsm_* functions of
 * threadwire.h, for C11 programs (hand-written; see docs/CAPI.md).
 *
 *   MAIN_ENV               at file scope, in the file with main
 *   EXTERN_ENV             at file scope, in the other files
 *   MAIN_INITENV(T, bytes) tw_init and tw_dsm_init: T processes per node,
 *                          a shared space of `bytes` (0: 1 GiB)
 *   MAIN_END               waits for the processes left, tw_finalize (which
 *                          meets every node first), exit(0)
 *   G_MALLOC(bytes)        tw_dsm_malloc, units round robin: a pointer, the
 *                          same on every node, or NULL (the reason on stderr)
 *   G_MALLOC_HOMED(bytes, homes)  with TW_DSM_BLOCKS or TW_DSM_NODE(k)
 *   G_FREE(p)              nothing: the shared space is never freed
 *   CREATE(proc)           starts `void proc(void)` as the node's next
 *                          process, on an OS thread (tw_os_thread_spawn)
 *   WAIT_FOR_END(n)        waits for every process this node created
 *   BARDEC(b) BARINIT(b) BARRIER(b, P)   tw_dsm_barrier of all P processes
 *   LOCKDEC(l) LOCKINIT(l) LOCK(l) UNLOCK(l)   tw_dsm_lock / tw_dsm_unlock
 *   ALOCKDEC(a, n) ALOCKINIT(a, n) ALOCK(a, i) AULOCK(a, i)  arrays of locks
 *   CLOCK(t)               microseconds since MAIN_INITENV into unsigned long
 *   GET_PID(p)             the calling process's id into p (-1 in main)
 *
 * How this differs from PARMACS on a shared-memory machine:
 *
 * 1. Every node runs main. MAIN_INITENV, G_MALLOC, LOCKINIT and ALOCKINIT
 *    are collective: main calls them on every node, in the same order with
 *    the same arguments (G_MALLOC gives the same address everywhere; lock
 *    numbers come out alike).
 * 2. P = nodes x T processes. main creates its node's T with CREATE and
 *    waits for them with WAIT_FOR_END; it takes no part in barriers (a
 *    SPLASH-2 main that runs as process 0 itself creates T - 1 and calls
 *    the body after them instead). Process p is the (p mod T)-th created on
 *    node p div T: a node's processes are neighbours, so contiguous
 *    partitions put neighbouring data on one node.
 * 3. Locks are numbers and there is one barrier, the job's: BARDEC and
 *    LOCKDEC declare numbers (in shared memory or not), BARRIER(b, P)
 *    checks that P is the job's process count. Only the process that took
 *    a lock may release it.
 * 4. Shared memory is coherent at barriers and locks only (threadwire-dsm's
 *    release consistency): conflicting accesses from processes of
 *    different nodes must be ordered by one of them.
 * 5. A system call reading into shared memory this node does not hold
 *    fails with EFAULT: copy into private memory before write(2) and the
 *    like.
 *
 * Statement macros expand to a block, as PARMACS' own do, so that SPLASH-2
 * code works with or without a semicolon after them. A failing call prints
 * what failed and ends the process with status 1. */
#ifndef THREADWIRE_PARMACS_H
#define THREADWIRE_PARMACS_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <threadwire.h>

typedef uint32_t parmacs_lock;
typedef uint32_t parmacs_barrier;

/* One node's environment, defined by MAIN_ENV; used by main only. */
struct parmacs_env {
    uint32_t node, nodes, threads;
    uint32_t created, joined;
    uint32_t next_lock;
    tw_thread **processes;
    struct timespec start;
};

extern struct parmacs_env parmacs_env_;
extern _Thread_local long parmacs_pid_;

#define MAIN_ENV                                                             \
    struct parmacs_env parmacs_env_;                                         \
    _Thread_local long parmacs_pid_ = -1;
#define EXTERN_ENV extern struct parmacs_env parmacs_env_;

/* Ends the process: `what` failed, with code `rc` (0: not a call's). */
static inline void parmacs_fail_(const char *what, int rc) {
    if (rc == TW_SUCCESS) fprintf(stderr, "parmacs: %s\n", what);
    else fprintf(stderr, "parmacs: %s: %s (%s)\n", what, tw_strerror(rc), tw_last_error());
    exit(1);
}

static inline void parmacs_init_(unsigned long threads, size_t bytes) {
    struct parmacs_env *e = &parmacs_env_;
    int rc = tw_init(TW_INIT_STANDALONE);
    if (rc != TW_SUCCESS) parmacs_fail_("MAIN_INITENV: tw_init", rc);
    if (threads == 0 || threads > UINT32_MAX)
        parmacs_fail_("MAIN_INITENV: processes per node out of range", 0);
    tw_node_id(&e->node);
    tw_node_count(&e->nodes);
    e->threads = (uint32_t)threads;
    e->processes = calloc(threads, sizeof *e->processes);
    if (!e->processes) parmacs_fail_("MAIN_INITENV: out of memory", 0);
    rc = tw_dsm_init(bytes, 0, e->threads);
    if (rc != TW_SUCCESS) parmacs_fail_("MAIN_INITENV: tw_dsm_init", rc);
    timespec_get(&e->start, TIME_UTC);
}

/* P: the processes of the job; this node; the nodes. */
static inline long parmacs_processes(void) {
    return (long)parmacs_env_.nodes * parmacs_env_.threads;
}
static inline uint32_t parmacs_node(void) { return parmacs_env_.node; }
static inline uint32_t parmacs_nodes(void) { return parmacs_env_.nodes; }

static inline void *parmacs_g_malloc_(size_t bytes, int homes) {
    void *p = NULL;
    int rc = tw_dsm_malloc(bytes, homes, &p);
    if (rc != TW_SUCCESS) {
        fprintf(stderr, "parmacs: G_MALLOC(%zu): %s (%s)\n", bytes,
                tw_strerror(rc), tw_last_error());
        return NULL;
    }
    return p;
}

struct parmacs_start_ {
    void (*proc)(void);
    long pid;
};

static inline int parmacs_run_(void *arg) {
    struct parmacs_start_ start = *(struct parmacs_start_ *)arg;
    free(arg);
    parmacs_pid_ = start.pid;
    start.proc();
    return 0;
}

static inline void parmacs_create_(void (*proc)(void)) {
    struct parmacs_env *e = &parmacs_env_;
    if (e->created == e->threads)
        parmacs_fail_("CREATE: more processes than MAIN_INITENV's per node", 0);
    struct parmacs_start_ *start = malloc(sizeof *start);
    if (!start) parmacs_fail_("CREATE: out of memory", 0);
    start->proc = proc;
    start->pid = (long)e->node * e->threads + e->created;
    int rc = tw_os_thread_spawn(parmacs_run_, start, &e->processes[e->created]);
    if (rc != TW_SUCCESS) parmacs_fail_("CREATE: tw_os_thread_spawn", rc);
    e->created++;
}

static inline void parmacs_wait_for_end_(void) {
    struct parmacs_env *e = &parmacs_env_;
    for (; e->joined < e->created; e->joined++) {
        int rc = tw_thread_join(&e->processes[e->joined], NULL);
        if (rc != TW_SUCCESS) parmacs_fail_("WAIT_FOR_END: tw_thread_join", rc);
    }
}

static inline void parmacs_end_(void) {
    parmacs_wait_for_end_();
    free(parmacs_env_.processes);
    int rc = tw_finalize();
    if (rc != TW_SUCCESS) parmacs_fail_("MAIN_END: tw_finalize", rc);
}

static inline void parmacs_barrier_(long processes) {
    if (processes != parmacs_processes()) {
        fprintf(stderr, "parmacs: BARRIER of %ld processes in a job of %ld\n",
                processes, parmacs_processes());
        exit(1);
    }
    int rc = tw_dsm_barrier();
    if (rc != TW_SUCCESS) parmacs_fail_("BARRIER", rc);
}

static inline void parmacs_lock_(parmacs_lock l) {
    int rc = tw_dsm_lock(l);
    if (rc != TW_SUCCESS) parmacs_fail_("LOCK", rc);
}

static inline void parmacs_unlock_(parmacs_lock l) {
    int rc = tw_dsm_unlock(l);
    if (rc != TW_SUCCESS) parmacs_fail_("UNLOCK", rc);
}

static inline void parmacs_alockinit_(parmacs_lock *locks, long n) {
    for (long i = 0; i < n; i++) locks[i] = parmacs_env_.next_lock++;
}

static inline unsigned long parmacs_clock_(void) {
    struct timespec now;
    timespec_get(&now, TIME_UTC);
    const struct timespec *s = &parmacs_env_.start;
    return (unsigned long)((now.tv_sec - s->tv_sec) * 1000000L +
                           (now.tv_nsec - s->tv_nsec) / 1000);
}

#define MAIN_INITENV(threads, bytes) { parmacs_init_((threads), (bytes)); }
#define MAIN_END { parmacs_end_(); exit(0); }
#define G_MALLOC(bytes) parmacs_g_malloc_((bytes), TW_DSM_ROUND_ROBIN)
#define G_MALLOC_HOMED(bytes, homes) parmacs_g_malloc_((bytes), (homes))
#define G_FREE(p) { (void)(p); }
#define CREATE(proc) { parmacs_create_(proc); }
#define WAIT_FOR_END(n) { (void)(n); parmacs_wait_for_end_(); }
#define BARDEC(b) parmacs_barrier b;
#define BARINIT(b) { (b) = 0; }
#define BARRIER(b, n) { (void)(b); parmacs_barrier_(n); }
#define LOCKDEC(l) parmacs_lock l;
#define LOCKINIT(l) { (l) = parmacs_env_.next_lock++; }
#define LOCK(l) { parmacs_lock_(l); }
#define UNLOCK(l) { parmacs_unlock_(l); }
#define ALOCKDEC(a, n) parmacs_lock a[n];
#define ALOCKINIT(a, n) { parmacs_alockinit_((a), (n)); }
#define ALOCK(a, i) { parmacs_lock_((a)[i]); }
#define AULOCK(a, i) { parmacs_unlock_((a)[i]); }
#define CLOCK(t) { (t) = parmacs_clock_(); }
#define GET_PID(p) { (p) = parmacs_pid_; }

#endif
