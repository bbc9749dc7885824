//! librdmacm's C API over `/dev/cepm`: a drop-in `librdmacm.so.1` with which unmodified
//! rdma_cm applications (rping, ucmatose, perftest, ...) use cepm as their connection manager,
//! as OpenFabrics Windows ran librdmacm in userspace over its CM-only kernel interface.
//!
//! [`api`] holds every exported function, one file per group of librdmacm's API; the C types
//! come from `<rdma/rdma_cma.h>` through bindgen ([`sys`]). docs/rdmacm.md lists what is
//! supported and how it differs from librdmacm.

pub mod api;
mod errno;
pub mod event_str;
mod resolve;
pub mod sys;
