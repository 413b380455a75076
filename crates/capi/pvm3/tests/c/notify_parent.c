/*
 * A spawned task asks to be told of its parent's exit and waits for it
 * before it ends. The parent — the program at the command line, whose
 * node ends last — tells it when its own task ends. Its line on stderr:
 * "child notified".
 */
#include <stdio.h>
#include "pvm3.h"

int main(int argc, char **argv)
{
	int parent, child, about = 0, ready = 0;
	(void)argc;
	pvm_mytid();
	parent = pvm_parent();
	if (parent > 0) {
		if (pvm_notify(PvmTaskExit, 77, 1, &parent) < 0)
			return 1;
		pvm_initsend(PvmDataDefault);
		pvm_send(parent, 1);
		pvm_recv(-1, 77);
		pvm_upkint(&about, 1, 1);
		if (about == parent)
			printf("child notified\n");
		pvm_exit();
		return about == parent ? 0 : 1;
	}
	if (pvm_spawn(argv[0], NULL, PvmTaskDefault, "", 1, &child) != 1)
		return 1;
	pvm_recv(child, 1);
	pvm_upkint(&ready, 0, 1);
	printf("parent ends\n");
	pvm_exit();
	return 0;
}
