//! Userspace API of cepm, the InfiniBand/RoCE connection manager kernel module.
//!
//! cepm runs the IBTA connection protocol (REQ, REP, RTU, DREQ, ... and SIDR) in the kernel and
//! hands each process its connection endpoints (CEPs) through the character device
//! `/dev/cepm`. This crate wraps that device:
//!
//! - [`Cepm`] is an open `/dev/cepm`; its methods are the device's calls:
//!   - [`Cepm::query`], the managed ports and their counters ([`PortInfo`]);
//!   - the [`cep`] calls, on connection endpoints: create, listen, claim a REQ
//!     ([`cep::ReqInfo`]), connect, accept, reject, disconnect, the QP attributes of each
//!     transition, and a CEP's state ([`cep::CepInfo`]);
//!   - the [`event`] calls: the next event of the file's CEPs ([`event::Event`]), or a
//!     monitor's record of every CEP's ([`event::TraceRecord`]);
//! - [`sys`] is the ABI itself, generated from `include/uapi/cepm.h`, for the arguments that
//!   go to the kernel as they are ([`sys::cepm_connect`], [`sys::cepm_accept`], ...);
//! - [`device_name`] converts RDMA device names to and from the ABI's fixed fields, and
//!   [`psn`] draws starting PSNs.
//!
//! It moves no data: the QP is the caller's, created through libibverbs and moved through its
//! states with the attributes [`Cepm::qp_attr`] returns. `cepmctl` and cepm's librdmacm are
//! built on it; `examples/cm_only_server.rs` is a small server that accepts connections
//! without a QP.
//!
//! # Example
//!
//! A listener that claims one REQ and rejects it:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use cepm::{sys, Cepm};
//!
//! fn main() -> std::io::Result<()> {
//!     let cepm = Cepm::open()?;
//!     let listener = cepm.create(0)?;
//!     cepm.listen(listener, 0x0000_0000_0106_4e99, u64::MAX)?;
//!     let event = cepm.expect_event(Duration::from_secs(10))?;
//!     if event.kind == sys::CEPM_EVENT_REQ_RECEIVED {
//!         let (handle, req) = cepm.get_request(listener, 1)?;
//!         println!("REQ from QPN {:#x} for service {:#x}", req.remote_qpn, req.service_id);
//!         cepm.reject(handle, sys::CEPM_REJ_CONSUMER_DEFINED as u16, b"", b"")?;
//!         cepm.destroy(handle)?;
//!     }
//!     cepm.destroy(listener)?;
//!     Ok(())
//! }
//! ```

pub mod cep;
pub mod device_name;
pub mod event;
mod handle;
mod port;
pub mod psn;
pub mod sys;

pub use cepm_proto::mad::AttrId;
pub use handle::{Cepm, DEVICE_PATH};
pub use port::{PortInfo, Query, ATTR_SLOTS};
