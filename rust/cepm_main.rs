// SPDX-License-Identifier: GPL-2.0

//! cepm: an InfiniBand/RoCE Connection Manager.
//!
//! The module registers an `ib_client`, owns the CM management class (0x07, version 2) on every
//! port of the RDMA devices it manages, and exposes `/dev/cepm` to userspace.
//!
//! Files, one concept each:
//! - [`shim`]: the only FFI: safe wrappers over the C shim (`cepm_shim.h`), with its children
//!   `shim/rdma.rs` (RDMA abstractions), `shim/glue.rs` (the entry points C calls) and
//!   `shim/fault.rs` (fault points for tests);
//! - [`context`]: the CM, which owns everything shared between connections;
//! - [`devices`]: the managed devices, added and removed by the `ib_client` callbacks;
//! - [`device`] and [`port`]: one managed device and its CM ports;
//! - [`recv`]: the receive path (Linux's `cm_recv_handler`), from MAD to CEP or protocol
//!   answer;
//! - [`cep`] and [`tables`]: connection endpoints and how they are found, in tables split
//!   into [`sharded`] locks;
//! - [`file`] and [`uapi`]: an open `/dev/cepm` and its ABI (`include/uapi/cepm.h`);
//! - [`users`]: who a file belongs to, and what each file and user may hold;
//! - [`monitor`]: the files that get a copy of every event (`cepmctl events`);
//! - [`proto`]: the protocol core, shared with the host tests (`proto/`).

mod cep;
mod context;
mod device;
mod devices;
mod file;
mod monitor;
mod port;
mod ports;
mod recv;
mod sharded;
mod shim;
mod tables;
mod uapi;
mod users;

/// The protocol core: `core`-only code that the host also tests (see `proto/src/lib.rs`).
#[path = "../proto/src"]
pub mod proto {
    pub mod apr;
    pub mod class_port_info;
    pub mod cm_mad;
    pub mod cma_hdr;
    pub mod drep;
    pub mod dreq;
    pub mod error;
    pub mod lap;
    pub mod listen_scope;
    pub mod mad;
    pub mod message;
    pub mod mra;
    pub mod msg_code;
    pub mod path;
    pub mod pdata;
    pub mod port_rules;
    pub mod qp_attr;
    pub mod rej;
    pub mod rej_match;
    pub mod rep;
    pub mod req;
    pub mod rtu;
    pub mod service_id;
    pub mod sidr_rep;
    pub mod sidr_req;
    pub mod state;
    pub mod timing;
    pub mod wire;
}

use kernel::prelude::*;

module! {
    type: CepmModule,
    name: "cepm",
    authors: ["The cepm developers"],
    description: "InfiniBand/RoCE Connection Manager with a /dev/cepm interface",
    license: "GPL",
}

/// The loaded module.
///
/// Fields are dropped in declaration order, the reverse of init's: `/dev/cepm` goes first,
/// then the `ib_client`, so that every device is released (and no MAD handler runs) before
/// the device list and the CEP tables go away. The debugfs directory, whose `listen_shards`
/// holds a reference to the CM, goes before the module's own reference, which must be the
/// last. No file can be open at unload (open files pin the module), so no CEP exists by then.
struct CepmModule {
    _chardev: shim::CmRegistration,
    _client: shim::CmRegistration,
    _faults: shim::FaultInjection,
    _cm: context::ModuleCm,
}

impl kernel::Module for CepmModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let cm = context::Cm::new()?;
        let faults = shim::FaultInjection::new(cm.clone());
        InitStep::Client.inject_failure()?;
        let client = shim::CmRegistration::client(cm.clone())?;
        // Last: once it exists, userspace can open it and pin the module, so nothing after
        // it may fail.
        InitStep::Chardev.inject_failure()?;
        let chardev = shim::CmRegistration::chardev(cm.clone())?;
        Ok(Self {
            _chardev: chardev,
            _client: client,
            _faults: faults,
            _cm: context::ModuleCm::new(cm),
        })
    }
}

/// The steps of module init that can fail, numbered as the `inject_init_failure` parameter
/// names them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InitStep {
    Client = 1,
    Chardev = 2,
}

impl InitStep {
    /// Fails with `ENOMEM` if the `inject_init_failure` parameter names this step, so that a
    /// test can reach init's unwinding (as i915's `inject_probe_failure` does).
    fn inject_failure(self) -> Result {
        if shim::params().inject_init_failure == self as u32 {
            pr_info!("injected failure of init step {}\n", self as u32);
            return Err(ENOMEM);
        }
        Ok(())
    }
}
