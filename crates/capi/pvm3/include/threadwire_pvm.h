/*
 * threadwire's extensions to PVM 3.4's C API, served by threadwire's
 * libpvm3.so.3 (docs/PVM.md). Include after pvm3.h.
 */
#ifndef THREADWIRE_PVM_H
#define THREADWIRE_PVM_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Exports `entry` as a task that pvm_spawn starts as a thread: a
 * pvm_spawn of `name` by any task of this program starts `ntask` OS
 * threads of the spawner's process, each a task of its own (its own tid;
 * pvm_parent gives the spawner) running entry(argc, argv) with the
 * spawn's arguments, argv[0] being `name`. The task ends when entry
 * returns (or calls pvm_exit). Export the same names in every process
 * of the program, before spawning. Returns 0, PvmBadParam for a NULL
 * argument, or PvmExists for a name exported already.
 */
int threadwire_pvm_export(const char *name, void (*entry)(int argc, char **argv));

#ifdef __cplusplus
}
#endif

#endif
