// SPDX-License-Identifier: GPL-2.0

//! The CM: one context object that owns everything the module shares between connections,
//! as `struct ib_cm` does in drivers/infiniband/core/cm.c and `Context` in Rust Binder.
//!
//! The module holds it, and so does everything that may outlive a call into the module: the
//! `ib_client` and `/dev/cepm` registrations (for their callbacks), the debugfs directory (for
//! `listen_shards`), each managed port (for its MAD handlers), each open file and each CEP.
//! No other state is global, apart from the C shim's test knobs in debugfs.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    devices::Devices,
    monitor::Monitors,
    ports::Ports,
    shim::Workqueue,
    tables::Tables,
    users::Users, //
};

/// The connection manager.
///
/// # Invariants
///
/// When the last reference goes, no CEP, file or device is left: each holds a reference.
#[pin_data]
pub(crate) struct Cm {
    /// Where timewait ends. Every CEP's destroy cancels its own work, and dropping the queue
    /// (first of the fields, at unload) drains whatever is left, so no work outlives the
    /// module.
    pub(crate) workqueue: Workqueue,
    /// Comm ID, peer and listener lookups.
    #[pin]
    pub(crate) tables: Tables,
    /// The RDMA devices under management.
    #[pin]
    pub(crate) devices: Devices,
    /// The files that watch every CEP's events (`cepmctl events`).
    #[pin]
    pub(crate) monitors: Monitors,
    /// The users with a file open, and what their files hold together.
    #[pin]
    pub(crate) users: Users,
    /// The ports of rdma_cm's port spaces that CEPs hold (`CEPM_IOC_BIND`).
    #[pin]
    pub(crate) ports: Ports,
}

impl Cm {
    /// An empty CM: no device, no CEP, no listener.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                workqueue: Workqueue::new(c"cepm")?,
                tables <- Tables::new(),
                devices <- Devices::new(),
                monitors <- Monitors::new(),
                users <- Users::new(),
                ports <- Ports::new(),
            }),
            GFP_KERNEL,
        )
    }
}

/// The module's reference to the CM, dropped last at unload.
///
/// By then `/dev/cepm`, the `ib_client` and the debugfs directory are gone, and with them
/// every file, device and CEP (each held a reference), so this is the last reference and the
/// CM goes here, in `rmmod`'s context, while the module's code is still there. The tables,
/// device list and monitor list are then empty by construction: their entries hold references
/// too. A reference left elsewhere is a bug, which this reports with what still holds one (the
/// selftests' log check fails on it).
pub(crate) struct ModuleCm(Option<Arc<Cm>>);

impl ModuleCm {
    pub(crate) fn new(cm: Arc<Cm>) -> Self {
        Self(Some(cm))
    }
}

impl Drop for ModuleCm {
    fn drop(&mut self) {
        let Some(cm) = self.0.take() else {
            return;
        };
        let (ceps, devices, monitors, users, ports) = (
            cm.tables.count_local(),
            cm.devices.count(),
            cm.monitors.count(),
            cm.users.count(),
            cm.ports.count(),
        );
        if Arc::into_unique_or_drop(cm).is_none() {
            pr_err!(
                "the CM is still referenced at unload: {} CEPs, {} devices, {} monitors, {} users, {} ports\n",
                ceps,
                devices,
                monitors,
                users,
                ports
            );
            kernel::warn_on!(true);
        }
    }
}
