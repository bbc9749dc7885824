//! The exported C API, grouped as librdmacm's man pages group it. Every function keeps
//! librdmacm's conventions: -1 (or NULL) with `errno` set on failure.

pub mod addrinfo;
pub mod channel;
pub mod connection;
pub mod endpoints;
pub mod ids;
pub mod migrate;
pub mod qp;
pub mod query;
pub mod srq;
pub mod unsupported;
