/*
 * Spawned tasks that end at once still count: the parent spawns 16
 * copies of itself, three times; each sends its tid and exits right
 * away, so some end before their siblings have joined. pvm_spawn must
 * return 16 with 16 tids each time, and a message from each must come.
 * Prints "spawn burst passed".
 */
#include <stdio.h>
#include "pvm3.h"

#define TASKS 16
#define ROUNDS 3

int main(int argc, char **argv)
{
	int me = pvm_mytid(), round, i, tids[TASKS];
	(void)argc;
	if (pvm_parent() > 0) {
		pvm_initsend(PvmDataDefault);
		pvm_pkint(&me, 1, 1);
		pvm_send(pvm_parent(), 1);
		pvm_exit();
		return 0;
	}
	for (round = 0; round < ROUNDS; round++) {
		int started = pvm_spawn(argv[0], NULL, PvmTaskDefault, "", TASKS, tids);
		if (started != TASKS) {
			printf("round %d: pvm_spawn started %d of %d\n", round, started, TASKS);
			pvm_exit();
			return 1;
		}
		for (i = 0; i < TASKS; i++) {
			int tid;
			pvm_recv(-1, 1);
			pvm_upkint(&tid, 1, 1);
		}
	}
	printf("spawn burst passed\n");
	pvm_exit();
	return 0;
}
