//! Packet sequence numbers: the 24-bit PSN a connection's queue pairs start at, which the REQ
//! and the REP announce (`cepm_connect::starting_psn`, `cepm_accept::starting_psn`).

use std::io;

/// The largest PSN: PSNs are 24-bit numbers.
pub const MAX_PSN: u32 = 0x00ff_ffff;

/// A random starting PSN, as rdma_cm draws one (`cma_connect_ib`, `cma_accept_ib` in
/// `drivers/infiniband/core/cma.c`): a fixed one lets a stale packet of an earlier connection
/// on the same QPN pass for a new one's.
pub fn random_psn() -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    // SAFETY: `bytes` is valid for writes of its length; flags 0 is a blocking read of the
    // urandom source, which never fails once the pool is initialised.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(u32::from_ne_bytes(bytes) & MAX_PSN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_psn_fits_in_24_bits_and_varies() {
        let psns: Vec<u32> = (0..64).map(|_| random_psn().unwrap()).collect();
        assert!(psns.iter().all(|&p| p <= MAX_PSN));
        // 64 draws of 24 random bits are all alike with probability 2^-1512.
        assert!(psns.iter().any(|&p| p != psns[0]));
    }
}
