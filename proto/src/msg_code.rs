//! The 2-bit "which message" code in REJ (`MsgRejected`) and MRA (`MsgMRAed`).

use super::error::DecodeError;
use super::mad::AttrId;

/// Which message a REJ rejects or an MRA acknowledges (`enum cm_msg_response`,
/// `drivers/infiniband/core/cm_msgs.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageCode {
    /// The REQ (0).
    Req,
    /// The REP (1).
    Rep,
    /// Anything else, e.g. a LAP or a REJ sent outside connection setup (2).
    Other,
}

impl MessageCode {
    /// Wire value.
    pub const fn to_u8(self) -> u8 {
        match self {
            Self::Req => 0,
            Self::Rep => 1,
            Self::Other => 2,
        }
    }

    /// The code in a 2-bit field where the reserved value 3 is to be read as OTHER (a REJ's
    /// MessageRejected).
    pub const fn from_wire_or_other(code: u8) -> Self {
        match code {
            0 => Self::Req,
            1 => Self::Rep,
            _ => Self::Other,
        }
    }

    /// Parses the 2-bit wire value of message `attr`.
    ///
    /// # Errors
    ///
    /// [`DecodeError::ReservedMessageCode`] for 3.
    pub const fn from_wire(attr: AttrId, code: u8) -> Result<Self, DecodeError> {
        match code {
            0 => Ok(Self::Req),
            1 => Ok(Self::Rep),
            2 => Ok(Self::Other),
            _ => Err(DecodeError::ReservedMessageCode(attr, code)),
        }
    }
}
