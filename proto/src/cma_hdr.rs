//! The 36-byte `cma_hdr` that RDMA CM puts at the start of REQ and SIDR_REQ private data
//! (`struct cma_hdr` in `drivers/infiniband/core/cma.c`, written by `cma_format_hdr`).
//!
//! Layout: `cma_version` (0), `ip_version` (high nibble 4 or 6), source port (be16), then
//! 16-byte source and destination addresses. IPv4 addresses sit in the last 4 bytes of
//! their 16-byte slot with zero padding (not `::ffff:`). The destination port is not here:
//! it is the low 16 bits of the service ID.

use super::error::DecodeError;

/// Size of the header in bytes.
pub const CMA_HDR_SIZE: usize = 36;
/// Private data left for the user in a REQ after the header (`rdma_connect(3)`: 56 bytes).
pub const CMA_REQ_USER_DATA_SIZE: usize = super::req::REQ_PRIVATE_DATA_SIZE - CMA_HDR_SIZE;

/// Source and destination addresses of the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmaAddrs {
    /// IPv4 source and destination, network order.
    V4 {
        /// The active side's address.
        src: [u8; 4],
        /// The passive side's address.
        dst: [u8; 4],
    },
    /// IPv6 source and destination, network order.
    V6 {
        /// The active side's address.
        src: [u8; 16],
        /// The passive side's address.
        dst: [u8; 16],
    },
}

/// A parsed `cma_hdr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CmaHdr {
    /// The active side's source port.
    pub src_port: u16,
    /// The addresses.
    pub addrs: CmaAddrs,
}

impl CmaHdr {
    /// The 36 header bytes.
    pub fn encode(&self) -> [u8; CMA_HDR_SIZE] {
        let mut out = [0u8; CMA_HDR_SIZE];
        out[0] = 0;
        out[2..4].copy_from_slice(&self.src_port.to_be_bytes());
        match self.addrs {
            CmaAddrs::V4 { src, dst } => {
                out[1] = 0x40;
                out[16..20].copy_from_slice(&src);
                out[32..36].copy_from_slice(&dst);
            }
            CmaAddrs::V6 { src, dst } => {
                out[1] = 0x60;
                out[4..20].copy_from_slice(&src);
                out[20..36].copy_from_slice(&dst);
            }
        }
        out
    }

    /// Parses the header at the start of `pdata` as the passive `rdma_cm` does
    /// (`cma_get_ip_ver` uses only the high nibble; IPv4 takes the last 4 bytes of each slot
    /// without checking the padding, `cma_save_ip_info` and
    /// `cma_save_ip4_info` in `drivers/infiniband/core/cma.c`).
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] if `pdata` is shorter than 36 bytes,
    /// [`DecodeError::BadCmaVersion`] if the version is not 0 (Linux: REJ 28),
    /// [`DecodeError::BadIpVersion`] if the IP version is neither 4 nor 6.
    pub fn decode(pdata: &[u8]) -> Result<Self, DecodeError> {
        let h: &[u8; CMA_HDR_SIZE] = pdata
            .get(..CMA_HDR_SIZE)
            .and_then(|s| s.try_into().ok())
            .ok_or(DecodeError::Truncated(pdata.len()))?;
        if h[0] != 0 {
            return Err(DecodeError::BadCmaVersion(h[0]));
        }
        let src_port = u16::from_be_bytes([h[2], h[3]]);
        let addrs = match h[1] >> 4 {
            4 => CmaAddrs::V4 {
                src: [h[16], h[17], h[18], h[19]],
                dst: [h[32], h[33], h[34], h[35]],
            },
            6 => {
                let mut src = [0u8; 16];
                let mut dst = [0u8; 16];
                src.copy_from_slice(&h[4..20]);
                dst.copy_from_slice(&h[20..36]);
                CmaAddrs::V6 { src, dst }
            }
            _ => return Err(DecodeError::BadIpVersion(h[1])),
        };
        Ok(Self { src_port, addrs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_layout_matches_cma_format_hdr() {
        let hdr = CmaHdr {
            src_port: 0xabcd,
            addrs: CmaAddrs::V4 {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
            },
        };
        let b = hdr.encode();
        assert_eq!(&b[..4], &[0, 0x40, 0xab, 0xcd]);
        assert_eq!(&b[4..16], &[0; 12]);
        assert_eq!(&b[16..20], &[10, 0, 0, 1]);
        assert_eq!(&b[20..32], &[0; 12]);
        assert_eq!(&b[32..36], &[10, 0, 0, 2]);
        assert_eq!(CmaHdr::decode(&b), Ok(hdr));
    }

    #[test]
    fn ipv6_round_trip_and_errors() {
        let hdr = CmaHdr {
            src_port: 1,
            addrs: CmaAddrs::V6 {
                src: [1; 16],
                dst: [2; 16],
            },
        };
        let mut b = hdr.encode();
        assert_eq!(CmaHdr::decode(&b), Ok(hdr));
        assert_eq!(CmaHdr::decode(&b[..35]), Err(DecodeError::Truncated(35)));
        b[1] = 0x50;
        assert_eq!(CmaHdr::decode(&b), Err(DecodeError::BadIpVersion(0x50)));
        b[0] = 1;
        assert_eq!(CmaHdr::decode(&b), Err(DecodeError::BadCmaVersion(1)));
    }
}
