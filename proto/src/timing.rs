//! IBTA time units and the CM's timers, integer-only.
//!
//! IBTA expresses times as 5-bit exponents `t` meaning 4.096 µs·2^t. Linux approximates
//! that in milliseconds as `1 << max(t - 8, 0)` (`cm_convert_to_ms`,
//! `drivers/infiniband/core/cm.c`); cepm uses the same approximation for the
//! protocol timers so both sides of a connection agree on retry spacing, and offers the
//! exact value in nanoseconds for reporting. Every function here is total: exponents are
//! clamped to 31 and products saturate, so no input can overflow.

/// Largest exponent a 5-bit field holds.
pub const MAX_EXPONENT: u8 = 31;
/// Service timeout Linux advertises in every MRA (`CM_MRA_SETTING`, `cm.c`): ~68.7 s.
pub const MRA_SERVICE_TIMEOUT: u8 = 24;
/// `rdma_cm`'s CM response timeout exponent (`CMA_CM_RESPONSE_TIMEOUT`, `cma.c`).
pub const CMA_CM_RESPONSE_TIMEOUT: u8 = 20;
/// `rdma_cm`'s maximum CM retries (`CMA_MAX_CM_RETRIES`, `cma.c`).
pub const CMA_MAX_CM_RETRIES: u8 = 15;
/// `rdma_cm`'s RoCE packet lifetime exponent (`CMA_IBOE_PACKET_LIFETIME`, `cma.c`).
pub const CMA_IBOE_PACKET_LIFETIME: u8 = 16;

/// Clamps an exponent to the 5-bit range.
pub const fn clamp_exponent(t: u8) -> u8 {
    if t > MAX_EXPONENT {
        MAX_EXPONENT
    } else {
        t
    }
}

/// Exact 4.096 µs·2^t in nanoseconds (t clamped to 31: at most ~2.4 hours).
pub const fn iba_time_ns(t: u8) -> u64 {
    4096u64 << clamp_exponent(t)
}

/// 4.096 µs·2^t in microseconds, rounded down.
pub const fn iba_time_us(t: u8) -> u64 {
    iba_time_ns(t) / 1000
}

/// 4.096 µs·2^t in milliseconds, rounded up (never shorter than the IBTA time).
pub const fn iba_time_ms_ceil(t: u8) -> u64 {
    iba_time_ns(t).div_ceil(1_000_000)
}

/// Linux's millisecond approximation `1 << max(t - 8, 0)` (`cm_convert_to_ms`): t=16 → 256,
/// t=17 → 512, t=20 → 4096, t=24 → 65536.
pub const fn linux_ms(t: u8) -> u32 {
    1u32 << clamp_exponent(t).saturating_sub(8)
}

/// Smallest exponent whose IBTA time is at least `ns` (31 if none is).
pub const fn exponent_at_least_ns(ns: u64) -> u8 {
    let mut t = 0;
    while t < MAX_EXPONENT && iba_time_ns(t) < ns {
        t += 1;
    }
    t
}

/// Local ACK timeout exponent for `2·PLT + ack_delay`, Linux's approximation
/// (`cm_ack_timeout`, `cm.c`): take `max(PLT + 1, ack_delay)` and add one when
/// the other term is within 50% of it; at most 31. rxe (`ack_delay` 15) with PLT 16 → 17.
pub const fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let ack = packet_life_time as u16 + 1;
    let delay = ca_ack_delay as u16;
    let t = if ack >= delay {
        ack + (delay + 1 >= ack) as u16
    } else {
        delay + (ack + 1 >= delay) as u16
    };
    if t > MAX_EXPONENT as u16 {
        MAX_EXPONENT
    } else {
        t as u8
    }
}

/// The address vector's timeout from a path's packet lifetime: `PLT + 1`
/// (`cm_init_av_by_path`, `cm.c`), clamped to 31 (Linux does not clamp).
pub const fn av_timeout_from_packet_life_time(packet_life_time: u8) -> u8 {
    clamp_exponent(packet_life_time.saturating_add(1))
}

/// The passive side's packet lifetime: REQ LocalAckTimeout − 1, not below 0
/// (`cm_format_paths_from_req`, `cm.c`).
pub const fn passive_packet_life_time(req_local_ack_timeout: u8) -> u8 {
    req_local_ack_timeout.saturating_sub(1)
}

/// The active side's QP timeout once the REP arrives: recomputed from the REP's
/// TargetACKDelay (`cm_rep_handler`, `cm.c`).
pub const fn active_ack_timeout_after_rep(target_ack_delay: u8, av_timeout: u8) -> u8 {
    ack_timeout(target_ack_delay, av_timeout.saturating_sub(1))
}

/// A retried MAD's timer: wait `timeout_ms` for an answer, resend up to `retries` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryTimer {
    /// Time to wait for each send, in ms.
    pub timeout_ms: u32,
    /// Resends after the first send (so `retries + 1` sends in all).
    pub retries: u8,
}

impl RetryTimer {
    /// The active REQ (and, with the same values, DREQ): `2·ms(PLT) + ms(remote CM
    /// response timeout)`, `max_cm_retries` retries (`ib_send_cm_req`, `cm.c`).
    /// rdma_cm defaults on RoCE (PLT 16, timeout 20, 15 retries): 4608 ms × 16 sends ≈ 73.7 s.
    pub const fn req(
        packet_life_time: u8,
        remote_cm_response_timeout: u8,
        max_cm_retries: u8,
    ) -> Self {
        Self {
            timeout_ms: linux_ms(packet_life_time)
                .saturating_mul(2)
                .saturating_add(linux_ms(remote_cm_response_timeout)),
            retries: max_cm_retries,
        }
    }

    /// The passive REP: `ms(REQ.LocalCMResponseTimeout)`, REQ.MaxCMRetries retries
    /// (`cm_req_handler`, `cm.c`). Defaults: 4096 ms × 16 ≈ 65.5 s.
    pub const fn rep(req_local_cm_response_timeout: u8, req_max_cm_retries: u8) -> Self {
        Self {
            timeout_ms: linux_ms(req_local_cm_response_timeout),
            retries: req_max_cm_retries,
        }
    }

    /// The timeout after an MRA: `ms(service timeout) + ms(av timeout)` (`cm_mra_handler`,
    /// `cm.c`); retries are unchanged. Linux's MRA (24) with timeout 17 gives 66 048 ms.
    pub const fn after_mra(self, service_timeout: u8, av_timeout: u8) -> Self {
        Self {
            timeout_ms: linux_ms(service_timeout).saturating_add(linux_ms(av_timeout)),
            retries: self.retries,
        }
    }

    /// Worst-case time until the final timeout: `timeout_ms · (retries + 1)`.
    pub const fn budget_ms(self) -> u64 {
        (self.timeout_ms as u64).saturating_mul(self.retries as u64 + 1)
    }

    /// How long Linux's destroy waits per round before warning:
    /// `retries · timeout_ms · 5 / 4` (`cm_destroy_id`, `cm.c`).
    pub const fn destroy_wait_ms(self) -> u64 {
        (self.retries as u64)
            .saturating_mul(self.timeout_ms as u64)
            .saturating_mul(5)
            / 4
    }
}

/// Timewait duration: `ms(av.timeout)`, the QP's local ACK timeout (`cm_enter_timewait`,
/// `cm.c`). 512 ms with rxe defaults (timeout 17).
pub const fn timewait_ms(av_timeout: u8) -> u32 {
    linux_ms(av_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        assert_eq!(linux_ms(0), 1);
        assert_eq!(linux_ms(16), 256);
        assert_eq!(linux_ms(17), 512);
        assert_eq!(linux_ms(20), 4096);
        assert_eq!(linux_ms(24), 65536);
        assert_eq!(linux_ms(255), 1 << 23);
        assert_eq!(iba_time_ns(0), 4096);
        assert_eq!(iba_time_us(17), 536_870);
        assert_eq!(iba_time_ms_ceil(17), 537);
        assert_eq!(ack_timeout(15, 16), 17);
        assert_eq!(RetryTimer::req(16, 20, 15).timeout_ms, 4608);
        assert_eq!(RetryTimer::req(16, 20, 15).budget_ms(), 73_728);
        assert_eq!(RetryTimer::rep(20, 15).budget_ms(), 65_536);
        assert_eq!(RetryTimer::rep(20, 15).after_mra(24, 17).timeout_ms, 66_048);
        assert_eq!(timewait_ms(17), 512);
        assert_eq!(exponent_at_least_ns(4096), 0);
        assert_eq!(exponent_at_least_ns(4097), 1);
        assert_eq!(exponent_at_least_ns(u64::MAX), 31);
    }
}
