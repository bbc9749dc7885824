// SPDX-License-Identifier: GPL-2.0

//! The SIDR_REPs a port sent lately, so that a retried SIDR_REQ whose answer was lost gets
//! the same answer again.
//!
//! A SIDR exchange has no state once answered: the CEP that took the SIDR_REQ goes idle and
//! its owner usually destroys it at once. Linux then treats a retry as a new request
//! (`cm_sidr_req_handler`), which reaches the listener twice, or gets "unsupported" once the
//! listener is gone. cepm keeps the answer instead, by (request ID, requester), for
//! [`LIFETIME_MS`] or until [`CAPACITY`] newer answers have pushed it out. A retry asks for the
//! same service: a request with the same ID for another service is a new one.

use kernel::{
    prelude::*,
    time::{
        Instant,
        Monotonic, //
    },
};

use crate::{proto::sidr_rep::SidrRep, tables::PeerId};

/// Answers kept per port. The ring is allocated with the port, so that remembering one never
/// allocates; a lookup scans it, under the port's lock.
pub(crate) const CAPACITY: usize = 64;

/// How long an answer is kept: a requester's whole retry budget with rdma_cm's defaults
/// (CM response timeout 20, about 4.3 s, times 15 retries) is about a minute.
pub(crate) const LIFETIME_MS: i64 = 60_000;

#[derive(Clone, Copy)]
struct Answer {
    /// The request ID and the requester's GID.
    key: PeerId,
    rep: SidrRep,
    sent: Instant<Monotonic>,
}

/// A ring of the last [`CAPACITY`] answers.
///
/// # Invariants
///
/// `ring` never holds more than [`CAPACITY`] answers, nor two with the same key and service;
/// `next` is below [`CAPACITY`], and once the ring is full it is the index of the oldest
/// answer.
pub(crate) struct SidrAnswers {
    ring: KVec<Answer>,
    next: usize,
}

impl SidrAnswers {
    /// An empty ring with room for [`CAPACITY`] answers.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            ring: KVec::with_capacity(CAPACITY, GFP_KERNEL)?,
            next: 0,
        })
    }

    /// Keeps `rep`, the answer to the SIDR_REQ `key` for `rep.service_id`, in place of an
    /// older answer to the same request, or else of the oldest one.
    pub(crate) fn remember(&mut self, key: PeerId, rep: SidrRep) {
        let answer = Answer {
            key,
            rep,
            sent: Instant::now(),
        };
        let same_request = |a: &&mut Answer| a.key == key && a.rep.service_id == rep.service_id;
        if let Some(same) = self.ring.iter_mut().find(same_request) {
            *same = answer;
        } else if self.ring.len() < CAPACITY {
            // Within the capacity allocated in `new`: this cannot fail.
            let _ = self.ring.push_within_capacity(answer);
        } else if let Some(oldest) = self.ring.get_mut(self.next) {
            *oldest = answer;
            self.next = (self.next + 1) % CAPACITY;
        }
    }

    /// The answer to the SIDR_REQ `key` for `service_id`, if one was sent less than
    /// [`LIFETIME_MS`] ago.
    pub(crate) fn find(&self, key: PeerId, service_id: u64) -> Option<SidrRep> {
        self.ring
            .iter()
            .find(|a| {
                a.key == key
                    && a.rep.service_id == service_id
                    && a.sent.elapsed().as_millis() < LIFETIME_MS
            })
            .map(|a| a.rep)
    }
}
