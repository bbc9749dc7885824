//! The RDMA devices, each opened once for the life of the process as librdmacm opens them:
//! the IDs bound to a device share its verbs context and one protection domain, and the
//! connection parameters are bounded by its limits.

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
    device: Device,
}

// SAFETY: The verbs objects may be used from any thread (libibverbs is thread-safe).
unsafe impl Send for Opened {}

static DEVICES: Mutex<Option<Vec<Opened>>> = Mutex::new(None);

/// Opens every device on the first call.
fn with_devices<T>(f: impl FnOnce(&[Opened]) -> T) -> Result<T, c_int> {
    let mut guard = DEVICES.lock().map_err(|_| libc::EIO)?;
    if guard.is_none() {
        let mut count: c_int = 0;
        // SAFETY: `count` is valid for a write.
        let list = unsafe { sys::ibv_get_device_list(&mut count) };
        if list.is_null() {
            return Err(crate::errno::last_or(libc::ENODEV));
        }
        let mut opened = Vec::new();
        for i in 0..usize::try_from(count).unwrap_or(0) {
            // SAFETY: The list has `count` entries.
            let device = unsafe { *list.add(i) };
            if let Some(o) = open(device) {
                opened.push(o);
            }
        }
        // SAFETY: The list came from ibv_get_device_list; the contexts outlive it.
        unsafe { sys::ibv_free_device_list(list) };
        crate::debug!("{} of {count} devices opened", opened.len());
        *guard = Some(opened);
    }
    Ok(f(guard.as_deref().unwrap_or_default()))
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
        device: Device {
            context,
            pd,
            max_responder_resources: u8::try_from(attr.max_qp_rd_atom).unwrap_or(u8::MAX),
            max_initiator_depth: u8::try_from(attr.max_qp_init_rd_atom).unwrap_or(u8::MAX),
        },
    })
}

/// Every device's context, in the order libibverbs lists them; `ENODEV` if there is none.
pub(crate) fn contexts() -> Result<Vec<*mut sys::ibv_context>, c_int> {
    let contexts = with_devices(|d| d.iter().map(|o| o.device.context).collect::<Vec<_>>())?;
    if contexts.is_empty() {
        return Err(libc::ENODEV);
    }
    Ok(contexts)
}

/// Every device's name and context.
pub(crate) fn all() -> Result<Vec<(String, *mut sys::ibv_context)>, c_int> {
    with_devices(|d| {
        d.iter()
            .map(|o| (o.name.clone(), o.device.context))
            .collect()
    })
}

/// The device called `name`; `ENODEV` if none is.
pub(crate) fn by_name(name: &str) -> Result<Device, c_int> {
    with_devices(|d| d.iter().find(|o| o.name == name).map(|o| o.device))?.ok_or(libc::ENODEV)
}
