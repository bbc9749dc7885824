// SPDX-License-Identifier: GPL-2.0

//! One port on which cepm owns the CM class, and what arrives there.

use kernel::sync::atomic::{
    Atomic,
    Relaxed, //
};

use crate::{
    proto::mad::MadHeader,
    rdma::DeviceName,
    uapi, //
};

/// Number of per-attribute counters: every CM attribute ID is below this.
const ATTR_SLOTS: usize = uapi::CEPM_ATTR_SLOTS as usize;

/// Counts of received CM MADs. Relaxed atomics: each is an independent statistic.
struct RxCounters {
    /// Indexed by attribute ID.
    by_attr: [Atomic<u64>; ATTR_SLOTS],
    /// Attribute ID at or above [`ATTR_SLOTS`].
    other_attr: Atomic<u64>,
    /// Too short to hold a MAD header.
    malformed: Atomic<u64>,
}

/// A CM port of a managed device.
pub(crate) struct CmPort {
    num: u32,
    roce: bool,
    rx: RxCounters,
}

impl CmPort {
    /// A port with all counters at zero.
    pub(crate) fn new(num: u32, roce: bool) -> Self {
        Self {
            num,
            roce,
            rx: RxCounters {
                by_attr: [const { Atomic::new(0) }; ATTR_SLOTS],
                other_attr: Atomic::new(0),
                malformed: Atomic::new(0),
            },
        }
    }

    /// The port number on its device.
    pub(crate) fn num(&self) -> u32 {
        self.num
    }

    /// Called by the MAD agent for every MAD it receives.
    pub(crate) fn mad_received(&self, mad: &[u8]) {
        let counter = match MadHeader::decode(mad) {
            Ok(hdr) => self.rx.by_attr.get(usize::from(hdr.attr_id)).unwrap_or(&self.rx.other_attr),
            Err(_) => &self.rx.malformed,
        };
        counter.add(1, Relaxed);
    }

    /// The port's description and counters in the ABI's format.
    pub(crate) fn info(&self, device_name: &DeviceName) -> uapi::cepm_port_info {
        let mut info: uapi::cepm_port_info = pin_init::zeroed();
        for (dst, src) in info.dev_name.iter_mut().zip(device_name.iter()) {
            *dst = *src;
        }
        info.port_num = self.num;
        info.flags = if self.roce { uapi::CEPM_PORT_ROCE } else { 0 };
        for (dst, src) in info.rx_by_attr.iter_mut().zip(self.rx.by_attr.iter()) {
            *dst = src.load(Relaxed);
        }
        info.rx_other_attr = self.rx.other_attr.load(Relaxed);
        info.rx_malformed = self.rx.malformed.load(Relaxed);
        info
    }
}
