//! The few parts of PMIx's C API the client calls, mirrored from the
//! headers of PMIx 4.2.2 (`pmix.h`, `pmix_common.h`; Debian's
//! `libpmix-dev`), and the library loaded at run time.
//!
//! The layouts have been those of `libpmix.so.2` since PMIx 3: the soname
//! is PMIx's promise of ABI compatibility, and the tests check every size
//! and offset against what a C program compiled with the 4.2.2 headers
//! prints (`sizeof(pmix_proc_t)` 260, `pmix_value_t` 32 with its data at
//! 8, `pmix_info_t` 552 with `flags` at 512 and `value` at 520).

use super::super::PmiError;
use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

/// The library's file name: its soname, found on the loader's path
/// (`LD_LIBRARY_PATH` for a PMIx outside the system's directories).
pub(super) const LIBRARY: &str = "libpmix.so.2";

/// `PMIX_MAX_NSLEN`: a namespace's longest name, without its NUL.
pub(super) const MAX_NSLEN: usize = 255;
/// `PMIX_MAX_KEYLEN`: a key's longest name, without its NUL.
pub(super) const MAX_KEYLEN: usize = 511;

/// `pmix_status_t`.
pub(super) type Status = c_int;
/// `PMIX_SUCCESS`.
pub(super) const SUCCESS: Status = 0;
/// `PMIX_ERR_TIMEOUT`.
pub(super) const ERR_TIMEOUT: Status = -24;
/// `PMIX_ERR_NOT_FOUND`.
pub(super) const ERR_NOT_FOUND: Status = -46;

/// `pmix_data_type_t` values the client writes or reads.
pub(super) const TYPE_BOOL: u16 = 1;
pub(super) const TYPE_STRING: u16 = 3;
pub(super) const TYPE_INT: u16 = 6;
pub(super) const TYPE_UINT32: u16 = 14;

/// `PMIX_GLOBAL`: a put value is shared with every process of the job,
/// on this host and others.
pub(super) const SCOPE_GLOBAL: u8 = 3;

/// `PMIX_RANK_WILDCARD`: every process of a namespace (job-level keys,
/// a fence over the whole job).
pub(super) const RANK_WILDCARD: u32 = u32::MAX - 1;

/// Keys (`pmix_common.h`), with their NUL.
pub(super) const KEY_JOB_SIZE: &[u8] = b"pmix.job.size\0";
pub(super) const KEY_NODEID: &[u8] = b"pmix.nodeid\0";
pub(super) const KEY_COLLECT_DATA: &[u8] = b"pmix.collect\0";
pub(super) const KEY_TIMEOUT: &[u8] = b"pmix.timeout\0";

/// `pmix_proc_t`: a process, named by its namespace (the job) and rank.
#[repr(C)]
pub(super) struct Proc {
    pub(super) nspace: [c_char; MAX_NSLEN + 1],
    pub(super) rank: u32,
}

/// `pmix_value_t`: a type tag and a union of which the client uses the
/// members below; `_layout` gives the union the C one's size (24 bytes,
/// its largest members being three words).
#[repr(C)]
pub(super) struct Value {
    pub(super) kind: u16,
    pub(super) data: ValueData,
}

/// The union in `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) union ValueData {
    pub(super) flag: bool,
    pub(super) integer: c_int,
    pub(super) uint32: u32,
    pub(super) string: *mut c_char,
    _layout: [u64; 3],
}

/// `pmix_info_t`: a directive to a call, a key and a value.
#[repr(C)]
pub(super) struct Info {
    pub(super) key: [c_char; MAX_KEYLEN + 1],
    pub(super) flags: u32,
    pub(super) value: Value,
}

impl Proc {
    /// Process `rank` of namespace `nspace` (cut to `MAX_NSLEN` bytes,
    /// which a namespace the library gave never exceeds).
    pub(super) fn new(nspace: &[u8], rank: u32) -> Proc {
        let mut proc = Proc {
            nspace: [0; MAX_NSLEN + 1],
            rank,
        };
        for (slot, &b) in proc.nspace.iter_mut().zip(nspace.iter().take(MAX_NSLEN)) {
            *slot = b as c_char;
        }
        proc
    }

    /// The namespace's bytes, up to its NUL.
    pub(super) fn nspace_bytes(&self) -> Vec<u8> {
        self.nspace
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect()
    }
}

impl Info {
    /// An info of a value without pointers (a bool or an int), which
    /// needs no destructor. `key` ends with its NUL.
    fn inline(key: &[u8], kind: u16, data: ValueData) -> Info {
        let mut info = Info {
            key: [0; MAX_KEYLEN + 1],
            flags: 0,
            value: Value { kind, data },
        };
        for (slot, &b) in info.key.iter_mut().zip(key.iter().take(MAX_KEYLEN)) {
            *slot = b as c_char;
        }
        info
    }

    /// `PMIX_COLLECT_DATA = true`: a fence that hands every process the
    /// values all have put, so that later gets are answered locally.
    pub(super) fn collect_data() -> Info {
        Info::inline(KEY_COLLECT_DATA, TYPE_BOOL, ValueData { flag: true })
    }

    /// `PMIX_TIMEOUT = seconds` (0 would mean "never").
    pub(super) fn timeout(seconds: c_int) -> Info {
        Info::inline(KEY_TIMEOUT, TYPE_INT, ValueData { integer: seconds.max(1) })
    }
}

type InitFn = unsafe extern "C" fn(proc: *mut Proc, info: *mut Info, ninfo: usize) -> Status;
type FinalizeFn = unsafe extern "C" fn(info: *const Info, ninfo: usize) -> Status;
type AbortFn =
    unsafe extern "C" fn(status: c_int, msg: *const c_char, procs: *mut Proc, nprocs: usize) -> Status;
type PutFn = unsafe extern "C" fn(scope: u8, key: *const c_char, value: *mut Value) -> Status;
type CommitFn = unsafe extern "C" fn() -> Status;
type FenceFn =
    unsafe extern "C" fn(procs: *const Proc, nprocs: usize, info: *const Info, ninfo: usize) -> Status;
type GetFn = unsafe extern "C" fn(
    proc: *const Proc,
    key: *const c_char,
    info: *const Info,
    ninfo: usize,
    value: *mut *mut Value,
) -> Status;
type ValueDestructFn = unsafe extern "C" fn(value: *mut Value);
type ErrorStringFn = unsafe extern "C" fn(status: Status) -> *const c_char;
type GetVersionFn = unsafe extern "C" fn() -> *const c_char;

/// The library and the functions the client calls, each of the type
/// `pmix.h` declares (the names above are its parameters').
pub(super) struct Pmix {
    pub(super) init: InitFn,
    pub(super) finalize: FinalizeFn,
    pub(super) abort: AbortFn,
    pub(super) put: PutFn,
    pub(super) commit: CommitFn,
    pub(super) fence: FenceFn,
    pub(super) get: GetFn,
    pub(super) value_destruct: ValueDestructFn,
    error_string: ErrorStringFn,
    get_version: GetVersionFn,
    /// Kept loaded for the process's life: the library runs a progress
    /// thread of its own from `PMIx_Init`, which unloading would pull
    /// the code from under.
    _library: libloading::Library,
}

/// Loaded on first use, never unloaded (`Pmix::_library`).
static LOADED: OnceLock<Pmix> = OnceLock::new();

impl Pmix {
    /// The library, loaded now if it is not yet.
    pub(super) fn get() -> Result<&'static Pmix, PmiError> {
        if let Some(pmix) = LOADED.get() {
            return Ok(pmix);
        }
        let loaded = Pmix::load()?;
        Ok(LOADED.get_or_init(|| loaded))
    }

    fn load() -> Result<Pmix, PmiError> {
        let load_error = |source| PmiError::Library {
            library: LIBRARY,
            source,
        };
        // SAFETY: loading runs libpmix's initializers, which only set up
        // its own state (its threads start in `PMIx_Init`); the library
        // is the system's PMIx, whose soname promises this ABI.
        let library = unsafe { libloading::Library::new(LIBRARY) }.map_err(load_error)?;
        macro_rules! symbol {
            ($name:literal) => {
                // SAFETY: the symbol's type is the declaration of the same
                // name in pmix.h (the `*Fn` types above mirror them), and
                // the pointer copied out stays valid because the library
                // is never unloaded.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }.map_err(load_error)?
            };
        }
        Ok(Pmix {
            init: symbol!("PMIx_Init"),
            finalize: symbol!("PMIx_Finalize"),
            abort: symbol!("PMIx_Abort"),
            put: symbol!("PMIx_Put"),
            commit: symbol!("PMIx_Commit"),
            fence: symbol!("PMIx_Fence"),
            get: symbol!("PMIx_Get"),
            value_destruct: symbol!("PMIx_Value_destruct"),
            error_string: symbol!("PMIx_Error_string"),
            get_version: symbol!("PMIx_Get_version"),
            _library: library,
        })
    }

    /// The library's name for `status` (`PMIX_ERR_TIMEOUT`, …).
    pub(super) fn error_string(&self, status: Status) -> String {
        // SAFETY: PMIx_Error_string takes any status and returns a pointer
        // to a static string (or NULL, checked by `owned`).
        owned(unsafe { (self.error_string)(status) })
    }

    /// The library's version string, as `PMIx_Get_version` says it.
    pub(super) fn version(&self) -> String {
        // SAFETY: PMIx_Get_version takes nothing and returns a pointer to
        // a static string.
        owned(unsafe { (self.get_version)() })
    }
}

/// A C string the library owns, copied; empty for NULL.
fn owned(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: not NULL, and the callers pass strings the library keeps
    // for the process's life, NUL-terminated.
    unsafe { std::ffi::CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}
