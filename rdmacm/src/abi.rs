//! What the module offers, by its ABI version (`CEPM_ABI_VERSION`, docs/abi.md): the library
//! keys each later feature on it, since an older module serves the grown structs with the new
//! fields ignored or refused.

use std::sync::OnceLock;

use cepm::Cepm;

/// The module's ABI version, asked once a process (0 if the query fails).
fn version(cepm: &Cepm) -> u32 {
    static VERSION: OnceLock<u32> = OnceLock::new();
    *VERSION.get_or_init(|| cepm.query().map_or(0, |q| q.abi_version))
}

/// Whether the module chooses the passive side's receive PSN when a request is claimed, so
/// that `rdma_init_qp_attr` gives RTR before `rdma_accept` (ABI 6).
pub(crate) fn chooses_psn(cepm: &Cepm) -> bool {
    version(cepm) >= 6
}

/// Whether the module reserves ports at bind (`CEPM_IOC_BIND`) and scopes listens by address,
/// giving each request to the listener of its destination (ABI 7).
pub(crate) fn binds_ports(cepm: &Cepm) -> bool {
    version(cepm) >= 7
}

/// Whether the module carries ECE in REQ and REP (ABI 7).
pub(crate) fn carries_ece(cepm: &Cepm) -> bool {
    version(cepm) >= 7
}

/// Whether the module sends and reports the end-to-end flow control bit, reports the
/// connection parameters of a REP and gives a REQ's path (ABI 8).
pub(crate) fn carries_conn_params(cepm: &Cepm) -> bool {
    version(cepm) >= 8
}
