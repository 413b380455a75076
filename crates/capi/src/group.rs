//! Groups: ordered sets of threads, each member with a rank, built
//! collectively; and the collectives between their members.

use crate::context::with_endpoint;
use crate::error::{call, Error, Result, TwError};
use crate::types::{
    non_null, op, slice, slice_mut, take_handle, tw_address, tw_datatype, tw_op, with_datatype,
    write_out,
};
use std::ffi::{c_int, c_void};
use tw::fiber::{current_unparker, Unparker};
use tw::Group;

/// A group of threads, as seen by one member; belongs to the thread (or
/// fiber) that built it, until `tw_group_free`.
#[allow(non_camel_case_types)]
pub struct tw_group {
    owner: Unparker,
    group: Group,
}

/// The caller's group behind `g`, checked to be the caller's.
///
/// # Safety
///
/// `g` is NULL or a live group handle.
unsafe fn mine<'a>(g: *mut tw_group) -> Result<&'a Group> {
    non_null(g, "group")?;
    // SAFETY: a live handle, as the caller promises; only read here, and
    // used below only by its owner.
    let g = unsafe { &*g };
    match g.owner.same_as(&current_unparker()) {
        true => Ok(&g.group),
        false => Err(Error::new(
            TwError::TW_ERR_WRONG_THREAD,
            "a group belongs to the thread that built it",
        )),
    }
}

fn give(group: Group, out: *mut *mut tw_group) {
    let g = Box::into_raw(Box::new(tw_group {
        owner: current_unparker(),
        group,
    }));
    // SAFETY: every caller checked `out` non-NULL; valid as its caller
    // promises.
    unsafe { out.write(g) };
}

/// The group of thread 0 of every node, rank = node (MPI's
/// `COMM_WORLD` for one thread a node). Collective: thread 0 of every node
/// calls it.
///
/// Context: thread 0. Errors: `TW_ERR_INVALID` (NULL), `TW_ERR_GROUP`,
/// `TW_ERR_PEER_LOST`, `TW_ERR_NO_ENDPOINT`.
///
/// # Safety
///
/// `group` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_world(group: *mut *mut tw_group) -> c_int {
    call(|| {
        non_null(group, "group")?;
        let g = with_endpoint(|ep| Ok(Group::world(ep)?))?;
        give(g, group);
        Ok(())
    })
}

/// The group of the first `threads` threads of every node, rank = node ·
/// threads + thread. Collective: each of them calls it.
///
/// Context, errors: as `tw_group_world`, from any of those threads.
///
/// # Safety
///
/// `group` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_world_threads(threads: u32, group: *mut *mut tw_group) -> c_int {
    call(|| {
        non_null(group, "group")?;
        let g = with_endpoint(|ep| Ok(Group::world_threads(ep, threads)?))?;
        give(g, group);
        Ok(())
    })
}

/// The group of the `count` addresses at `members`, ranked in that order.
/// Collective: every member calls it with the same list.
///
/// Context: a member's thread. Errors: `TW_ERR_INVALID` (NULL),
/// `TW_ERR_GROUP` (empty list, duplicate, the caller not in it, lists that
/// differ), `TW_ERR_PEER_LOST`.
///
/// # Safety
///
/// `members` is NULL or valid for reads of `count` addresses; `group` is
/// NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_create(
    members: *const tw_address,
    count: usize,
    group: *mut *mut tw_group,
) -> c_int {
    call(|| {
        non_null(group, "group")?;
        // SAFETY: NULL or valid for `count` addresses, as the caller promises.
        let list = unsafe { slice(members, count, "members") }?;
        let list: Vec<tw::Address> = list
            .iter()
            .map(|a| crate::types::destination(*a))
            .collect::<Result<_>>()?;
        let g = with_endpoint(|ep| Ok(Group::new(ep, &list)?))?;
        give(g, group);
        Ok(())
    })
}

/// Splits `group` (collective): members passing the same `color` form a
/// new group, ranked by `key`, then by rank in `group`. A negative
/// `color` joins none: `*newgroup` is then NULL.
///
/// Context: the group's thread. Errors: `TW_ERR_INVALID`,
/// `TW_ERR_WRONG_THREAD`, `TW_ERR_GROUP`, `TW_ERR_PEER_LOST`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `newgroup` is NULL or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_split(
    group: *mut tw_group,
    color: c_int,
    key: i64,
    newgroup: *mut *mut tw_group,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        non_null(newgroup, "newgroup")?;
        let color = u32::try_from(color).ok();
        match g.split(color, key)? {
            Some(split) => give(split, newgroup),
            // SAFETY: checked non-NULL; valid as the caller promises.
            None => unsafe { newgroup.write(std::ptr::null_mut()) },
        }
        Ok(())
    })
}

/// A new group of the same members with contexts of its own (collective):
/// its messages never mix with `group`'s.
///
/// # Safety
///
/// As `tw_group_split`.
#[no_mangle]
pub unsafe extern "C" fn tw_group_dup(group: *mut tw_group, newgroup: *mut *mut tw_group) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        non_null(newgroup, "newgroup")?;
        give(g.dup()?, newgroup);
        Ok(())
    })
}

/// The caller's rank in `group` into `*rank`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `rank` is NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_rank(group: *mut tw_group, rank: *mut u32) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(rank, "rank", g.rank() as u32) }
    })
}

/// The number of members of `group` into `*size`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `size` is NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_size(group: *mut tw_group, size: *mut u32) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(size, "size", g.size() as u32) }
    })
}

/// The address of member `rank` of `group` into `*address`.
///
/// Errors: `TW_ERR_GROUP` for a rank out of range.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `address` is NULL or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn tw_group_address(
    group: *mut tw_group,
    rank: u32,
    address: *mut tw_address,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let a = g.address(rank as usize).ok_or_else(|| {
            Error::from(tw::CollError::RankOutOfRange {
                rank: rank as usize,
                size: g.size(),
            })
        })?;
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(address, "address", a.into()) }
    })
}

/// Frees the caller's view of a group; `*group` becomes NULL (a NULL
/// `*group` is a no-op). Not collective.
///
/// Context: the group's thread. Errors: `TW_ERR_INVALID` (NULL `group`),
/// `TW_ERR_WRONG_THREAD` (then the group is left as it was).
///
/// # Safety
///
/// `group` is NULL or points to NULL or a live group handle.
#[no_mangle]
pub unsafe extern "C" fn tw_group_free(group: *mut *mut tw_group) -> c_int {
    call(|| {
        non_null(group, "group")?;
        // SAFETY: non-NULL and valid, as the caller promises.
        let g = unsafe { group.read() };
        if g.is_null() {
            return Ok(());
        }
        // SAFETY: a live handle, as the caller promises.
        unsafe { mine(g) }?;
        // SAFETY: as the caller promises; it gives the handle up.
        unsafe { take_handle(group, "group") }.map(drop)
    })
}

/// Returns once every member of `group` has called it.
///
/// Context: the group's thread. Errors: `TW_ERR_INVALID`,
/// `TW_ERR_WRONG_THREAD`, `TW_ERR_PEER_LOST`, `TW_ERR_REVOKED`.
///
/// # Safety
///
/// `group` is NULL or a live group handle.
#[no_mangle]
pub unsafe extern "C" fn tw_barrier(group: *mut tw_group) -> c_int {
    // SAFETY: NULL or a live handle, as the caller promises.
    call(|| Ok(unsafe { mine(group) }?.barrier()?))
}

/// Copies `root`'s `count` elements of `datatype` at `buf` into every
/// member's `buf`.
///
/// Context: the group's thread; every member calls it with the same
/// `count`, `datatype` and `root`. Errors: `TW_ERR_INVALID` (NULL,
/// misaligned, unknown datatype), `TW_ERR_WRONG_THREAD`, `TW_ERR_GROUP`
/// (root out of range, arguments that differ), `TW_ERR_PEER_LOST`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `buf` is NULL or valid for reads
/// and writes of `count` elements.
#[no_mangle]
pub unsafe extern "C" fn tw_bcast(
    group: *mut tw_group,
    buf: *mut c_void,
    count: usize,
    datatype: tw_datatype,
    root: u32,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let buf = unsafe { slice_mut(buf.cast::<T>(), count, "buf") }?;
            Ok(g.bcast(buf, root as usize)?)
        })
    })
}

/// Combines every member's `count` elements at `buf` element-wise with
/// `op` and leaves the result in every member's `buf`.
///
/// Context, errors: as `tw_bcast`; `TW_ERR_GROUP` also for an operation
/// that does not apply (bitwise on floats).
///
/// # Safety
///
/// As `tw_bcast`.
#[no_mangle]
pub unsafe extern "C" fn tw_allreduce(
    group: *mut tw_group,
    buf: *mut c_void,
    count: usize,
    datatype: tw_datatype,
    op: tw_op,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let op = self::op(op)?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let buf = unsafe { slice_mut(buf.cast::<T>(), count, "buf") }?;
            Ok(g.allreduce(buf, op)?)
        })
    })
}

/// Combines every member's `count` elements at `send` with `op`; the result
/// goes to `recv` at `root` (`recv` is ignored elsewhere and may be NULL).
///
/// Context, errors: as `tw_allreduce`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `send` is NULL or valid for
/// reads of `count` elements; at the root `recv` is NULL or valid for
/// writes of `count` elements.
#[no_mangle]
pub unsafe extern "C" fn tw_reduce(
    group: *mut tw_group,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: tw_datatype,
    op: tw_op,
    root: u32,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let op = self::op(op)?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let send = unsafe { slice(send.cast::<T>(), count, "send") }?;
            // SAFETY: at the root, NULL or valid for `count` elements.
            let recv = unsafe { root_output::<T>(g, root, recv, count) }?;
            if let (Some(result), Some(recv)) = (g.reduce(send, op, root as usize)?, recv) {
                recv.copy_from_slice(&result);
            }
            Ok(())
        })
    })
}

/// Every member's `count` elements at `send`, in rank order, into every
/// member's `recv` (`count` × group size elements).
///
/// Context, errors: as `tw_bcast`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; `send` is NULL or valid for
/// reads of `count` elements; `recv` is NULL or valid for writes of
/// `count` × size elements.
#[no_mangle]
pub unsafe extern "C" fn tw_allgather(
    group: *mut tw_group,
    send: *const c_void,
    count: usize,
    datatype: tw_datatype,
    recv: *mut c_void,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let total = total(count, g.size())?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let send = unsafe { slice(send.cast::<T>(), count, "send") }?;
            // SAFETY: NULL or valid for `total` elements, as the caller promises.
            let recv = unsafe { slice_mut(recv.cast::<T>(), total, "recv") }?;
            recv.copy_from_slice(&g.allgather(send)?);
            Ok(())
        })
    })
}

/// Every member's `count` elements at `send`, in rank order, into `recv`
/// at `root` (`count` × group size elements; ignored elsewhere, may be
/// NULL).
///
/// Context, errors: as `tw_bcast`.
///
/// # Safety
///
/// As `tw_allgather`, `recv` at the root only.
#[no_mangle]
pub unsafe extern "C" fn tw_gather(
    group: *mut tw_group,
    send: *const c_void,
    count: usize,
    datatype: tw_datatype,
    recv: *mut c_void,
    root: u32,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let total = total(count, g.size())?;
        with_datatype!(datatype, T => {
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let send = unsafe { slice(send.cast::<T>(), count, "send") }?;
            // SAFETY: at the root, NULL or valid for `total` elements.
            let recv = unsafe { root_output::<T>(g, root, recv, total) }?;
            if let (Some(all), Some(recv)) = (g.gather(send, root as usize)?, recv) {
                recv.copy_from_slice(&all);
            }
            Ok(())
        })
    })
}

/// Block i (`count` elements) of `root`'s `send` (`count` × group size
/// elements; ignored elsewhere, may be NULL) into member i's `recv`.
///
/// Context, errors: as `tw_bcast`.
///
/// # Safety
///
/// `group` is NULL or a live group handle; at the root `send` is NULL or
/// valid for reads of `count` × size elements; `recv` is NULL or valid for
/// writes of `count` elements.
#[no_mangle]
pub unsafe extern "C" fn tw_scatter(
    group: *mut tw_group,
    send: *const c_void,
    count: usize,
    datatype: tw_datatype,
    recv: *mut c_void,
    root: u32,
) -> c_int {
    call(|| {
        // SAFETY: NULL or a live handle, as the caller promises.
        let g = unsafe { mine(group) }?;
        let total = total(count, g.size())?;
        with_datatype!(datatype, T => {
            let send: &[T] = match g.rank() == root as usize {
                // SAFETY: at the root, NULL or valid for `total` elements.
                true => unsafe { slice(send.cast::<T>(), total, "send") }?,
                false => &[],
            };
            // SAFETY: NULL or valid for `count` elements, as the caller promises.
            let recv = unsafe { slice_mut(recv.cast::<T>(), count, "recv") }?;
            recv.copy_from_slice(&g.scatter(send, count, root as usize)?);
            Ok(())
        })
    })
}

/// The output significant at the root only: `len` elements at `recv`
/// there, nothing elsewhere (where `recv` may be anything).
///
/// # Safety
///
/// At the root, `recv` is NULL or valid for writes of `len` elements.
unsafe fn root_output<'a, T>(
    g: &Group,
    root: u32,
    recv: *mut c_void,
    len: usize,
) -> Result<Option<&'a mut [T]>> {
    match g.rank() == root as usize {
        // SAFETY: at the root, as the caller promises.
        true => Ok(Some(unsafe { slice_mut(recv.cast::<T>(), len, "recv") }?)),
        false => Ok(None),
    }
}

fn total(count: usize, size: usize) -> Result<usize> {
    count
        .checked_mul(size)
        .ok_or_else(|| Error::invalid(format!("{count} elements × {size} members overflow")))
}
