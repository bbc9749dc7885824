// SPDX-License-Identifier: GPL-2.0

//! The RDMA devices cepm manages.
//!
//! The `ib_client` callbacks add and remove devices; `/dev/cepm` reads the list. Neither is a
//! hot path (MADs reach their port through the agent's context, not through this list), so one
//! mutex is enough.

use core::ffi::c_void;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::{
    context::Cm,
    device::CmDevice,
    shim::{
        self,
        DeviceName,
        IbDevice,
        Net, //
    },
    uapi, //
};

/// The managed devices, owned by the CM's [`crate::context::Cm`].
#[pin_data]
pub(crate) struct Devices {
    #[pin]
    list: Mutex<KVec<KBox<CmDevice>>>,
}

/// Whether `name` (NUL-padded) is in `list`, comma-separated names; an empty list selects all.
fn selected(list: &[u8], name: &[u8]) -> bool {
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let mut entries = list
        .split(|&b| b == b',')
        .map(|e| e.trim_ascii())
        .filter(|e| !e.is_empty())
        .peekable();
    entries.peek().is_none() || entries.any(|e| e == name)
}

impl Devices {
    /// No device yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            list <- new_mutex!(KVec::new(), "Devices::list"),
        })
    }

    /// Takes `device`, called `name`, under management for `cm` (which owns `self`): registers
    /// its CM agents and lists it. Devices not named in the `devices` parameter are declined
    /// (`EOPNOTSUPP`), which leaves them to `ib_cm`.
    pub(crate) fn add_device(&self, cm: &Arc<Cm>, device: IbDevice, name: DeviceName) -> Result {
        if !selected(shim::devices_param().to_bytes(), &name) {
            let shown = name.split(|&b| b == 0).next().unwrap_or_default();
            pr_info!(
                "{}: not in cepm.devices; left to other CMs\n",
                kernel::str::BStr::from_bytes(shown)
            );
            return Err(EOPNOTSUPP);
        }
        // Agent registration sleeps, so it happens before the device is listed.
        let device = KBox::new(CmDevice::new(cm, device, name)?, GFP_KERNEL)?;
        // Declared after `device`, the guard goes first: a device that cannot be listed is
        // released (its agents unregistered, which may wait for deferred MADs) after the
        // unlock.
        let mut devices = self.list.lock();
        if shim::fault_fail_device_list() {
            return Err(ENOMEM);
        }
        devices.reserve(1, GFP_KERNEL)?;
        // The room is there: this push allocates nothing and cannot fail.
        devices.push(device, GFP_KERNEL)?;
        Ok(())
    }

    /// Releases the device whose C pointer is `device`; no MAD handler for it runs afterwards.
    pub(crate) fn remove_device(&self, device: *mut c_void) {
        let removed = {
            let mut devices = self.list.lock();
            let found = devices.iter().position(|d| d.ib().is(device));
            found.and_then(|i| devices.remove(i).ok())
        };
        // Unregistering the agents waits for running handlers, so do it outside the lock.
        drop(removed);
    }

    /// The device `device` is now called `name` (the `rename` callback).
    pub(crate) fn rename_device(&self, device: &IbDevice, name: DeviceName) {
        let mut devices = self.list.lock();
        if let Some(managed) = devices
            .iter_mut()
            .find(|d| d.ib().is(device.as_ptr().cast()))
        {
            managed.rename(name);
        }
    }

    /// How many devices are managed.
    pub(crate) fn count(&self) -> usize {
        self.list.lock().len()
    }

    /// The managed port `num` of the device named `name` (NUL-padded), if files of `net`
    /// may use the device.
    pub(crate) fn find_port(
        &self,
        name: &[u8],
        num: u32,
        net: &Net,
    ) -> Option<Arc<crate::port::CmPort>> {
        let devices = self.list.lock();
        devices
            .iter()
            .filter(|d| d.usable_in(net))
            .find_map(|d| d.port(name, num))
    }

    /// A snapshot of every managed port that files of `net` may use, in the ABI's format.
    pub(crate) fn port_infos(&self, net: &Net) -> Result<KVec<uapi::cepm_port_info>> {
        let devices = self.list.lock();
        let mut infos = KVec::new();
        for device in devices.iter().filter(|d| d.usable_in(net)) {
            device.port_infos(&mut infos)?;
        }
        Ok(infos)
    }
}
