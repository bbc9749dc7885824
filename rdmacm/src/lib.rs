//! librdmacm's C API over `/dev/cepm`: a drop-in `librdmacm.so.1` with which unmodified
//! rdma_cm applications (rping, ucmatose, perftest, ...) use cepm as their connection manager,
//! as OpenFabrics Windows ran librdmacm in userspace over its CM-only kernel interface.
//!
//! [`api`] holds every exported function, one file per group of librdmacm's API; the C types
//! come from `<rdma/rdma_cma.h>` through bindgen ([`sys`]). An event channel is a [`channel`]
//! (an open `/dev/cepm`), an `rdma_cm_id` an [`id`] (a CEP in it), and [`event`] makes
//! librdmacm's events from cepm's. docs/rdmacm.md lists what is supported and how it differs
//! from librdmacm.

pub(crate) mod abi;
pub mod api;
pub(crate) mod channel;
pub(crate) mod debug;
pub(crate) mod device;
mod errno;
pub(crate) mod event;
pub mod event_str;
pub(crate) mod id;
pub(crate) mod live;
pub(crate) mod multicast;
pub(crate) mod qp;
mod resolve;
pub(crate) mod route;
pub(crate) mod sync;
pub mod sys;
pub(crate) mod ud;
pub(crate) mod verbs_ex;
mod wakeup;
