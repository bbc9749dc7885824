// SPDX-License-Identifier: GPL-2.0

//! cepm: an InfiniBand/RoCE Connection Manager.
//!
//! The module registers an `ib_client`, owns the CM management class (0x07, version 2) on every
//! port of the RDMA devices it manages, and exposes `/dev/cepm` to userspace.
//!
//! Files, one concept each:
//! - [`rdma`]: the only FFI: safe wrappers over the C shim (`cepm_shim.h`);
//! - [`registry`]: the managed devices, added and removed by the `ib_client` callbacks;
//! - [`device`] and [`port`]: one managed device and its CM ports;
//! - [`cm`]: the receive path, from MAD to protocol answer;
//! - [`chardev`] and [`uapi`]: `/dev/cepm` and its ABI (`include/uapi/cepm.h`);
//! - [`proto`]: the protocol core, shared with the host tests (`proto/`).

mod chardev;
mod cm;
mod device;
mod port;
mod rdma;
mod registry;
mod uapi;

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
    pub mod mad;
    pub mod mra;
    pub mod msg_code;
    pub mod path;
    pub mod pdata;
    pub mod qp_attr;
    pub mod rej;
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

use kernel::{
    miscdevice::{
        MiscDeviceOptions,
        MiscDeviceRegistration, //
    },
    prelude::*,
};

module! {
    type: CepmModule,
    name: "cepm",
    authors: ["The cepm developers"],
    description: "InfiniBand/RoCE Connection Manager with a /dev/cepm interface",
    license: "GPL",
}

/// The loaded module.
///
/// Fields are dropped in declaration order: the `ib_client` goes first, so that every device
/// is released (and no MAD handler runs) before `/dev/cepm` and the device list go away.
#[pin_data]
struct CepmModule {
    _client: rdma::ClientRegistration,
    #[pin]
    _chardev: MiscDeviceRegistration<chardev::CepmFile>,
    _devices: registry::Devices,
}

impl kernel::InPlaceModule for CepmModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _devices: registry::Devices::new(),
            _chardev <- MiscDeviceRegistration::register(MiscDeviceOptions { name: c"cepm" }),
            // Last, so that devices only appear once everything they may need exists.
            _client: rdma::ClientRegistration::new()?,
        })
    }
}
