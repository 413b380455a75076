/* A PMI-1 client in plain C, for tests/slurm_cluster.rs: speaks the wire
 * protocol on the descriptor PMI_FD (init, get_maxes, get_my_kvsname, put,
 * barrier, get, finalize) as MPICH's simple PMI client does, and prints
 * each answer as "rank R STEP: LINE". Rank r puts card-r and gets the card
 * of rank r+1, so the output proves the key-value space is shared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd;

static void send_line(const char *line) {
    size_t done = 0, len = strlen(line);
    while (done < len) {
        ssize_t n = write(fd, line + done, len - done);
        if (n <= 0) { perror("write PMI_FD"); exit(3); }
        done += (size_t)n;
    }
}

/* One answer line, newline kept; exits if the server hangs up. */
static void read_line(char *buf, size_t cap) {
    size_t n = 0;
    char c;
    while (n + 1 < cap) {
        if (read(fd, &c, 1) != 1) { fprintf(stderr, "PMI_FD closed\n"); exit(4); }
        buf[n++] = c;
        if (c == '\n') break;
    }
    buf[n] = 0;
}

static void ask(int rank, const char *step, const char *line, char *answer, size_t cap) {
    send_line(line);
    read_line(answer, cap);
    printf("rank %d %s: %s", rank, step, answer);
}

int main(void) {
    const char *pmi_fd = getenv("PMI_FD"), *pmi_rank = getenv("PMI_RANK"),
               *pmi_size = getenv("PMI_SIZE");
    if (!pmi_fd || !pmi_rank || !pmi_size) { printf("no PMI_FD, PMI_RANK or PMI_SIZE\n"); return 2; }
    fd = atoi(pmi_fd);
    int rank = atoi(pmi_rank), size = atoi(pmi_size);
    char answer[1024], line[1024], kvs[256] = "";
    ask(rank, "init", "cmd=init pmi_version=1 pmi_subversion=1\n", answer, sizeof answer);
    ask(rank, "maxes", "cmd=get_maxes\n", answer, sizeof answer);
    ask(rank, "kvsname", "cmd=get_my_kvsname\n", answer, sizeof answer);
    const char *name = strstr(answer, "kvsname=");
    if (name) sscanf(name + strlen("kvsname="), "%255s", kvs);
    snprintf(line, sizeof line, "cmd=put kvsname=%s key=card-%d value=rank%d-was-here\n", kvs, rank, rank);
    ask(rank, "put", line, answer, sizeof answer);
    ask(rank, "barrier", "cmd=barrier_in\n", answer, sizeof answer);
    snprintf(line, sizeof line, "cmd=get kvsname=%s key=card-%d\n", kvs, (rank + 1) % size);
    ask(rank, "get", line, answer, sizeof answer);
    ask(rank, "finalize", "cmd=finalize\n", answer, sizeof answer);
    return 0;
}
