// SPDX-License-Identifier: GPL-2.0

//! The entry points C calls, in one place (as Rust Binder's `rust_binder_main.rs` keeps its
//! `#[no_mangle]` functions): the `ib_client` callbacks, the MAD agents' handlers and the
//! `/dev/cepm` file operations. Each only turns its raw arguments into the safe types of
//! [`super::rdma`] and the crate, and calls on.

use core::{
    ffi::c_void,
    ptr::NonNull, //
};
use kernel::{ffi::c_int, prelude::*, sync::Arc, types::ForeignOwnable};

use super::{
    rdma::{
        IbDevice,
        InFlight,
        ReceivedMad, //
    },
    shim,
};
use crate::{
    file::CepmFile,
    port::CmPort,
    registry, //
};

// The callbacks C calls must have exactly the signatures the header declares.
const _: shim::cepm_add_device_fn = Some(cepm_rust_add_device);
const _: shim::cepm_remove_device_fn = Some(cepm_rust_remove_device);
const _: shim::cepm_rename_device_fn = Some(cepm_rust_rename_device);
const _: shim::cepm_recv_mad_fn = Some(cepm_rust_recv_mad);
const _: shim::cepm_send_done_fn = Some(cepm_rust_send_done);
const _: shim::cepm_open_fn = Some(cepm_rust_open);
const _: shim::cepm_release_fn = Some(cepm_rust_release);
const _: shim::cepm_ioctl_fn = Some(cepm_rust_ioctl);
const _: shim::cepm_read_fn = Some(cepm_rust_read);
const _: shim::cepm_poll_fn = Some(cepm_rust_poll);

/// `ib_client.add`.
///
/// # Safety
///
/// `device` is a registered device; called only by the shim's client.
#[no_mangle]
unsafe extern "C" fn cepm_rust_add_device(device: *mut shim::ib_device) -> c_int {
    let Some(ptr) = NonNull::new(device) else {
        return EINVAL.to_errno();
    };
    // INVARIANT: We are in `add`; the registry drops the device in `remove` at the latest.
    match registry::add_device(IbDevice { ptr }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ib_client.remove`.
///
/// # Safety
///
/// `device` was passed to a successful [`cepm_rust_add_device`]; called only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_remove_device(device: *mut shim::ib_device) {
    registry::remove_device(device.cast());
}

/// `ib_client.rename`.
///
/// # Safety
///
/// `device` was passed to a successful [`cepm_rust_add_device`] and not yet to
/// [`cepm_rust_remove_device`]; called only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_rename_device(device: *mut shim::ib_device) {
    let Some(ptr) = NonNull::new(device) else {
        return;
    };
    // INVARIANT: ib_core calls `rename` only for a device whose `add` succeeded, before its
    // `remove`; this value does not outlive the callback.
    registry::rename_device(&IbDevice { ptr });
}

/// An agent's receive handler.
///
/// # Safety
///
/// `port_ctx` is the context of `agent`, a `MadAgent` that is still registered; `recv` is the
/// receive completion being handled and `mad` points at `len` readable bytes, both for the
/// duration of the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_recv_mad(
    port_ctx: *mut c_void,
    agent: *mut shim::ib_mad_agent,
    recv: *mut shim::ib_mad_recv_wc,
    mad: *const u8,
    len: usize,
) {
    // SAFETY: By the function's safety requirements `port_ctx` came from `Arc::into_foreign` and
    // is not released before the agent is unregistered, which waits for this call.
    let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(port_ctx) };
    let (Some(agent), Some(recv)) = (NonNull::new(agent), NonNull::new(recv)) else {
        return;
    };
    let bytes = if mad.is_null() {
        &[][..]
    } else {
        // SAFETY: By the function's safety requirements `mad` is valid for `len` bytes.
        unsafe { core::slice::from_raw_parts(mad, len) }
    };
    // INVARIANT: `agent` and `recv` are valid for the duration of this call, which outlives
    // `received`.
    let received = ReceivedMad { agent, recv, bytes };
    Arc::from(port).mad_received(&received);
}

/// An agent's send completion handler.
///
/// # Safety
///
/// `msg_ctx` is the context `rdma::post_mad` gave the MAD layer for this send, passed back once.
#[no_mangle]
unsafe extern "C" fn cepm_rust_send_done(
    port_ctx: *mut c_void,
    msg_ctx: *mut c_void,
    status: c_int,
) {
    // SAFETY: The MAD layer returns the context `post_mad` made with `into_foreign`, exactly once.
    let in_flight = unsafe { KBox::<InFlight>::from_foreign(msg_ctx) };
    if let Some(owner) = &in_flight.owner {
        owner.cep.send_done(owner.seq, status);
    }
    drop(in_flight);
    // SAFETY: As in `cepm_rust_recv_mad`: the agent is registered while its handlers run.
    let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(port_ctx) };
    if status != 0 && status != ECANCELED.to_errno() {
        port.count_tx_error();
    }
}

/// `open` of `/dev/cepm`: the file's context, or an `ERR_PTR`.
#[no_mangle]
extern "C" fn cepm_rust_open() -> *mut c_void {
    match CepmFile::open() {
        Ok(file) => file.into_foreign(),
        Err(e) => e.to_ptr(),
    }
}

/// `release` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and no other file operation runs or will run on it.
#[no_mangle]
unsafe extern "C" fn cepm_rust_release(ctx: *mut c_void) {
    // SAFETY: By the function's safety requirements we own the reference `open` made.
    let file = unsafe { Arc::<CepmFile>::from_foreign(ctx) };
    file.release();
}

/// `unlocked_ioctl` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_ioctl(ctx: *mut c_void, cmd: u32, arg: usize) -> isize {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    match Arc::from(file).ioctl(cmd, arg) {
        Ok(()) => 0,
        Err(e) => e.to_errno() as isize,
    }
}

/// `read` of `/dev/cepm`: whole `struct cepm_event` records.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_read(
    ctx: *mut c_void,
    buf: usize,
    len: usize,
    nonblock: bool,
) -> isize {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    match file.read(kernel::uaccess::UserPtr::from_addr(buf), len, nonblock) {
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        Err(e) => e.to_errno() as isize,
    }
}

/// `poll` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call; `file` is the file
/// being polled and `wait` its poll table (possibly null), both valid during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_poll(
    ctx: *mut c_void,
    file: *mut shim::file,
    wait: *mut shim::poll_table_struct,
) -> u32 {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let cepm_file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    // SAFETY: `file` is valid during the call (function safety requirements); the opaque
    // bindgen type and the kernel's are the same C struct.
    let vfs_file =
        unsafe { kernel::fs::File::from_raw_file(file.cast::<kernel::bindings::file>()) };
    // SAFETY: `wait` is the poll table of this poll call, valid during it (or null, which
    // `PollTable` accepts).
    let table = unsafe { kernel::sync::poll::PollTable::from_raw(wait.cast()) };
    cepm_file.poll(vfs_file, table)
}
