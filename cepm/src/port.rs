//! The ports cepm manages, with their counters (`CEPM_IOC_QUERY`).

use std::io;

use cepm_proto::mad::AttrId;

use crate::{device_name, sys, Cepm};

/// Number of per-attribute counters each way (received, posted): indexed by attribute ID.
pub const ATTR_SLOTS: usize = sys::CEPM_ATTR_SLOTS as usize;

/// One port on which cepm owns the CM class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// RDMA device name, e.g. `rxe0`.
    pub device: String,
    /// Port number on the device.
    pub port: u32,
    /// RoCE link layer (otherwise InfiniBand).
    pub roce: bool,
    /// Received CM MADs, indexed by attribute ID.
    pub rx_by_attr: [u64; ATTR_SLOTS],
    /// Received CM MADs whose attribute ID is at least [`ATTR_SLOTS`].
    pub rx_other_attr: u64,
    /// Received MADs shorter than a whole MAD (256 bytes): no header, or cut short.
    pub rx_malformed: u64,
    /// Received whole MADs that were not valid CM messages.
    pub rx_invalid: u64,
    /// Received duplicates of messages already handled.
    pub rx_duplicates: u64,
    /// CM MADs posted, indexed by attribute ID.
    pub tx_by_attr: [u64; ATTR_SLOTS],
    /// Sends that could not be posted or failed.
    pub tx_errors: u64,
}

impl PortInfo {
    /// Received MADs with attribute `attr`.
    pub fn rx(&self, attr: AttrId) -> u64 {
        self.rx_by_attr
            .get(usize::from(attr.to_u16()))
            .copied()
            .unwrap_or(0)
    }

    /// Posted MADs with attribute `attr`.
    pub fn tx(&self, attr: AttrId) -> u64 {
        self.tx_by_attr
            .get(usize::from(attr.to_u16()))
            .copied()
            .unwrap_or(0)
    }

    fn from_sys(raw: &sys::cepm_port_info) -> Self {
        Self {
            device: device_name::decode(&raw.dev_name),
            port: raw.port_num,
            roce: raw.flags & sys::CEPM_PORT_ROCE != 0,
            rx_by_attr: raw.rx_by_attr,
            rx_other_attr: raw.rx_other_attr,
            rx_malformed: raw.rx_malformed,
            rx_invalid: raw.rx_invalid,
            rx_duplicates: raw.rx_duplicates,
            tx_by_attr: raw.tx_by_attr,
            tx_errors: raw.tx_errors,
        }
    }
}

/// What `CEPM_IOC_QUERY` reports.
#[derive(Clone, Debug)]
pub struct Query {
    /// The module's ABI version ([`sys::CEPM_ABI_VERSION`] when it matches this crate).
    pub abi_version: u32,
    /// The managed ports.
    pub ports: Vec<PortInfo>,
    /// Connection endpoints alive in the module (all processes).
    pub num_ceps: u32,
}

impl Cepm {
    /// One `CEPM_IOC_QUERY` call with room for `capacity` ports.
    fn query_once(
        &self,
        capacity: usize,
    ) -> io::Result<(sys::cepm_query, Vec<sys::cepm_port_info>)> {
        let mut ports = vec![sys::cepm_port_info::default(); capacity];
        let mut q = sys::cepm_query {
            port_capacity: u32::try_from(capacity)
                .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
            ports: if capacity == 0 {
                0
            } else {
                ports.as_mut_ptr() as u64
            },
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_QUERY, &mut q)?;
        ports.truncate((q.num_ports as usize).min(capacity));
        Ok((q, ports))
    }

    /// The ABI version and every managed port with its counters.
    pub fn query(&self) -> io::Result<Query> {
        let mut capacity = 0;
        loop {
            let (q, ports) = self.query_once(capacity)?;
            // Ports can come and go between calls: retry until the answer fits.
            if q.num_ports as usize <= capacity {
                return Ok(Query {
                    abi_version: q.abi_version,
                    ports: ports.iter().map(PortInfo::from_sys).collect(),
                    num_ceps: q.num_ceps,
                });
            }
            capacity = q.num_ports as usize;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_structs_have_the_sizes_the_kernel_asserts() {
        assert_eq!(std::mem::size_of::<sys::cepm_query>(), 32);
        assert_eq!(
            std::mem::size_of::<sys::cepm_port_info>(),
            64 + 4 + 4 + 8 * 32 + 8 + 8 + 8 + 8 + 8 * 32 + 8
        );
    }

    #[test]
    fn every_cm_attribute_has_a_counter_slot() {
        for attr in AttrId::ALL {
            assert!(usize::from(attr.to_u16()) < ATTR_SLOTS, "{}", attr.name());
        }
    }
}
