//! PVM 3.4's numbers, as `pvm3.h` defines them: the C ABI that programs
//! were compiled against.

#![allow(dead_code)]

/// Error codes (`PvmOk` and the negative `Pvm*` values).
pub const PVM_OK: i32 = 0;
pub const PVM_BAD_PARAM: i32 = -2;
pub const PVM_MISMATCH: i32 = -3;
pub const PVM_OVERFLOW: i32 = -4;
pub const PVM_NO_DATA: i32 = -5;
pub const PVM_NO_HOST: i32 = -6;
pub const PVM_NO_FILE: i32 = -7;
pub const PVM_DENIED: i32 = -8;
pub const PVM_NO_MEM: i32 = -10;
pub const PVM_BAD_MSG: i32 = -12;
pub const PVM_SYS_ERR: i32 = -14;
pub const PVM_NO_BUF: i32 = -15;
pub const PVM_NO_SUCH_BUF: i32 = -16;
pub const PVM_NULL_GROUP: i32 = -17;
pub const PVM_DUP_GROUP: i32 = -18;
pub const PVM_NO_GROUP: i32 = -19;
pub const PVM_NOT_IN_GROUP: i32 = -20;
pub const PVM_NO_INST: i32 = -21;
pub const PVM_HOST_FAIL: i32 = -22;
pub const PVM_NO_PARENT: i32 = -23;
pub const PVM_NOT_IMPL: i32 = -24;
pub const PVM_DSYS_ERR: i32 = -25;
pub const PVM_BAD_VERSION: i32 = -26;
pub const PVM_OUT_OF_RES: i32 = -27;
pub const PVM_DUP_HOST: i32 = -28;
pub const PVM_CANT_START: i32 = -29;
pub const PVM_ALREADY: i32 = -30;
pub const PVM_NO_TASK: i32 = -31;
pub const PVM_NOT_FOUND: i32 = -32;
pub const PVM_EXISTS: i32 = -33;

/// The text `pvm_perror` prints for an error code, as PVM words it.
pub fn error_text(code: i32) -> &'static str {
    match code {
        PVM_OK => "Ok",
        PVM_BAD_PARAM => "Bad parameter",
        PVM_MISMATCH => "Parameter mismatch",
        PVM_OVERFLOW => "Value too large",
        PVM_NO_DATA => "End of buffer",
        PVM_NO_HOST => "No such host",
        PVM_NO_FILE => "No such file",
        PVM_DENIED => "Permission denied",
        PVM_NO_MEM => "Malloc failed",
        PVM_BAD_MSG => "Can't decode message",
        PVM_SYS_ERR => "Can't contact local daemon",
        PVM_NO_BUF => "No current buffer",
        PVM_NO_SUCH_BUF => "No such buffer",
        PVM_NULL_GROUP => "Null group name",
        PVM_DUP_GROUP => "Already in group",
        PVM_NO_GROUP => "No such group",
        PVM_NOT_IN_GROUP => "Not in group",
        PVM_NO_INST => "No such instance",
        PVM_HOST_FAIL => "Host failed",
        PVM_NO_PARENT => "No parent task",
        PVM_NOT_IMPL => "Not implemented",
        PVM_DSYS_ERR => "Pvmd system error",
        PVM_BAD_VERSION => "Version mismatch",
        PVM_OUT_OF_RES => "Out of resources",
        PVM_DUP_HOST => "Duplicate host",
        PVM_CANT_START => "Can't start pvmd",
        PVM_ALREADY => "Already in progress",
        PVM_NO_TASK => "No such task",
        PVM_NOT_FOUND => "Not Found",
        PVM_EXISTS => "Already exists",
        _ => "Unknown error",
    }
}

/// Encodings of `pvm_initsend` and `pvm_mkbuf`.
pub const DATA_DEFAULT: i32 = 0;
pub const DATA_RAW: i32 = 1;
pub const DATA_IN_PLACE: i32 = 2;

/// Data types of `pvm_psend`, `pvm_precv` and `pvm_reduce`.
pub const PVM_STR: i32 = 0;
pub const PVM_BYTE: i32 = 1;
pub const PVM_SHORT: i32 = 2;
pub const PVM_INT: i32 = 3;
pub const PVM_FLOAT: i32 = 4;
pub const PVM_CPLX: i32 = 5;
pub const PVM_DOUBLE: i32 = 6;
pub const PVM_DCPLX: i32 = 7;
pub const PVM_LONG: i32 = 8;
pub const PVM_USHORT: i32 = 9;
pub const PVM_UINT: i32 = 10;
pub const PVM_ULONG: i32 = 11;

/// `pvm_spawn` flags.
pub const TASK_HOST: i32 = 1;
pub const TASK_ARCH: i32 = 2;
pub const TASK_DEBUG: i32 = 4;
pub const TASK_TRACE: i32 = 8;
pub const MPP_FRONT: i32 = 16;
pub const HOST_COMPL: i32 = 32;
pub const NO_SPAWN_PARENT: i32 = 64;

/// `pvm_notify` kinds.
pub const NOTIFY_TASK_EXIT: i32 = 1;
pub const NOTIFY_HOST_DELETE: i32 = 2;
pub const NOTIFY_HOST_ADD: i32 = 3;
pub const NOTIFY_ROUTE_ADD: i32 = 4;
pub const NOTIFY_ROUTE_DELETE: i32 = 5;
pub const NOTIFY_CANCEL: i32 = 256;

/// `pvm_setopt` and `pvm_getopt` options.
pub const OPT_ROUTE: i32 = 1;
pub const OPT_DEBUG_MASK: i32 = 2;
pub const OPT_AUTO_ERR: i32 = 3;
pub const OPT_OUTPUT_TID: i32 = 4;
pub const OPT_OUTPUT_CODE: i32 = 5;
pub const OPT_TRACE_TID: i32 = 6;
pub const OPT_TRACE_CODE: i32 = 7;
pub const OPT_TRACE_BUFFER: i32 = 8;
pub const OPT_TRACE_OPTIONS: i32 = 9;
pub const OPT_FRAG_SIZE: i32 = 10;
pub const OPT_RESV_TIDS: i32 = 11;
pub const OPT_SELF_OUTPUT_TID: i32 = 12;
pub const OPT_SELF_OUTPUT_CODE: i32 = 13;
pub const OPT_SELF_TRACE_TID: i32 = 14;
pub const OPT_SELF_TRACE_CODE: i32 = 15;
pub const OPT_SELF_TRACE_BUFFER: i32 = 16;
pub const OPT_SELF_TRACE_OPTIONS: i32 = 17;
pub const OPT_SHOW_TIDS: i32 = 18;
pub const OPT_POLL_TYPE: i32 = 19;
pub const OPT_POLL_TIME: i32 = 20;
pub const OPT_OUTPUT_CONTEXT: i32 = 21;
pub const OPT_TRACE_CONTEXT: i32 = 22;
pub const OPT_SELF_OUTPUT_CONTEXT: i32 = 23;
pub const OPT_SELF_TRACE_CONTEXT: i32 = 24;
pub const OPT_NO_RESET: i32 = 25;
/// Values of [`OPT_ROUTE`].
pub const DONT_ROUTE: i32 = 1;
pub const ALLOW_DIRECT: i32 = 2;
pub const ROUTE_DIRECT: i32 = 3;

/// Mailbox flags of `pvm_putinfo` and `pvm_recvinfo`.
pub const MBOX_DEFAULT: i32 = 0;
pub const MBOX_PERSISTENT: i32 = 1;
pub const MBOX_MULTI_INSTANCE: i32 = 2;
pub const MBOX_OVERWRITABLE: i32 = 4;
pub const MBOX_FIRST_AVAIL: i32 = 8;
pub const MBOX_READ_AND_DELETE: i32 = 16;
pub const MBOX_WAIT_FOR_INFO: i32 = 32;

/// The base context every task starts in.
pub const BASE_CONTEXT: i32 = 0;
