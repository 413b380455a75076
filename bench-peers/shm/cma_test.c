/* Cross-memory attach between sibling processes.
 * Parent forks child A (holds a 1 MiB pattern buffer, writes its address
 * into a pipe, waits for a byte on a second pipe) and child B (reads the
 * address, calls process_vm_readv on A, checks the pattern, reports).
 * Output: "process_vm_readv: OK <bytes> bytes, uid=<uid>" or
 *         "process_vm_readv: FAIL errno=<n> (<strerror>), uid=<uid>".
 * Exit status 0 on success, 1 on failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SZ (1 << 20)

int main(void)
{
    int addr_pipe[2], done_pipe[2];
    if (pipe(addr_pipe) || pipe(done_pipe)) { perror("pipe"); return 2; }

    pid_t a = fork();
    if (a == 0) {                       /* child A: the target */
        unsigned char *buf = malloc(SZ);
        for (int i = 0; i < SZ; i++) buf[i] = (unsigned char)(i * 7 + 3);
        uintptr_t p = (uintptr_t)buf;
        write(addr_pipe[1], &p, sizeof p);
        char c;
        read(done_pipe[0], &c, 1);
        _exit(0);
    }
    pid_t b = fork();
    if (b == 0) {                       /* child B: the reader */
        uintptr_t p;
        if (read(addr_pipe[0], &p, sizeof p) != sizeof p) _exit(2);
        unsigned char *dst = malloc(SZ);
        memset(dst, 0, SZ);
        struct iovec l = { dst, SZ }, r = { (void *)p, SZ };
        ssize_t n = process_vm_readv(a, &l, 1, &r, 1, 0);
        int err = errno, ok = n == SZ;
        for (int i = 0; ok && i < SZ; i++)
            if (dst[i] != (unsigned char)(i * 7 + 3)) ok = 0;
        if (ok)
            printf("process_vm_readv: OK %zd bytes, uid=%d\n", n, (int)getuid());
        else if (n < 0)
            printf("process_vm_readv: FAIL errno=%d (%s), uid=%d\n",
                   err, strerror(err), (int)getuid());
        else
            printf("process_vm_readv: FAIL short/corrupt read n=%zd, uid=%d\n",
                   n, (int)getuid());
        fflush(stdout);
        write(done_pipe[1], "x", 1);
        _exit(ok ? 0 : 1);
    }
    int st, rc = 0;
    waitpid(b, &st, 0);
    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    write(done_pipe[1], "x", 1);        /* in case B died early */
    waitpid(a, &st, 0);
    return rc;
}
