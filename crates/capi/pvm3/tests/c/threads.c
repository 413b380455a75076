/*
 * Threads as tasks (the thread-based PVM): every thread that calls PVM is
 * a task with a tid of its own. Thread i of THREADS sends its tid to the
 * main task, which answers each; a second process, spawned, does the
 * same with its own threads. Prints "threads passed".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "pvm3.h"

#define THREADS 4

static int parent_tid;

static void *worker(void *arg)
{
	int me = pvm_mytid(), answer = 0;
	(void)arg;
	pvm_initsend(PvmDataDefault);
	pvm_pkint(&me, 1, 1);
	pvm_send(parent_tid, 1);
	pvm_recv(parent_tid, 2);
	pvm_upkint(&answer, 1, 1);
	pvm_exit();
	return (void *)(long)(answer == me);
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	int i, ok = 1, tids[THREADS], child;
	int me = pvm_mytid();
	int spawned = pvm_parent() > 0;
	(void)argc;

	parent_tid = me;
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (i = 0; i < THREADS; i++) {
		pvm_recv(-1, 1);
		pvm_upkint(&tids[i], 1, 1);
		if (tids[i] == me)
			ok = 0;
		pvm_initsend(PvmDataDefault);
		pvm_pkint(&tids[i], 1, 1);
		pvm_send(tids[i], 2);
	}
	for (i = 0; i < THREADS; i++) {
		void *good;
		pthread_join(t[i], &good);
		ok = ok && good;
	}
	if (spawned) {
		pvm_initsend(PvmDataDefault);
		pvm_pkint(&ok, 1, 1);
		pvm_send(pvm_parent(), 3);
		pvm_exit();
		return 0;
	}
	if (pvm_spawn(argv[0], NULL, PvmTaskDefault, "", 1, &child) != 1) {
		fprintf(stderr, "FAILED: spawn of %s: %d\n", argv[0], child);
		return 1;
	}
	{
		int child_ok = 0;
		pvm_recv(child, 3);
		pvm_upkint(&child_ok, 1, 1);
		ok = ok && child_ok;
	}
	pvm_exit();
	if (!ok) {
		fprintf(stderr, "FAILED: thread tasks\n");
		return 1;
	}
	printf("threads passed\n");
	return 0;
}
