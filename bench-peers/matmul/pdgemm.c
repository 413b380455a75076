/*
 * The ScaLAPACK peer of `threadwire apps matmul --peers`: C = A x B of
 * n x n doubles by PBLAS' pdgemm on an R x C grid of MPI ranks, the same
 * sizes and ranks as the threadwire run beside it.
 *
 *   mpirun -np R*C pdgemm --size N --grid RxC [--nb NB] [--rounds K]
 *
 * 1. Every rank joins a BLACS grid of R rows and C columns (row-major,
 *    as threadwire's mesh: rank i at row i / C, column i mod C) and owns
 *    the NB x NB blocks of A, B and C that the 2-D block-cyclic layout
 *    gives it (numroc).
 * 2. Verification, untimed: B = I and A(i, j) = a function of (i, j);
 *    pdgemm must return C = A. Every rank compares its blocks, the worst
 *    error is reduced to rank 0, and a wrong product exits with 2.
 * 3. Timing: B random, one untimed call, then K calls, each between two
 *    barriers; rank 0 prints one JSON line with every call's seconds.
 *
 * BLAS threads come from the environment (OPENBLAS_NUM_THREADS), set by
 * the caller to threadwire's threads per node.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern void Cblacs_pinfo(int *me, int *procs);
extern void Cblacs_get(int ctxt, int what, int *val);
extern void Cblacs_gridinit(int *ctxt, const char *order, int rows, int cols);
extern void Cblacs_gridinfo(int ctxt, int *rows, int *cols, int *row, int *col);
extern void Cblacs_gridexit(int ctxt);
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
                      const int *irsrc, const int *icsrc, const int *ctxt, const int *lld, int *info);
extern void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
                    const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
                    const double *b, const int *ib, const int *jb, const int *descb,
                    const double *beta, double *c, const int *ic, const int *jc, const int *descc);

#define MAX_ROUNDS 100

static int usage(void) {
    fprintf(stderr, "usage: pdgemm --size N --grid RxC [--nb NB] [--rounds K]\n");
    return 1;
}

/* The global index of local index `l` of a block-cyclic dimension. */
static int global(int l, int nb, int me, int procs) {
    return (l / nb) * nb * procs + me * nb + l % nb;
}

static double entry(int i, int j) {
    return (double)((i * 7 + j * 13) % 17) - 8.0;
}

int main(int argc, char **argv) {
    int n = 0, rows = 0, cols = 0, nb = 128, rounds = 5;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size")) n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--grid")) {
            if (sscanf(argv[i + 1], "%dx%d", &rows, &cols) != 2) rows = 0;
        } else if (!strcmp(argv[i], "--nb")) nb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else { MPI_Finalize(); return usage(); }
    }
    int me, procs;
    Cblacs_pinfo(&me, &procs);
    if (n < 1 || rows < 1 || cols < 1 || rows * cols != procs || nb < 1 || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        if (me == 0) usage();
        MPI_Finalize();
        return 1;
    }
    /* Step 1. */
    int ctxt, myrow, mycol, r, c;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", rows, cols);
    Cblacs_gridinfo(ctxt, &r, &c, &myrow, &mycol);
    int zero = 0, one = 1, info;
    int mloc = numroc_(&n, &nb, &myrow, &zero, &rows);
    int nloc = numroc_(&n, &nb, &mycol, &zero, &cols);
    int lld = mloc > 1 ? mloc : 1;
    int desc[9];
    descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    size_t local = (size_t)lld * (nloc > 1 ? nloc : 1);
    double *a = malloc(local * sizeof *a), *b = malloc(local * sizeof *b),
           *cm = malloc(local * sizeof *cm);
    if (!a || !b || !cm) {
        fprintf(stderr, "rank %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int jl = 0; jl < nloc; jl++)
        for (int il = 0; il < mloc; il++) {
            int i = global(il, nb, myrow, rows), j = global(jl, nb, mycol, cols);
            a[il + (size_t)jl * lld] = entry(i, j);
            b[il + (size_t)jl * lld] = i == j ? 1.0 : 0.0;
            cm[il + (size_t)jl * lld] = 0.0;
        }
    double alpha = 1.0, beta = 0.0;
    /* Step 2. */
    pdgemm_("N", "N", &n, &n, &n, &alpha, a, &one, &one, desc, b, &one, &one, desc, &beta, cm,
            &one, &one, desc);
    double worst = 0.0, all;
    for (size_t k = 0; k < (size_t)mloc * nloc; k++) {
        size_t at = k % mloc + (k / mloc) * lld;
        double d = fabs(cm[at] - a[at]);
        if (d > worst) worst = d;
    }
    MPI_Reduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0 && all > 1e-9) {
        fprintf(stderr, "pdgemm: A x I differs from A by %g\n", all);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* Step 3. */
    srand(1 + me);
    for (size_t k = 0; k < local; k++) b[k] = (double)rand() / RAND_MAX - 0.5;
    double seconds[MAX_ROUNDS];
    for (int round = -1; round < rounds; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        pdgemm_("N", "N", &n, &n, &n, &alpha, a, &one, &one, desc, b, &one, &one, desc, &beta,
                cm, &one, &one, desc);
        MPI_Barrier(MPI_COMM_WORLD);
        if (round >= 0) seconds[round] = MPI_Wtime() - t;
    }
    if (me == 0) {
        printf("{\"size\":%d,\"rows\":%d,\"cols\":%d,\"nb\":%d,\"seconds\":[", n, rows, cols, nb);
        for (int i = 0; i < rounds; i++) printf("%s%.9f", i ? "," : "", seconds[i]);
        printf("]}\n");
    }
    free(a);
    free(b);
    free(cm);
    Cblacs_gridexit(ctxt);
    MPI_Finalize();
    return 0;
}
