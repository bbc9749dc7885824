//! cepm protocol core: the InfiniBand Communication Manager (IBTA vol. 1 ch. 12) as pure code.
//!
//! - [`mad`]: the 24-byte MAD header and the CM attribute IDs.
//! - [`wire`], [`pdata`], [`path`]: bit-exact field access, private data, path blocks.
//! - One file per CM attribute ([`req`], [`mra`], [`rej`], [`rep`], [`rtu`], [`dreq`], [`drep`],
//!   [`lap`], [`apr`], [`sidr_req`], [`sidr_rep`], [`class_port_info`]) and [`cm_mad`] to
//!   validate a received MAD and dispatch on its attribute. Each attribute's fields, struct,
//!   `decode` and `encode` are generated from its wire table by [`message`]'s `cm_message!`.
//! - [`service_id`] and [`cma_hdr`]: the RDMA CM conventions carried inside CM messages.
//! - [`rej_match`]: which connection endpoint a received REJ is for.
//! - [`listen_scope`]: which of a service ID's listeners, scoped by address, takes a request.
//! - [`state`]: the connection state machine as a pure transition function.
//! - [`timing`] and [`qp_attr`]: integer-only timer math and QP attribute derivation.
//!
//! Everything depends on `core` only: no allocation, no floating point, no `unsafe`.
//! Decoding hostile bytes returns an error and never panics; all arithmetic on
//! received or caller-supplied values is checked, wrapping or saturating because the
//! kernel is built with overflow checks.
//!
//! # Layout rule (read before adding a file)
//!
//! cepm.ko compiles these very files by mounting the directory as a module:
//!
//! ```text
//! #[path = "../proto/src"]
//! pub mod proto { pub mod mad; pub mod wire; /* ... one line per file ... */ }
//! ```
//!
//! So this file holds only the crate attributes, these docs and the `pub mod` list. Every
//! other file is flat in `src/`, carries no crate-level attribute, and names its siblings
//! as `super::x`, never `crate::x`. Adding a file means adding its line to the kernel's
//! module list too.

#![no_std]
#![forbid(unsafe_code)]

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
