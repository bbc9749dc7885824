//! Address and route resolution in userspace, for RoCE: what the kernel's `rdma_cm` does in
//! `rdma_resolve_ip` and `cma_resolve_iboe_route`, from the routing table and neighbour cache
//! (rtnetlink, [`netlink`]) and the ports' GID tables (sysfs, [`gid_table`]), finished off the
//! caller's thread ([`pending`]).

pub(crate) mod address;
mod gid_cache;
pub(crate) mod gid_table;
pub(crate) mod neighbour;
pub(crate) mod netlink;
pub(crate) mod pending;
pub(crate) mod route;
