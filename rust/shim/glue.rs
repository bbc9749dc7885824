// SPDX-License-Identifier: GPL-2.0

//! The entry points C calls, in one place (as Rust Binder's `rust_binder_main.rs` keeps its
//! `#[no_mangle]` functions): the `ib_client` callbacks and the `/dev/cepm` file operations.
//! Each only turns its raw arguments into the safe types of [`super::rdma`] and the crate, and
//! calls on. (A MAD agent's callbacks are generic over its handler, so they live with
//! [`super::rdma::MadAgent`], as `rust/kernel/miscdevice.rs` keeps its vtable's.)

use core::{
    ffi::c_void,
    ptr::NonNull, //
};
use kernel::{ffi::c_int, prelude::*, sync::Arc, types::ForeignOwnable};

use super::{
    bindings,
    rdma::IbDevice, //
};
use crate::{
    context::Cm,
    file::CepmFile, //
};

// The callbacks C calls must have exactly the signatures the header declares.
const _: bindings::cepm_add_device_fn = Some(cepm_rust_add_device);
const _: bindings::cepm_remove_device_fn = Some(cepm_rust_remove_device);
const _: bindings::cepm_rename_device_fn = Some(cepm_rust_rename_device);
const _: bindings::cepm_open_fn = Some(cepm_rust_open);
const _: bindings::cepm_release_fn = Some(cepm_rust_release);
const _: bindings::cepm_ioctl_fn = Some(cepm_rust_ioctl);
const _: bindings::cepm_read_fn = Some(cepm_rust_read);
const _: bindings::cepm_poll_fn = Some(cepm_rust_poll);
const _: bindings::cepm_listen_shards_fn = Some(cepm_rust_listen_shards);
// debugfs listen_shards prints one count per shard of the listener table.
const _: () = assert!(bindings::CEPM_LISTEN_SHARDS as usize == crate::sharded::SHARDS);

/// `ib_client.add`.
///
/// # Safety
///
/// `cm` is the context of a registered [`super::CmRegistration::client`] and `device` a registered
/// device; called only by the shim's client.
#[no_mangle]
unsafe extern "C" fn cepm_rust_add_device(
    cm: *mut c_void,
    device: *mut bindings::ib_device,
) -> c_int {
    // SAFETY: By the function's safety requirements `cm` came from `Arc::into_foreign`, and the
    // registration keeps it until the client is unregistered, which waits for this call.
    let cm = Arc::<Cm>::from(unsafe { <Arc<Cm> as ForeignOwnable>::borrow(cm) });
    let Some(ptr) = NonNull::new(device) else {
        return EINVAL.to_errno();
    };
    // INVARIANT: We are in `add`; the registry drops the device in `remove` at the latest.
    let device = IbDevice { ptr };
    // SAFETY: ib_core holds `devices_rwsem` around `add`: no rename runs.
    let name = unsafe { device.name() };
    match cm.devices.add_device(&cm, device, name) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ib_client.remove`.
///
/// # Safety
///
/// `cm` is the context of a registered [`super::CmRegistration::client`]; `device` was passed to
/// a successful [`cepm_rust_add_device`]; called only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_remove_device(cm: *mut c_void, device: *mut bindings::ib_device) {
    // SAFETY: As in `cepm_rust_add_device`.
    let cm = unsafe { <Arc<Cm> as ForeignOwnable>::borrow(cm) };
    cm.devices.remove_device(device.cast());
}

/// `ib_client.rename`.
///
/// # Safety
///
/// `cm` is the context of a registered [`super::CmRegistration::client`]; `device` was passed to
/// a successful [`cepm_rust_add_device`] and not yet to [`cepm_rust_remove_device`]; called
/// only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_rename_device(cm: *mut c_void, device: *mut bindings::ib_device) {
    // SAFETY: As in `cepm_rust_add_device`.
    let cm = unsafe { <Arc<Cm> as ForeignOwnable>::borrow(cm) };
    let Some(ptr) = NonNull::new(device) else {
        return;
    };
    // INVARIANT: ib_core calls `rename` only for a device whose `add` succeeded, before its
    // `remove`; this value does not outlive the callback.
    let device = IbDevice { ptr };
    // SAFETY: ib_core holds `devices_rwsem` around `rename`, once the new name is in place.
    let name = unsafe { device.name() };
    cm.devices.rename_device(&device, name);
}

/// debugfs `listen_shards`: how many service IDs have exact listeners in each shard.
///
/// # Safety
///
/// `cm` is the context of a live [`super::FaultInjection`] and `counts` points at `n`
/// writable `u32`s; called only by the shim's `listen_shards` file.
#[no_mangle]
unsafe extern "C" fn cepm_rust_listen_shards(cm: *mut c_void, counts: *mut u32, n: u32) {
    // SAFETY: By the function's safety requirements `cm` came from `Arc::into_foreign`, and
    // `FaultInjection` keeps it until the file is removed, which waits for this call.
    let cm = unsafe { <Arc<Cm> as ForeignOwnable>::borrow(cm) };
    if counts.is_null() {
        return;
    }
    // SAFETY: By the function's safety requirements `counts` is valid for `n` writes.
    let counts = unsafe { core::slice::from_raw_parts_mut(counts, n as usize) };
    cm.tables.listen_shard_counts(counts);
}

/// `open` of `/dev/cepm`: the file's context, or an `ERR_PTR`.
///
/// # Safety
///
/// `cm` is the context of a registered [`super::CmRegistration::chardev`]; called only by the
/// shim's `open`.
#[no_mangle]
unsafe extern "C" fn cepm_rust_open(cm: *mut c_void) -> *mut c_void {
    // SAFETY: By the function's safety requirements `cm` came from `Arc::into_foreign`, and the
    // registration keeps it until `/dev/cepm` is unregistered, which no `open` outlasts.
    let cm = unsafe { <Arc<Cm> as ForeignOwnable>::borrow(cm) };
    match CepmFile::open(Arc::from(cm)) {
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
    file: *mut bindings::file,
    wait: *mut bindings::poll_table_struct,
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
