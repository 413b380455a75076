/*
 * Tasks as threads: entry points exported by name and started by
 * pvm_spawn as threads of the spawner's process (threadwire_pvm.h), each a
 * task with its own tid, the spawner as parent, the spawn's arguments.
 * Prints "export passed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pvm3.h"
#include "threadwire_pvm.h"

#define WORKERS 4

static void worker(int argc, char **argv)
{
	int me = pvm_mytid(), parent = pvm_parent(), n = argc;
	int good = argc == 3 && strcmp(argv[0], "worker") == 0 &&
		   strcmp(argv[1], "alpha") == 0 && strcmp(argv[2], "beta") == 0;
	(void)n;
	pvm_initsend(PvmDataDefault);
	pvm_pkint(&me, 1, 1);
	pvm_pkint(&good, 1, 1);
	pvm_send(parent, 1);
}

int main(void)
{
	char *args[] = {"alpha", "beta", NULL};
	int tids[WORKERS], i, j, failures = 0, me;
	if (threadwire_pvm_export("worker", worker) != 0 ||
	    threadwire_pvm_export("worker", worker) != PvmExists) {
		fprintf(stderr, "FAILED: export\n");
		return 1;
	}
	me = pvm_mytid();
	if (pvm_spawn("worker", args, PvmTaskDefault, "", WORKERS, tids) != WORKERS) {
		fprintf(stderr, "FAILED: spawn: %d\n", tids[0]);
		return 1;
	}
	for (i = 0; i < WORKERS; i++) {
		int from = 0, good = 0, known = 0;
		pvm_recv(-1, 1);
		pvm_upkint(&from, 1, 1);
		pvm_upkint(&good, 1, 1);
		for (j = 0; j < WORKERS; j++)
			known |= tids[j] == from;
		/* A thread of this process: the same host field as the spawner. */
		if (!good || !known || from == me || (from >> 18) != (me >> 18)) {
			fprintf(stderr, "FAILED: worker t%x good %d known %d\n", from, good, known);
			failures++;
		}
	}
	pvm_exit();
	if (failures)
		return 1;
	printf("export passed\n");
	return 0;
}
