//! The exported C API, grouped as librdmacm's man pages group it. Every function keeps
//! librdmacm's conventions: -1 (or NULL) with `errno` set on failure.
//!
//! An ID an application passes must not be destroyed by another thread during the call; that
//! is the whole of the `# Safety` rule for IDs. A channel may be: each call holds the channel it
//! was given until it returns ([`crate::live::Call`]), and a destroyed channel takes no new ID
//! (`EINVAL`). Any pointer that is not a live
//! ID or channel of this library (NULL, one destroyed already, one read from freed memory) is
//! turned away with `EINVAL` before it is read ([`crate::live`]), where librdmacm reads through it.

pub mod addrinfo;
pub mod channel;
pub mod connection;
pub mod ece;
pub mod endpoints;
pub mod ids;
pub mod migrate;
pub mod multicast;
pub mod qp;
pub mod query;
pub mod srq;
pub mod unsupported;
pub mod user_event;
