//! The RDMA devices, each opened once for the life of the process as librdmacm opens them:
//! the IDs bound to a device share its verbs context and one protection domain, and the
//! connection parameters are bounded by its limits. The list follows libibverbs' as
//! librdmacm's does: a device added later is opened when the application lists the devices or
//! names it, and one removed is no longer listed.

use core::ffi::{c_int, CStr};
use std::sync::Mutex;

use crate::sys;

/// An opened device.
#[derive(Clone, Copy)]
pub(crate) struct Device {
    /// Its verbs context (`id->verbs`).
    pub(crate) context: *mut sys::ibv_context,
    /// The protection domain its IDs share (`id->pd`).
    pub(crate) pd: *mut sys::ibv_pd,
    /// The most RDMA reads and atomics it can have outstanding toward it (responder resources).
    pub(crate) max_responder_resources: u8,
    /// The most it can issue (initiator depth).
    pub(crate) max_initiator_depth: u8,
}

struct Opened {
    name: String,
    /// libibverbs' device, as its lists name it: the same pointer in every list while the
    /// device stays (a device removed and added again is another).
    ibv_device: *mut sys::ibv_device,
    device: Device,
    /// No longer listed by libibverbs: hidden from the application and from lookups. Its
    /// context stays open, since IDs and QPs of the application may still use it.
    gone: bool,
}

// SAFETY: The verbs objects may be used from any thread (libibverbs is thread-safe).
unsafe impl Send for Opened {}

/// The devices opened, and libibverbs' last device list, kept so that its devices stay
/// allocated to be compared with the next list's, as librdmacm keeps its `dev_list`.
struct Devices {
    opened: Vec<Opened>,
    list: *mut *mut sys::ibv_device,
}

// SAFETY: As for `Opened`: the list is libibverbs' and may be freed from any thread.
unsafe impl Send for Devices {}

static DEVICES: Mutex<Devices> = Mutex::new(Devices {
    opened: Vec::new(),
    list: core::ptr::null_mut(),
});

/// When [`with_devices`] compares the devices opened with libibverbs' list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refresh {
    /// Only before the first use.
    First,
    /// Now, as librdmacm's `rdma_get_devices` does on each call.
    Always,
}

/// `f` on the devices the application may use (those libibverbs still lists), opened on the
/// first call, and synced with libibverbs' list as `refresh` says.
fn with_devices<T>(refresh: Refresh, f: impl FnOnce(&[&Opened]) -> T) -> Result<T, c_int> {
    let mut guard = DEVICES.lock().map_err(|_| libc::EIO)?;
    if refresh == Refresh::Always || guard.list.is_null() {
        sync_with_ibverbs(&mut guard)?;
    }
    let listed: Vec<&Opened> = guard.opened.iter().filter(|o| !o.gone).collect();
    Ok(f(&listed))
}

/// Opens the devices libibverbs lists that are not open yet, and hides those it no longer
/// lists (`sync_devices_list` in rdma-core's librdmacm/cma.c).
fn sync_with_ibverbs(devices: &mut Devices) -> Result<(), c_int> {
    let mut count: c_int = 0;
    // SAFETY: `count` is valid for a write.
    let list = unsafe { sys::ibv_get_device_list(&mut count) };
    if list.is_null() {
        return Err(crate::errno::last_or(libc::ENODEV));
    }
    // SAFETY: The list has `count` entries.
    let listed = unsafe { core::slice::from_raw_parts(list, usize::try_from(count).unwrap_or(0)) };
    for o in &mut devices.opened {
        o.gone |= !listed.contains(&o.ibv_device);
    }
    for &device in listed {
        if devices.opened.iter().all(|o| o.ibv_device != device) {
            devices.opened.extend(open(device));
        }
    }
    let old = core::mem::replace(&mut devices.list, list);
    if !old.is_null() {
        // SAFETY: The previous list, from ibv_get_device_list; no one reads it any more.
        unsafe { sys::ibv_free_device_list(old) };
    }
    crate::debug!(
        "{} of {count} devices open",
        devices.opened.iter().filter(|o| !o.gone).count()
    );
    Ok(())
}

/// Opens one device, with its shared PD and limits.
fn open(device: *mut sys::ibv_device) -> Option<Opened> {
    // SAFETY: A device of a live list.
    let name = unsafe { CStr::from_ptr(sys::ibv_get_device_name(device)) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: As above.
    let context = unsafe { sys::ibv_open_device(device) };
    if context.is_null() {
        return None;
    }
    let mut attr = sys::ibv_device_attr::default();
    // SAFETY: `context` is open, `attr` ours.
    let queried = unsafe { sys::ibv_query_device(context, &mut attr) } == 0;
    // SAFETY: `context` is open.
    let pd = unsafe { sys::ibv_alloc_pd(context) };
    if !queried || pd.is_null() {
        // SAFETY: Opened above, used by nothing yet.
        unsafe { sys::ibv_close_device(context) };
        return None;
    }
    Some(Opened {
        name,
        ibv_device: device,
        gone: false,
        device: Device {
            context,
            pd,
            max_responder_resources: u8::try_from(attr.max_qp_rd_atom).unwrap_or(u8::MAX),
            max_initiator_depth: u8::try_from(attr.max_qp_init_rd_atom).unwrap_or(u8::MAX),
        },
    })
}

/// Every device's context, libibverbs' list synced first (devices added since the last call
/// are opened); `ENODEV` if there is none.
pub(crate) fn contexts() -> Result<Vec<*mut sys::ibv_context>, c_int> {
    let contexts = with_devices(Refresh::Always, |d| {
        d.iter().map(|o| o.device.context).collect::<Vec<_>>()
    })?;
    if contexts.is_empty() {
        return Err(libc::ENODEV);
    }
    Ok(contexts)
}

/// Every device's name and context, libibverbs' list synced first (the GID tables are read
/// again only when a lookup misses: a new device's GIDs are found then).
pub(crate) fn all() -> Result<Vec<(String, *mut sys::ibv_context)>, c_int> {
    with_devices(Refresh::Always, |d| {
        d.iter()
            .map(|o| (o.name.clone(), o.device.context))
            .collect()
    })
}

/// The device called `name`, libibverbs' list synced first if none is open (a device added
/// since), as librdmacm's `ucma_get_cma_device` does; `ENODEV` if none is.
pub(crate) fn by_name(name: &str) -> Result<Device, c_int> {
    let find = |d: &[&Opened]| d.iter().find(|o| o.name == name).map(|o| o.device);
    match with_devices(Refresh::First, find)? {
        Some(device) => Ok(device),
        None => with_devices(Refresh::Always, find)?.ok_or(libc::ENODEV),
    }
}
