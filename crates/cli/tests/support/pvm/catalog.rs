//! The catalog of Debian's `pvm-examples` (PVM 3.4.6): every program the
//! package installs in `/usr/bin`, how it is started, what it needs, what
//! it checks, and what it prints under real PVM once normalized
//! ([`threadwire_testbed::pvm::normalize`]). docs/PVM.md ("The examples")
//! is this table in prose; keep the two together.
//!
//! An expected transcript is what [`super::transcript`] makes of a run:
//! a block per step (`$ command`, its stdout, its stderr lines after `! `,
//! and `= exit N`), then the lines that the tasks pvmd forked wrote to its
//! log, after `--- tasks`, each task's lines in order and the tasks in
//! order of their tids. Print them afresh with
//! `THREADWIRE_PVM_EXAMPLES=print cargo test -p threadwire-cli --test pvm_examples`.

use threadwire_testbed::pvm::normalize::{Mask, Rules};

/// One program of `pvm-examples`.
pub struct Example {
    /// Its name in `/usr/bin`.
    pub program: &'static str,
    /// Its source in examples.tar.gz or gexamples.tar.gz, and how built.
    pub source: &'static str,
    /// Who starts it.
    pub started: Started,
    /// What it needs besides a virtual machine; empty if nothing.
    pub needs: &'static str,
    /// The PVM calls it makes.
    pub calls: &'static str,
    /// What it checks, or shows.
    pub checks: &'static str,
    /// How the test runs it.
    pub run: Run,
    /// How its output is normalized.
    pub rules: Rules,
    /// Whether its steps run at once, so that which is which is up to
    /// the virtual machine: each block is normalized alone, and the
    /// blocks are sorted.
    pub unordered_steps: bool,
    /// Whether the lines of its stdout and stderr come in an order of the
    /// virtual machine's choosing (replies gathered with `pvm_recv(-1,
    /// ...)`): they are sorted.
    pub sort_lines: bool,
    /// The normalized transcript under real PVM; empty for examples not
    /// run on their own.
    pub expected: &'static str,
    /// What threadwire's libpvm3 is held to.
    pub threadwire: Threadwire,
}

/// Who starts a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// A user, from a shell.
    User,
    /// Another program of the catalog, with `pvm_spawn`.
    SpawnedBy(&'static str),
    /// A user, and then it spawns more copies of itself.
    UserAndItself,
}

/// How the test runs a program.
#[derive(Clone, Copy, Debug)]
pub enum Run {
    /// These steps, against one virtual machine, one after the other.
    Steps(&'static [Step]),
    /// As part of the named example's run.
    By(&'static str),
    /// Not at all, for this reason.
    Not(&'static str),
}

/// One command of a run.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// The program and its arguments.
    pub argv: &'static [&'static str],
    /// Its standard input.
    pub stdin: &'static str,
    /// When the next step starts.
    pub until: Until,
}

/// When the step after a [`Step`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Once this one has ended.
    Exit,
    /// Once this one has printed this text (it runs on, and must end by
    /// itself before the run ends); its stdout is line-buffered.
    Printed(&'static str),
    /// At once: both run together (and must both end).
    Started,
}

/// What threadwire's libpvm3 is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threadwire {
    /// The same normalized transcript as real PVM: stdout, stderr and exit
    /// status of each step, and what the tasks it spawned printed.
    Same,
    /// The same steps' blocks; what its tasks print differs, on purpose,
    /// for this reason.
    StepsOnly(&'static str),
    /// Not compared, on purpose, for this reason.
    Differs(&'static str),
}

/// docs/PVM.md, "Where semantics differ": a job ends with its last task.
const NO_MAILBOX: Threadwire = Threadwire::Differs(
    "its second program reads what the first left in the mailbox after the first has \
     ended: PVM's machine outlives its tasks, a threadwire job ends with its last \
     (docs/PVM.md)",
);

/// What a row says unless it says otherwise.
const EXAMPLE: Example = Example {
    program: "",
    source: "",
    started: Started::User,
    needs: "",
    calls: "",
    checks: "",
    run: Run::Not(""),
    rules: PLAIN,
    unordered_steps: false,
    sort_lines: false,
    expected: "",
    threadwire: Threadwire::Same,
};

const fn step(argv: &'static [&'static str]) -> Step {
    Step {
        argv,
        stdin: "",
        until: Until::Exit,
    }
}

const PLAIN: Rules = Rules {
    decimal_tids: false,
    hex_tids_before: &[],
    hex_tids_after: &[],
    masks: &[],
    racy: &[],
};

/// The mailbox examples print the server's tid bare (`id: %x`, `tid: %x`).
const MAILBOX: Rules = Rules {
    hex_tids_after: &["id: "],
    ..PLAIN
};

const DECIMAL_TIDS: Rules = Rules {
    decimal_tids: true,
    ..PLAIN
};

/// bwtest prints its tid bare (`%x`), and its round trips.
const BWTEST: Rules = Rules {
    hex_tids_before: &[" myinst", " -- I am"],
    masks: &[Mask::LinesWith("Roundtrip T")],
    ..PLAIN
};

/// Two instances of a bwtest, started together; they pair by joining the
/// group `bwtest` (the first to join is the master).
macro_rules! bwtest_pair {
    ($program:literal) => {
        &[
            Step {
                argv: &[$program],
                stdin: "",
                until: Until::Started,
            },
            step(&[$program]),
        ]
    };
}
const DBWTEST: &[Step] = bwtest_pair!("dbwtest");
const IBWTEST: &[Step] = bwtest_pair!("ibwtest");
const PBWTEST: &[Step] = bwtest_pair!("pbwtest");
const RBWTEST: &[Step] = bwtest_pair!("rbwtest");

const BWTEST_CALLS: &str = "pvm_mytid pvm_joingroup pvm_gettid pvm_lvgroup pvm_initsend \
     pvm_pkdouble pvm_upkdouble pvm_send pvm_recv pvm_psend pvm_precv pvm_perror pvm_exit";

const fn bwtest(
    program: &'static str,
    source: &'static str,
    steps: &'static [Step],
    expected: &'static str,
) -> Example {
    Example {
        program,
        source,
        started: Started::User,
        needs: "a second copy started beside it",
        calls: BWTEST_CALLS,
        checks: "100000 doubles sent and returned intact, then a ping-pong of 0 B to 800 kB \
                 (20 round trips a size) whose times it prints",
        run: Run::Steps(steps),
        rules: BWTEST,
        unordered_steps: true,
        sort_lines: false,
        expected,
        threadwire: Threadwire::Same,
    }
}

/// Every program of `pvm-examples`, by name.
pub const CATALOG: &[Example] = &[
    bwtest(
        "dbwtest",
        "examples/bwtest.c -DPACK -DENCODE=PvmDataDefault",
        DBWTEST,
        r#"$ dbwtest
 T1 myinst is 0
--- Simple PVM Bandwidth Test ----
 Using pack option: PvmDataDefault
 Max data size is: 800000
 Number of iterations/sample: 20


 Roundtrip time is measured from user-space to user-space.
 For packed messages this includes the combined time of:
    inst 0: pvm_initsend()
    inst 0: pvm_pack()
    inst 0: pvm_send()
    inst 1: pvm_recv()
    inst 1: pvm_unpack()
    inst 1: pvm_initsend()
    inst 1: pvm_pack()
    inst 1: pvm_send()
    inst 0: pvm_recv()
    inst 0: pvm_unpack()


---------------------------------------
T1 -- I am the master
T1: 100000 doubles received correctly


Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
= exit 0
$ dbwtest
 T1 myinst is 1
T1 -- I am the slave
T1: 100000 doubles received correctly


= exit 0
"#,
    ),
    Example {
        program: "fgexample",
        source: "examples/gexample.f",
        started: Started::UserAndItself,
        calls: "pvmfmytid pvmfsiblings pvmfconfig pvmfspawn pvmfjoingroup pvmffreezegroup \
                pvmfinitsend pvmfpack pvmfbcast pvmfrecv pvmfunpack pvmfreduce pvmfbarrier \
                pvmflvgroup pvmfperror pvmfexit",
        checks: "the 1-norm and the product of column 1 of a 100x100 Toeplitz matrix spread \
                 over one task per host and itself (group, bcast, reduce)",
        run: Run::Steps(&[step(&["fgexample"])]),
        expected: r#"$ fgexample

 This program demonstrates some group and reduction
 operations in PVM.  The output displays the
 the product of the first column of a 100x100 Toeplitz
 matrix and the matrix 1-norm. The matrix data is
 distributed among several tasks.  The Toeplitz
 matrix is symmetric with the first row being the
 row vector [1 2 ... n].

 There are            1  machines in the configuration
 Starting            1  tasks
  --> using            2  processors <--

  The 1-Norm is         5050
 (Should be the sum of the first 100 integers)
  The product of column 1 is   9.3326215443944127E+157
 (Should be 100 factorial)
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "fmaster1",
        source: "examples/master1.f",
        calls: "pvmfmytid pvmfconfig pvmfspawn pvmfinitsend pvmfpack pvmfmcast pvmfrecv \
                pvmfunpack pvmfkill pvmfexit",
        checks: "3 fslave1 tasks each return their share of a computation",
        run: Run::Steps(&[step(&["fmaster1"])]),
        sort_lines: true,
        expected: r#"$ fmaster1
                          SUCCESSFUL
 I got     100.0000000 from   1 (expected     100.0000000 )
 I got     200.0000000 from   0 (expected     200.0000000 )
 I got     300.0000000 from   2 (expected     300.0000000 )
 Spawning    3 tasks ...
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "frsg",
        source: "gexamples/frsg.f",
        started: Started::UserAndItself,
        needs: "two numbers on stdin: tasks (1-16), elements per row (1-20)",
        calls: "pvmfmytid pvmfparent pvmfjoingroup pvmfspawn pvmfinitsend pvmfpack pvmfbcast \
                pvmfrecv pvmfunpack pvmfbarrier pvmfscatter pvmfgather pvmfreduce (PvmProduct, \
                a user function) pvmfgsize pvmflvgroup pvmfsleep pvmfexit",
        checks: "scatter, reduce with a user function and PvmProduct, gather over 3 tasks",
        run: Run::Steps(&[Step {
            argv: &["frsg"],
            stdin: "3\n4\n",
            until: Until::Exit,
        }]),
        expected: r#"$ frsg
 / * Example: PVM Reduce, Scatter, and Gather * / Number of processors to use (1-          16 )? :
  Number of elements per row to use (1-          20 )? :
  INPUT values: nprocs =            3 , count =            4
 / Test OK: Sum of Squares of first           12  integers is          650
  Test Ok: Received (   4.0000000000000000      ,   1.0000000000000000      )
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "fslave1",
        source: "examples/slave1.f",
        started: Started::SpawnedBy("fmaster1"),
        calls: "pvmfmytid pvmfparent pvmfrecv pvmfunpack pvmfinitsend pvmfpack pvmfsend pvmfexit",
        checks: "computes its share and sends it to its parent",
        run: Run::By("fmaster1"),
        ..EXAMPLE
    },
    Example {
        program: "fspmd",
        source: "examples/spmd.f",
        calls: "pvmfmytid pvmfsiblings pvmfinitsend pvmfpack pvmfsend pvmfrecv pvmfunpack \
                pvmfexit",
        checks: "a token passed round the ring of its siblings (one task, started alone)",
        run: Run::Steps(&[step(&["fspmd"])]),
        rules: DECIMAL_TIDS,
        expected: r#"$ fspmd
 Pass a token through the           1  tid ring:
 T1 ->  T1
 token ring done
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "ge",
        source: "gexamples/ge.c",
        started: Started::UserAndItself,
        needs: "the number of tasks as its argument",
        calls: "pvm_mytid pvm_parent pvm_joingroup pvm_spawn pvm_initsend pvm_pkint pvm_mcast \
                pvm_recv pvm_upkint pvm_barrier pvm_gsize pvm_bcast pvm_getinst pvm_gettid \
                pvm_lvgroup pvm_perror pvm_exit",
        checks: "3 tasks join a group, meet at a barrier, broadcast their tids and check \
                 instance numbers against tids",
        run: Run::Steps(&[step(&["ge", "3"])]),
        // The children join in any order: their instance numbers vary. A
        // task checks the group after the broadcast, when a sibling may
        // already have left it: PVM says "gid 2 doesn't match up!" then.
        rules: Rules {
            masks: &[Mask::LinesWith("ge 0x"), Mask::LinesWith(" gid ")],
            racy: &[
                "doesn't match up!",
                "pvm_getinst(): Not in group",
                "pvm_gettid(): No such instance",
            ],
            ..PLAIN
        },
        expected: r#"$ ge 3
done
! ge T1 enrolled
! ge T1 #
! T2
! T3
! group ge size # gid #: sync
= exit 0
--- tasks
[T2] ge T2 enrolled
[T2] ge T2 #
[T2] nproc 3
[T2] group ge size # gid #: sync
[T2] done
[T3] ge T3 enrolled
[T3] ge T3 #
[T3] nproc 3
[T3] group ge size # gid #: sync
[T3] done
"#,
        ..EXAMPLE
    },
    Example {
        program: "gexamp",
        source: "gexamples/gexamp.c",
        started: Started::UserAndItself,
        needs: "the number of tasks as its argument",
        calls: "pvm_mytid pvm_joingroup pvm_spawn pvm_initsend pvm_pkint pvm_recv pvm_upkint \
                pvm_barrier pvm_bcast pvm_getinst pvm_gettid pvm_lvgroup pvm_perror pvm_exit",
        checks: "as ge, the first task spawning the others",
        run: Run::Steps(&[step(&["gexamp", "3"])]),
        // As ge's.
        rules: Rules {
            masks: &[Mask::LinesWith("gexamp 0x"), Mask::LinesWith(": sync")],
            racy: &[
                "doesn't match up!",
                "pvm_getinst(): Not in group",
                "pvm_gettid(): No such instance",
            ],
            ..PLAIN
        },
        expected: r#"$ gexamp 3
! /usr/bin/gexamp T1 enrolled
! gexamp T1 #
! T2
! T3
! /usr/bin/gexamp #: sync
= exit 0
--- tasks
[T2] /usr/bin/gexamp T2 enrolled
[T2] gexamp T2 #
[T2] /usr/bin/gexamp #: sync
[T3] /usr/bin/gexamp T3 enrolled
[T3] gexamp T3 #
[T3] /usr/bin/gexamp #: sync
"#,
        ..EXAMPLE
    },
    Example {
        program: "gexample",
        source: "examples/gexample.c",
        started: Started::UserAndItself,
        needs: "two numbers on stdin: matrix dimension, tasks (1-32)",
        calls: "pvm_mytid pvm_siblings pvm_parent pvm_spawn pvm_joingroup pvm_freezegroup \
                pvm_initsend pvm_pkint pvm_mcast pvm_recv pvm_upkint pvm_reduce (PvmMax, \
                PvmProduct) pvm_barrier pvm_lvgroup pvm_perror pvm_exit",
        checks: "the 1-norm and the product of column 1 of a Toeplitz matrix spread over 3 tasks",
        run: Run::Steps(&[Step {
            argv: &["gexample"],
            stdin: "5\n3\n",
            until: Until::Exit,
        }]),
        expected: r#"$ gexample
 This program demonstrates some group and reduction
 operations in PVM.  The output displays the
 the product of the first column of a Toeplitz matrix
 and the matrix 1-norm. The matrix data is distributed
 among several processors.  The Toeplitz matrix is
 symmetric with the first row being the row
 vector [1 2 ... n].
 Input dimension ( >0 ) of matrix:  Input number of tasks (1-32):
       --> Using 3 processors <--

 The 1-Norm is 15
 ( Should be the sum of the integers from 1 to 5 )
 The product of column 1 is 120
 ( Should be 5 factorial)
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "gmbi",
        source: "examples/gmbi.c",
        calls: "pvm_getmboxinfo",
        checks: "lists the mailbox's entries (none in a fresh virtual machine)",
        run: Run::Steps(&[step(&["gmbi"])]),
        expected: r#"$ gmbi

gmbi: 0 mbox entries returned.
-------------------------------

= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "gs.pvm",
        source: "gexamples/gs.c",
        started: Started::UserAndItself,
        needs: "the number of tasks as its argument",
        calls: "pvm_mytid pvm_joingroup pvm_spawn pvm_gsize pvm_barrier pvm_lvgroup \
                pvm_perror pvm_exit",
        checks: "waits in a loop of pvm_gsize until all tasks have joined, then a barrier",
        run: Run::Steps(&[step(&["gs.pvm", "1"])]),
        expected: r#"$ gs.pvm 1
! /usr/bin/gs.pvm T1 enrolled
! libpvm [T1]: pvm_spawn(): Bad parameter
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "hello.pvm",
        source: "examples/hello.c",
        calls: "pvm_mytid pvm_spawn pvm_recv pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "spawns hello_other and prints the greeting it sends back",
        run: Run::Steps(&[step(&["hello.pvm"])]),
        expected: r#"$ hello.pvm
i'm T1
from T2: hello, world from <host>
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "hello_other",
        source: "examples/hello_other.c",
        started: Started::SpawnedBy("hello.pvm"),
        calls: "pvm_parent pvm_initsend pvm_pkstr pvm_send pvm_exit",
        checks: "sends \"hello, world from <host>\" to its parent",
        run: Run::By("hello.pvm"),
        ..EXAMPLE
    },
    Example {
        program: "hitc",
        source: "examples/hitc.f",
        calls: "pvmfmytid pvmfconfig pvmfspawn pvmfinitsend pvmfpack pvmfsend pvmfmcast \
                pvmfrecv pvmfunpack pvmfexit",
        checks: "a pool of jobs handed out to one hitc_slave per host until a no-more-work flag",
        run: Run::Steps(&[step(&["hitc"])]),
        rules: DECIMAL_TIDS,
        expected: r#"$ hitc
           1  hosts detected in configuration
 I got result from tid:      T1
 sent       T1  task of size:         137
 I got result from tid:      T1
 sent       T1  task of size:         139
 I got result from tid:      T1
 sent       T1  task of size:         136
 I got result from tid:      T1
 sent       T1  task of size:         134
 I got result from tid:      T1
 sent       T1  task of size:         136
 I got result from tid:      T1
 sent       T1  task of size:         135
 I got result from tid:      T1
 sent       T1  task of size:         132
 I got result from tid:      T1
 sent       T1  task of size:         134
 I got result from tid:      T1
 sent       T1  task of size:         132
 I got result from tid:      T1
 sent       T1  task of size:          -1
 Program Finished
= exit 0
--- tasks
[T1]       T1  received no-more-work flag: exiting...
"#,
        ..EXAMPLE
    },
    Example {
        program: "hitc_slave",
        source: "examples/hitc_slave.f",
        started: Started::SpawnedBy("hitc"),
        calls: "pvmfmytid pvmfparent pvmfrecv pvmfunpack pvmfinitsend pvmfpack pvmfsend pvmfexit",
        checks: "works jobs until the flag, printing (to pvmd's log) as it leaves",
        run: Run::By("hitc"),
        rules: DECIMAL_TIDS,
        ..EXAMPLE
    },
    bwtest(
        "ibwtest",
        "examples/bwtest.c -DPACK -DENCODE=PvmDataInPlace",
        IBWTEST,
        r#"$ ibwtest
 T1 myinst is 0
--- Simple PVM Bandwidth Test ----
 Using pack option: PvmDataInPlace
 Max data size is: 800000
 Number of iterations/sample: 20


 Roundtrip time is measured from user-space to user-space.
 For packed messages this includes the combined time of:
    inst 0: pvm_initsend()
    inst 0: pvm_pack()
    inst 0: pvm_send()
    inst 1: pvm_recv()
    inst 1: pvm_unpack()
    inst 1: pvm_initsend()
    inst 1: pvm_pack()
    inst 1: pvm_send()
    inst 0: pvm_recv()
    inst 0: pvm_unpack()


---------------------------------------
T1 -- I am the master
T1: 100000 doubles received correctly


Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
= exit 0
$ ibwtest
 T1 myinst is 1
T1 -- I am the slave
T1: 100000 doubles received correctly


= exit 0
"#,
    ),
    Example {
        program: "inherit1",
        source: "examples/inherit1.c",
        started: Started::SpawnedBy("inherita"),
        calls: "pvm_mytid pvm_parent pvm_getcontext pvm_spawn pvm_initsend pvm_pkstr pvm_send \
                pvm_recv pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "spawns inherit2, which inherits its (inherited) context, and relays its reply",
        run: Run::By("inherita"),
        ..EXAMPLE
    },
    Example {
        program: "inherit2",
        source: "examples/inherit2.c",
        started: Started::SpawnedBy("inherit1, inherit3, inheritb"),
        calls: "pvm_mytid pvm_parent pvm_getcontext pvm_initsend pvm_pkstr pvm_send pvm_exit",
        checks: "tells its parent the context it was born in",
        run: Run::By("inherita"),
        ..EXAMPLE
    },
    Example {
        program: "inherit3",
        source: "examples/inherit3.c",
        started: Started::SpawnedBy("inherita"),
        calls: "pvm_mytid pvm_parent pvm_getcontext pvm_newcontext pvm_setcontext pvm_spawn \
                pvm_initsend pvm_pkstr pvm_send pvm_recv pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "as inherit1, after switching to a new context of its own",
        run: Run::By("inherita"),
        ..EXAMPLE
    },
    Example {
        program: "inherita",
        source: "examples/inherita.c",
        needs: "the program to spawn as its argument: inherit1 or inherit3",
        calls: "pvm_mytid pvm_getcontext pvm_newcontext pvm_setcontext pvm_spawn pvm_recv \
                pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "a spawned task inherits its parent's context, and receives on it",
        // Each step is a job of its own under threadwire (a new machine),
        // while PVM's second gives its tasks the next tids: each step is
        // numbered from T1.
        unordered_steps: true,
        run: Run::Steps(&[
            step(&["inherita", "inherit1"]),
            step(&["inherita", "inherit3"]),
        ]),
        expected: r#"$ inherita inherit1

Will attempt to spawn <inherit1> from inherita.

inherita: T1 on machine <<host>> with original context 0.
inherita: T1 on machine <<host>> with changed context C1.

inherita: T2 inherit1 T2 on machine <<host>> with context C1.
inherita: T2 inherit1: I just spawned inherit2 as tid T3 with context C1.

inherita: T2 inherit1: T3 	inherit2 T3 on machine <<host>> with context C1.

inherita: T2 inherit1 T2 on machine <<host>> with context C1.
inherita: T2 END - sent from inherit1 T2 on machine <<host>> with context C1.

inherita: T1 on machine <<host>> with changed context C1.
inherita: T1 on machine <<host>> with original context 0.
= exit 0
$ inherita inherit3

Will attempt to spawn <inherit3> from inherita.

inherita: T1 on machine <<host>> with original context 0.
inherita: T1 on machine <<host>> with changed context C1.

inherita: T2 inherit3 T2 on machine <<host>> with context C1.
inherita: T2 inherit3 T2 on machine <<host>> with context C2.
inherita: T2 inherit3: I just spawned inherit2 as tid T3 with context C2.

inherita: T2 inherit3: T3 	inherit2 T3 on machine <<host>> with context C2.

inherita: T2 inherit3 T2 on machine <<host>> with context C1.
inherita: T2 END - sent from inherit3 T2 on machine <<host>> with context C1.

inherita: T1 on machine <<host>> with changed context C1.
inherita: T1 on machine <<host>> with original context 0.
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "inheritb",
        source: "examples/inheritb.c",
        calls: "pvm_mytid pvm_getcontext pvm_newcontext pvm_setcontext pvm_spawn pvm_recv \
                pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "two inherit2 spawned in two new contexts; a receive in one context does not \
                 match a message sent in the other",
        run: Run::Steps(&[step(&["inheritb"])]),
        expected: r#"$ inheritb
0:inheritb: T1 on machine <<host>> with context 0.
1:inheritb: T1 on machine <<host>> with new #1 context C1 --> spawn 1st inherit2.
2:inheritb: T1 on machine <<host>> with new #2 context C2 --> spawn 2nd inherit2.
3:inheritb: T2 	inherit2 T2 on machine <<host>> with context C2. <-- received from 2nd inherit2.
4:inheritb: T1 on machine <<host>> with new #1 context C1.
5:inheritb: T3 	inherit2 T3 on machine <<host>> with context C1. <-- received from 1st inherit2.
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "joinleave",
        source: "gexamples/joinleave.c",
        calls: "pvm_mytid pvm_joingroup pvm_lvgroup pvm_perror",
        checks: "joins and leaves a group again and again (10000 times unless told)",
        run: Run::Steps(&[step(&["joinleave", "200"])]),
        expected: r#"$ joinleave 200
Joined 100 times
Joined 200 times
! /usr/bin/joinleave T1 enrolled
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "lmbi",
        source: "examples/lmbi.c",
        needs: "three arguments: entries, flags (d, p, m, o), w(ait) or e(xit)",
        calls: "pvm_mytid pvm_getcontext pvm_initsend pvm_packf pvm_getsbuf pvm_putinfo \
                pvm_getmboxinfo pvm_recv pvm_bufinfo pvm_upkstr pvm_exit",
        checks: "puts persistent entries in the mailbox, which outlive it (gmbi lists them)",
        run: Run::Steps(&[step(&["lmbi", "3", "p", "e"]), step(&["gmbi"])]),
        expected: r#"$ lmbi 3 p e
lmbi: sending <p> to set_flags.
lmbi: create 3 mailbox instances with flags set to <1> : <PvmMboxPersistent >.
lmbi: T1 on machine <<host>> with context 0.

lmbi: just inserted entry <T1lmbi0> at index 0.
	message inserted: lmbi: service_name T1lmbi0   flags 1 = PvmMboxPersistent    machine <host>   tid T1   context 0
lmbi: just inserted entry <T1lmbi1> at index 0.
	message inserted: lmbi: service_name T1lmbi1   flags 1 = PvmMboxPersistent    machine <host>   tid T1   context 0
lmbi: just inserted entry <T1lmbi2> at index 0.
	message inserted: lmbi: service_name T1lmbi2   flags 1 = PvmMboxPersistent    machine <host>   tid T1   context 0
= exit 0
$ gmbi

gmbi: 3 mbox entries returned.
-------------------------------
gmbi: class name: <T1lmbi0>
	: indices <0>	owner_tid <t0>	flags <1> = <PvmMboxPersistent >
gmbi: class name: <T1lmbi1>
	: indices <0>	owner_tid <t0>	flags <1> = <PvmMboxPersistent >
gmbi: class name: <T1lmbi2>
	: indices <0>	owner_tid <t0>	flags <1> = <PvmMboxPersistent >

= exit 0
"#,
        threadwire: NO_MAILBOX,
        ..EXAMPLE
    },
    Example {
        program: "master1",
        source: "examples/master1.c",
        calls: "pvm_mytid pvm_config pvm_spawn pvm_initsend pvm_pkint pvm_pkfloat pvm_mcast \
                pvm_recv pvm_upkint pvm_upkfloat pvm_kill pvm_exit",
        checks: "3 slave1 tasks each return their share of a computation",
        run: Run::Steps(&[step(&["master1"])]),
        sort_lines: true,
        expected: r#"$ master1
I got 100.000000 from 1; (expecting 100.000000)
I got 200.000000 from 0; (expecting 200.000000)
I got 300.000000 from 2; (expecting 300.000000)
Spawning 3 worker tasks ... SUCCESSFUL
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "mhf_server",
        source: "examples/mhf_server.c",
        needs: "a client: mhf_tickle",
        calls: "pvm_mytid pvm_getcontext pvm_newcontext pvm_setcontext pvm_putinfo \
                pvm_recvinfo pvm_addmhf pvm_delmhf pvm_recv pvm_bufinfo pvm_upkint pvm_upkstr \
                pvm_initsend pvm_pkint pvm_pkstr pvm_getsbuf pvm_setrbuf pvm_freebuf pvm_exit",
        checks: "a server that registers in the mailbox and loads, lists, runs and deletes \
                 message handlers at a client's request",
        run: Run::Steps(&[
            Step {
                argv: &["mhf_server"],
                stdin: "",
                until: Until::Printed("startup..."),
            },
            Step {
                argv: &["mhf_tickle"],
                stdin: "0\n9\n8\n",
                until: Until::Exit,
            },
        ]),
        // pvmdisplaymhfinfo's table: libpvm's own handler slots.
        rules: Rules {
            masks: &[Mask::LinesWith(".header.ctx")],
            ..PLAIN
        },
        expected: r#"$ mhf_server
mhf_server: T1 on machine <<host>> with context C1.
register_server: mailbox... just inserted server <mhf_server> at mailbox 0 with context C1.

mhf_server T1: Display Message Handler Information: ndhandles = 9	nhandles = 9	fl_dhandles = -1
pvmdisplaymhfinfo: free list.  head <- -< tail
mhf_server T1: startup...
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#



mhf_server T1: Display Message Handler Information: ndhandles = 9	nhandles = 9	fl_dhandles = -1
pvmdisplaymhfinfo: free list.  head <- -< tail
mhf_server T1: mhf_server: PMH: Are you talking to me!!!
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#



mhf_server T1: Display Message Handler Information: ndhandles = 9	nhandles = 9	fl_dhandles = -1
pvmdisplaymhfinfo: free list.  head <- -< tail
mhf_server T1: mhf_server: CEAT: Termiate Self...
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#
mhf_server T1: dhandles[ #].mhid = # .handle = # handles[ #].mhid = # .header.src = tffffffff .header.ctx = # .header.tag= -#


= exit 0
$ mhf_tickle


   Message Handler Trial Options
   -----------------------------

     0. PMH - display present message handlers.
     1. LMH - load message handler.
     2. DMH - delete message handler.
     3. ERJ - tell mhf_server() to pvm_exit( ) and then rejoin.
     4. HIT - message to hit a specified handler...
     5.     - available.
     6.     - available.
     7. GSMB - get server from mail box again ( use if drop connection ).
     8. CEAT - client ( this program ) exit pvm and terminate self.
     9. SEAT - tell server to exit pvm and terminate self.

          Enter Selection:
mhf_tickle: PMH - display present message handlers
mhf_tickle: sent--<Are you talking to me!!!> to:  stid = T1   sctx = C1.


   Message Handler Trial Options
   -----------------------------

     0. PMH - display present message handlers.
     1. LMH - load message handler.
     2. DMH - delete message handler.
     3. ERJ - tell mhf_server() to pvm_exit( ) and then rejoin.
     4. HIT - message to hit a specified handler...
     5.     - available.
     6.     - available.
     7. GSMB - get server from mail box again ( use if drop connection ).
     8. CEAT - client ( this program ) exit pvm and terminate self.
     9. SEAT - tell server to exit pvm and terminate self.

          Enter Selection:
mhf_tickle: SEAT - server exits pvm and terminate self

= exit 0
"#,
        threadwire: Threadwire::Differs(
            "it prints libpvm's own table of message handlers (pvmdisplaymhfinfo), \
             PVM's internal handlers included, which threadwire's libpvm3 does not have",
        ),
        ..EXAMPLE
    },
    Example {
        program: "mhf_tickle",
        source: "examples/mhf_tickle.c",
        needs: "a terminal's menu choices on stdin; mhf_server running",
        calls: "pvm_mytid pvm_getcontext pvm_setcontext pvm_recvinfo pvm_setrbuf pvm_upkint \
                pvm_upkstr pvm_initsend pvm_pkint pvm_pkstr pvm_send pvm_exit",
        checks: "the client of mhf_server: a menu read from stdin",
        run: Run::By("mhf_server"),
        threadwire: NO_MAILBOX,
        ..EXAMPLE
    },
    Example {
        program: "mtile",
        source: "xep/mtile.c (not in the package's example sources)",
        started: Started::SpawnedBy("xep"),
        needs: "xep",
        calls: "pvm_mytid pvm_parent pvm_recv pvm_upk* pvm_initsend pvm_pk* pvm_send pvm_exit",
        checks: "computes Mandelbrot tiles for xep",
        run: Run::Not("spawned by xep, which needs an X display"),
        ..EXAMPLE
    },
    bwtest(
        "pbwtest",
        "examples/bwtest.c (psend/precv)",
        PBWTEST,
        r#"$ pbwtest
 T1 myinst is 0
--- Simple PVM Bandwidth Test ----
 Using pack option: Psend/Precv
 Max data size is: 800000
 Number of iterations/sample: 20


 Roundtrip time is measured from user-space to user-space.
 For pvm_psend/precv this includes the combined time of:
    inst 0: pvm_psend()
    inst 1: pvm_precv()
    inst 1: pvm_psend()
    inst 0: pvm_precv()


---------------------------------------
T1 -- I am the master
T1: 100000 doubles received correctly


Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
= exit 0
$ pbwtest
 T1 myinst is 1
T1 -- I am the slave
T1: 100000 doubles received correctly


= exit 0
"#,
    ),
    bwtest(
        "rbwtest",
        "examples/bwtest.c -DPACK -DENCODE=PvmDataRaw",
        RBWTEST,
        r#"$ rbwtest
 T1 myinst is 0
--- Simple PVM Bandwidth Test ----
 Using pack option: PvmDataRaw
 Max data size is: 800000
 Number of iterations/sample: 20


 Roundtrip time is measured from user-space to user-space.
 For packed messages this includes the combined time of:
    inst 0: pvm_initsend()
    inst 0: pvm_pack()
    inst 0: pvm_send()
    inst 1: pvm_recv()
    inst 1: pvm_unpack()
    inst 1: pvm_initsend()
    inst 1: pvm_pack()
    inst 1: pvm_send()
    inst 0: pvm_recv()
    inst 0: pvm_unpack()


---------------------------------------
T1 -- I am the master
T1: 100000 doubles received correctly


Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
Roundtrip T = # (us) (#.# MB/s) Data size: #
= exit 0
$ rbwtest
 T1 myinst is 1
T1 -- I am the slave
T1: 100000 doubles received correctly


= exit 0
"#,
    ),
    Example {
        program: "rme",
        source: "examples/rme.c",
        needs: "two arguments: a mailbox name and an index",
        calls: "pvm_mytid pvm_getcontext pvm_recvinfo pvm_delinfo pvm_exit",
        checks: "removes a mailbox entry; another task's is refused (PvmDenied)",
        run: Run::Steps(&[
            Step {
                argv: &["task0", "svc"],
                stdin: "",
                until: Until::Printed("waiting for service request"),
            },
            step(&["rme", "svc", "0"]),
            step(&["task_end", "svc", "0"]),
        ]),
        rules: MAILBOX,
        expected: r#"$ task0 svc
task0: sending <d> to set_flags.
task0: service name <svc> with flags <0> : <PvmMboxDefault >.
task0: T1 on machine <<host>> with context 0.
task0: T1 on machine <<host>> with context C1.
task0: just inserted service name <svc> at index 0.
task0: T1 on machine <<host>> with context C1 - waiting for service request.
task0: T1 END  Request number 1.
task0: T1 on machine <<host>> with context 0.
task0: handled 1 service requests.
= exit 0
$ rme svc 0

Looking for service name <svc> with index number [0].
rme: T2 on machine <<host>> with context 0.

rme: Key locked by another task, can't delete.
= exit 255
$ task_end svc 0

Looking for service name <svc> with index number [0].
task_end: T3 on machine <<host>> with context 0.
service name <svc> of index 0 on <<host>> id: T1   with their context: C1
task_end: T3 on machine <<host>> with context C1.
task_end: T3 on machine <<host>> with context 0.
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "slave1",
        source: "examples/slave1.c",
        started: Started::SpawnedBy("master1"),
        calls: "pvm_mytid pvm_parent pvm_recv pvm_upkint pvm_upkfloat pvm_initsend pvm_pkint \
                pvm_pkfloat pvm_send pvm_exit",
        checks: "computes its share and sends it to its parent",
        run: Run::By("master1"),
        ..EXAMPLE
    },
    Example {
        program: "spmd",
        source: "examples/spmd.c",
        calls: "pvm_mytid pvm_siblings pvm_initsend pvm_pkint pvm_send pvm_recv pvm_upkint \
                pvm_exit",
        checks: "a token passed round the ring of its siblings (one task, started alone)",
        run: Run::Steps(&[step(&["spmd"])]),
        rules: DECIMAL_TIDS,
        expected: r#"$ spmd
Pass a token through the   1 tid ring:
T1 -> T1
token ring done
= exit 1
"#,
        ..EXAMPLE
    },
    Example {
        program: "srm.pvm",
        source: "src/srm.c (PVM's sample resource manager; not in the example sources)",
        needs: "to be the virtual machine's resource manager",
        calls: "pvm_reg_rm pvm_start_pvmd pvm_mytid pvm_config pvm_tasks pvm_spawn pvm_kill \
                pvm_notify pvm_delhosts pvm_tidtohost pvm_getfds pvm_nrecv pvm_recv pvm_mkbuf \
                pvm_setsbuf pvm_getminfo pvm_setminfo pvm_packf pvm_unpackf pvm_setopt pvm_exit",
        checks: "serves the daemon's resource-manager requests",
        run: Run::Not(
            "a resource manager: it registers with pvm_reg_rm and serves the daemon until \
             killed; it never ends by itself",
        ),
        threadwire: Threadwire::Differs(
            "threadwire has no daemon whose resource manager it could be",
        ),
        ..EXAMPLE
    },
    Example {
        program: "task0",
        source: "examples/task0.c (with taskf.c)",
        needs: "a mailbox name (and flags) as arguments; clients task1 and task_end",
        calls: "pvm_mytid pvm_getcontext pvm_newcontext pvm_setcontext pvm_initsend pvm_packf \
                pvm_getsbuf pvm_putinfo pvm_recv pvm_bufinfo pvm_upkstr pvm_pkstr pvm_send \
                pvm_exit",
        checks: "a server that puts its tid and a new context in the mailbox and answers \
                 requests on that context until END",
        run: Run::Steps(&[
            Step {
                argv: &["task0", "svc"],
                stdin: "",
                until: Until::Printed("waiting for service request"),
            },
            step(&["task1", "svc"]),
            step(&["task1", "svc", "0", "f"]),
            step(&["task_end", "svc", "0"]),
        ]),
        rules: MAILBOX,
        expected: r#"$ task0 svc
task0: sending <d> to set_flags.
task0: service name <svc> with flags <0> : <PvmMboxDefault >.
task0: T1 on machine <<host>> with context 0.
task0: T1 on machine <<host>> with context C1.
task0: just inserted service name <svc> at index 0.
task0: T1 on machine <<host>> with context C1 - waiting for service request.
task0: T1 	task1 T2 on machine <<host>> with context C1.  Request number 1.
task0: T1 on machine <<host>> with context C1 - waiting for service request.
task0: T1 	task1 T3 on machine <<host>> with context C1.  Request number 2.
task0: T1 on machine <<host>> with context C1 - waiting for service request.
task0: T1 END  Request number 3.
task0: T1 on machine <<host>> with context 0.
task0: handled 3 service requests.
= exit 0
$ task1 svc
task1: Looking for service name <svc>, index 0 - my flags are <0> : <PvmMboxDefault >.
task1: T2 on machine <<host>> with context 0.
task1: service name <svc> and index 0 with flags <PvmMboxDefault > tid: T1 and with context: C1
task1: T2 on machine <<host>> with context C1.
task1: T2  from task T1 welcome to my server - you are service request number 1.
task1: T2 on machine <<host>> with context 0.
= exit 0
$ task1 svc 0 f
task1: Looking for service name <svc>, index 0 - my flags are <8> : <PvmMboxFirstAvail >.
task1: T3 on machine <<host>> with context 0.
task1: service name <svc> and index 0 with flags <PvmMboxFirstAvail > tid: T1 and with context: C1
task1: T3 on machine <<host>> with context C1.
task1: T3  from task T1 welcome to my server - you are service request number 2.
task1: T3 on machine <<host>> with context 0.
= exit 0
$ task_end svc 0

Looking for service name <svc> with index number [0].
task_end: T4 on machine <<host>> with context 0.
service name <svc> of index 0 on <<host>> id: T1   with their context: C1
task_end: T4 on machine <<host>> with context C1.
task_end: T4 on machine <<host>> with context 0.
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "task1",
        source: "examples/task1.c (with taskf.c)",
        needs: "a mailbox name (index, flags) as arguments; task0 running",
        calls: "pvm_mytid pvm_getcontext pvm_recvinfo pvm_setrbuf pvm_upkint pvm_upkstr \
                pvm_setcontext pvm_initsend pvm_pkstr pvm_send pvm_recv pvm_bufinfo pvm_exit",
        checks: "finds task0 in the mailbox and sends a request on its context",
        run: Run::By("task0"),
        threadwire: NO_MAILBOX,
        ..EXAMPLE
    },
    Example {
        program: "task_end",
        source: "examples/task_end.c",
        needs: "a mailbox name and an index as arguments; task0 running",
        calls: "pvm_mytid pvm_getcontext pvm_recvinfo pvm_setrbuf pvm_upkint pvm_upkstr \
                pvm_setcontext pvm_initsend pvm_pkstr pvm_send pvm_exit",
        checks: "tells task0 to end",
        run: Run::By("task0"),
        threadwire: NO_MAILBOX,
        ..EXAMPLE
    },
    Example {
        program: "thb",
        source: "gexamples/thb.c",
        needs: "the number of tnb tasks as its argument",
        calls: "pvm_mytid pvm_joingroup pvm_getinst pvm_gettid pvm_spawn pvm_initsend \
                pvm_pkstr pvm_pkint pvm_send pvm_barrier pvm_bcast pvm_lvgroup pvm_perror \
                pvm_exit",
        checks: "joins 32 groups, checks its instance in each, then a barrier and a broadcast \
                 with 2 tnb tasks",
        run: Run::Steps(&[step(&["thb", "2"])]),
        expected: r#"$ thb 2
spawning ... barrier on group0
 leaving all the groups
done.
! joined group0
! joined group1
! joined group2
! joined group3
! joined group4
! joined group5
! joined group6
! joined group7
! joined group8
! joined group9
! joined group10
! joined group11
! joined group12
! joined group13
! joined group14
! joined group15
! joined group16
! joined group17
! joined group18
! joined group19
! joined group20
! joined group21
! joined group22
! joined group23
! joined group24
! joined group25
! joined group26
! joined group27
! joined group28
! joined group29
! joined group30
! joined group31
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "timing",
        source: "examples/timing.c",
        calls: "pvm_mytid pvm_spawn pvm_setopt pvm_initsend pvm_pkint pvm_send pvm_recv \
                pvm_getsbuf pvm_freebuf pvm_kill pvm_perror pvm_exit",
        checks: "20 round trips, then 20 messages of each size from 100 B to 1 MB, with \
                 timing_slave; prints the times",
        run: Run::Steps(&[step(&["timing"])]),
        rules: Rules {
            masks: &[Mask::NumericRows, Mask::LinesWith("Avg")],
            ..PLAIN
        },
        expected: r#"$ timing
i'm T1
slave is task T2
Doing Round Trip test, minimal message size

 N     uSec
 # #
 # #
 # #
 # #
 # #
 # #
 # #
 # #
 # #
# #
# #
# #
# #
# #
# #
# #
# #
# #
# #
# #
RTT Avg uSec #

Doing Bandwidth tests


Message size 100
 N  Pack uSec  Send uSec
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
Avg uSec
 # #
Avg Byte/uSec
 #.# #.#

Message size 1000
 N  Pack uSec  Send uSec
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
Avg uSec
 # #
Avg Byte/uSec
 #.# #.#

Message size 10000
 N  Pack uSec  Send uSec
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
Avg uSec
 # #
Avg Byte/uSec
 #.# #.#

Message size 100000
 N  Pack uSec  Send uSec
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
Avg uSec
 # #
Avg Byte/uSec
 #.# #.#

Message size 1000000
 N  Pack uSec  Send uSec
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
 # # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
# # #
Avg uSec
 # #
Avg Byte/uSec
 #.# #.#

done
= exit 1
"#,
        ..EXAMPLE
    },
    Example {
        program: "timing_slave",
        source: "examples/timing_slave.c",
        started: Started::SpawnedBy("timing"),
        calls: "pvm_mytid pvm_parent pvm_setopt pvm_recv pvm_getrbuf pvm_bufinfo pvm_initsend \
                pvm_pkint pvm_send pvm_freebuf",
        checks: "echoes timing's messages",
        run: Run::By("timing"),
        ..EXAMPLE
    },
    Example {
        program: "tjf",
        source: "gexamples/tjf.c",
        calls: "pvm_mytid pvm_joingroup pvm_getinst pvm_gettid pvm_lvgroup pvm_perror pvm_exit",
        checks: "joins one group more than its MAXNGROUPS (32): PVM 3.4.6 has no such limit, \
                 and the 33rd name it prints is empty (the program writes past its gid array)",
        run: Run::Steps(&[step(&["tjf"])]),
        expected: r#"$ tjf
! joined group0
! joined group1
! joined group2
! joined group3
! joined group4
! joined group5
! joined group6
! joined group7
! joined group8
! joined group9
! joined group10
! joined group11
! joined group12
! joined group13
! joined group14
! joined group15
! joined group16
! joined group17
! joined group18
! joined group19
! joined group20
! joined group21
! joined group22
! joined group23
! joined group24
! joined group25
! joined group26
! joined group27
! joined group28
! joined group29
! joined group30
! joined group31
! joined
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "tjl",
        source: "gexamples/tjl.c",
        calls: "pvm_mytid pvm_joingroup pvm_getinst pvm_gettid pvm_lvgroup pvm_perror pvm_exit",
        checks: "joins 32 groups, checks its instance and tid in each, leaves them",
        run: Run::Steps(&[step(&["tjl"])]),
        expected: r#"$ tjl
! joined group0
! joined group1
! joined group2
! joined group3
! joined group4
! joined group5
! joined group6
! joined group7
! joined group8
! joined group9
! joined group10
! joined group11
! joined group12
! joined group13
! joined group14
! joined group15
! joined group16
! joined group17
! joined group18
! joined group19
! joined group20
! joined group21
! joined group22
! joined group23
! joined group24
! joined group25
! joined group26
! joined group27
! joined group28
! joined group29
! joined group30
! joined group31
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "tnb",
        source: "gexamples/tnb.c",
        started: Started::SpawnedBy("thb"),
        calls: "pvm_mytid pvm_parent pvm_recv pvm_upkstr pvm_upkint pvm_joingroup pvm_barrier \
                pvm_lvgroup pvm_exit",
        checks: "joins the group its parent names, meets it at a barrier, waits for its \
                 broadcast",
        run: Run::By("thb"),
        ..EXAMPLE
    },
    Example {
        program: "trsg",
        source: "gexamples/trsg.c",
        started: Started::UserAndItself,
        needs: "two numbers on stdin: tasks (1-16), elements per row (1-20)",
        calls: "pvm_mytid pvm_parent pvm_joingroup pvm_spawn pvm_setopt pvm_initsend \
                pvm_pkint pvm_bcast pvm_recv pvm_upkint pvm_barrier pvm_scatter pvm_gather \
                pvm_reduce (PvmSum, PvmProduct, PvmMax, PvmMin, a user function) pvm_gsize \
                pvm_lvgroup pvm_exit",
        checks: "scatter, reduce (sum of squares, a user function), gather over 3 tasks",
        run: Run::Steps(&[Step {
            argv: &["trsg"],
            stdin: "3\n4\n",
            until: Until::Exit,
        }]),
        expected: r#"$ trsg

 *** Example use of PVM Reduce, Scatter, and Gather ***
 Number of processors to use (1-16)? :  Number of elements per row to use (1-20)? :  INPUT values: nprocs = 3, count = 4

 Test OK: Sum of Squares of first 12 integers is 650
 Test Ok: Received (4.000000, 1.000000):
= exit 1
"#,
        ..EXAMPLE
    },
    Example {
        program: "tst",
        source: "gexamples/tst.c",
        calls: "pvm_mytid pvm_joingroup pvm_lvgroup pvm_exit",
        checks: "joins two groups (instance 0 in each) and leaves them",
        run: Run::Steps(&[step(&["tst"])]),
        expected: r#"$ tst
joined prognosis 0, negative 0
left prognosis 0, negative 0
= exit 0
"#,
        ..EXAMPLE
    },
    Example {
        program: "xep",
        source: "xep/xep.c (not in the package's example sources)",
        needs: "an X display (Xt, Xaw)",
        calls: "pvm_mytid pvm_config pvm_spawn pvm_notify pvm_initsend pvm_pk* pvm_send \
                pvm_recv pvm_upk* pvm_getfds pvm_exit",
        checks: "draws the Mandelbrot set computed by mtile tasks",
        run: Run::Not("needs an X display: \"Error: Can't open display\" without one"),
        ..EXAMPLE
    },
];
