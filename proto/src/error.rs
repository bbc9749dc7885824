//! Errors of the CM wire codec.
//!
//! The kernel module maps every variant to `-EINVAL` (encode) or to a dropped MAD plus a
//! counter (decode); the variants exist so tests and traces can say *which* rule fired.

use core::fmt;

use super::mad::AttrId;

/// Why received bytes are not a CM MAD we accept.
///
/// Returned by every `decode` in this crate; decoding never panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer is shorter than the 256-byte MAD (or the 24-byte header); holds the length.
    Truncated(usize),
    /// MAD base version is not 1.
    BadBaseVersion(u8),
    /// Management class is not the CM class 0x07.
    NotCmClass(u8),
    /// CM class version is not 2.
    BadClassVersion(u8),
    /// Method is not allowed for this attribute (SEND for CM messages, Get/GetResp for
    /// ClassPortInfo).
    BadMethod(u8),
    /// Attribute ID is not one of the 12 CM attributes.
    UnknownAttribute(u16),
    /// REQ transport service type / extended transport type pair that is reserved or that
    /// Linux does not implement (RD, or type 3 with an extended type other than XRC).
    ReservedTransport {
        /// REQ TransportServiceType (2 bits).
        transport: u8,
        /// REQ ExtendedTransportType (3 bits).
        extended: u8,
    },
    /// A QP number that must identify a real QP is 0.
    ZeroQpn(AttrId),
    /// `RejInfoLen`, `AddlInfoLen` or SIDR `info_len` exceeds the 72-byte field.
    InfoTooLong(AttrId, u8),
    /// `MsgRejected` / `MsgMRAed` holds the reserved value 3.
    ReservedMessageCode(AttrId, u8),
    /// `cma_hdr.cma_version` is not 0.
    BadCmaVersion(u8),
    /// `cma_hdr.ip_version` high nibble is neither 4 nor 6.
    BadIpVersion(u8),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated(len) => write!(f, "truncated MAD: {len} bytes"),
            Self::BadBaseVersion(v) => write!(f, "MAD base version {v}, want 1"),
            Self::NotCmClass(c) => write!(f, "management class {c:#04x}, want 0x07"),
            Self::BadClassVersion(v) => write!(f, "CM class version {v}, want 2"),
            Self::BadMethod(m) => write!(f, "method {m:#04x} not allowed"),
            Self::UnknownAttribute(a) => write!(f, "unknown CM attribute {a:#06x}"),
            Self::ReservedTransport {
                transport,
                extended,
            } => write!(f, "reserved transport type {transport}/{extended}"),
            Self::ZeroQpn(a) => write!(f, "{}: QPN 0", a.name()),
            Self::InfoTooLong(a, len) => write!(f, "{}: info length {len} > 72", a.name()),
            Self::ReservedMessageCode(a, c) => write!(f, "{}: reserved message code {c}", a.name()),
            Self::BadCmaVersion(v) => write!(f, "cma_hdr version {v}, want 0"),
            Self::BadIpVersion(v) => write!(f, "cma_hdr ip_version {v:#04x}"),
        }
    }
}

/// Why a message could not be encoded: a caller-supplied value does not fit its field.
///
/// Encoders check every value instead of silently masking it, so a bad ioctl argument
/// becomes `-EINVAL` rather than a different message on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// A value is wider than its field; holds the field name.
    FieldOutOfRange(&'static str),
    /// Private data or additional information longer than the message allows.
    TooLong {
        /// Bytes supplied.
        len: usize,
        /// Bytes the field holds.
        max: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FieldOutOfRange(name) => write!(f, "value does not fit field {name}"),
            Self::TooLong { len, max } => write!(f, "{len} bytes supplied, at most {max} allowed"),
        }
    }
}
