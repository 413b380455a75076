/*
 * The mailbox: entries put by one task, read, listed, replaced and
 * deleted by another, with PVM's permissions; a read that waits for a
 * later put. Prints "mailbox passed".
 */
#include <stdio.h>
#include <string.h>
#include "pvm3.h"
#include "expect.h"


static int put(const char *name, int value, int flags)
{
	pvm_initsend(PvmDataDefault);
	pvm_pkint(&value, 1, 1);
	return pvm_putinfo((char *)name, pvm_getsbuf(), flags);
}

static int read_value(const char *name, int index, int flags)
{
	int v = -1, b = pvm_recvinfo((char *)name, index, flags);
	if (b < 0)
		return b;
	pvm_upkint(&v, 1, 1);
	return v;
}

static void child(int parent)
{
	int n = 0, i;
	struct pvmmboxinfo *classes;
	EXPECT(read_value("locked", 0, PvmMboxDefault), 7);
	EXPECT(read_value("missing", 0, PvmMboxDefault), PvmNotFound);
	/* Not the owner: a locked entry can be neither replaced nor deleted. */
	EXPECT(put("locked", 8, PvmMboxDefault), PvmExists);
	EXPECT(put("locked", 8, PvmMboxDirectIndex(0) | PvmMboxOverWritable), PvmExists);
	EXPECT(pvm_delinfo("locked", 0, 0), PvmDenied);
	EXPECT(pvm_recvinfo("locked", 0, PvmMboxReadAndDelete), PvmDenied);
	/* An overwritable one can. */
	EXPECT(put("open", 11, PvmMboxDirectIndex(0)), 0);
	EXPECT(read_value("open", 0, PvmMboxDefault), 11);
	/* Multiple instances: the first at or after an index. */
	EXPECT(read_value("many", 1, PvmMboxFirstAvail), 21);
	EXPECT(read_value("many", 0, PvmMboxReadAndDelete), PvmDenied);
	EXPECT(pvm_getmboxinfo("*", &n, &classes), 0);
	EXPECT(n, 3);
	for (i = 0; i < n; i++)
		if (strcmp(classes[i].mi_name, "many") == 0) {
			EXPECT(classes[i].mi_nentries, 3);
			EXPECT(classes[i].mi_owners[0], parent);
		}
	/* Wake the parent's waiting read. */
	EXPECT(put("late", 99, PvmMboxDefault), 0);
	pvm_initsend(PvmDataDefault);
	pvm_pkint(&failures, 1, 1);
	pvm_send(parent, 1);
	/* The parent keeps reading "late" after this task's exit: persistent. */
	EXPECT(put("kept", 5, PvmMboxPersistent), 0);
	pvm_exit();
}

int main(int argc, char **argv)
{
	int me = pvm_mytid(), parent = pvm_parent(), kid, theirs = 1;
	(void)argc;
	if (parent > 0) {
		child(parent);
		return failures != 0;
	}
	EXPECT(put("locked", 7, PvmMboxDefault), 0);
	EXPECT(put("locked", 9, PvmMboxDefault), 0); /* its owner replaces it */
	EXPECT(put("locked", 7, PvmMboxDefault), 0);
	EXPECT(put("open", 10, PvmMboxOverWritable), 0);
	EXPECT(put("many", 20, PvmMboxMultiInstance), 0);
	EXPECT(put("many", 21, PvmMboxMultiInstance), 1);
	EXPECT(put("many", 22, PvmMboxMultiInstance), 2);
	EXPECT(pvm_spawn(argv[0], NULL, PvmTaskDefault, "", 1, &kid), 1);
	/* Waits until the child puts it. */
	EXPECT(read_value("late", 0, PvmMboxWaitForInfo), 99);
	pvm_recv(kid, 1);
	pvm_upkint(&theirs, 1, 1);
	EXPECT(theirs, 0);
	EXPECT(read_value("many", 0, PvmMboxReadAndDelete), 20);
	EXPECT(read_value("many", 0, PvmMboxDefault), PvmNotFound);
	EXPECT(pvm_delinfo("many", 1, 0), 0);
	EXPECT(pvm_delinfo("many", 1, 0), PvmNotFound);
	{
		/* The child's persistent entry outlives it; "late" does not. */
		int notify_tag = 5;
		pvm_notify(PvmTaskExit, notify_tag, 1, &kid);
		pvm_recv(-1, notify_tag);
		EXPECT(read_value("kept", 0, PvmMboxDefault), 5);
		EXPECT(read_value("late", 0, PvmMboxDefault), PvmNotFound);
	}
	(void)me;
	pvm_exit();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("mailbox passed\n");
	return 0;
}
