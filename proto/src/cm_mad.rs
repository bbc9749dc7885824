//! A whole CM MAD: header validation and dispatch to the typed messages.

use super::apr::Apr;
use super::class_port_info::ClassPortInfo;
use super::drep::Drep;
use super::dreq::Dreq;
use super::error::{DecodeError, EncodeError};
use super::lap::Lap;
use super::mad::{AttrId, MadHeader, MAD_SIZE};
use super::mra::Mra;
use super::rej::Rej;
use super::rep::Rep;
use super::req::Req;
use super::rtu::Rtu;
use super::sidr_rep::SidrRep;
use super::sidr_req::SidrReq;
use super::wire::{self, Mad};

/// One decoded CM attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmMsg {
    /// ClassPortInfo.
    ClassPortInfo(ClassPortInfo),
    /// REQ.
    Req(Req),
    /// MRA.
    Mra(Mra),
    /// REJ.
    Rej(Rej),
    /// REP.
    Rep(Rep),
    /// RTU.
    Rtu(Rtu),
    /// DREQ.
    Dreq(Dreq),
    /// DREP.
    Drep(Drep),
    /// SIDR_REQ.
    SidrReq(SidrReq),
    /// SIDR_REP.
    SidrRep(SidrRep),
    /// LAP.
    Lap(Lap),
    /// APR.
    Apr(Apr),
}

impl CmMsg {
    /// The attribute of this message.
    pub const fn attr(&self) -> AttrId {
        match self {
            Self::ClassPortInfo(_) => AttrId::ClassPortInfo,
            Self::Req(_) => AttrId::Req,
            Self::Mra(_) => AttrId::Mra,
            Self::Rej(_) => AttrId::Rej,
            Self::Rep(_) => AttrId::Rep,
            Self::Rtu(_) => AttrId::Rtu,
            Self::Dreq(_) => AttrId::Dreq,
            Self::Drep(_) => AttrId::Drep,
            Self::SidrReq(_) => AttrId::SidrReq,
            Self::SidrRep(_) => AttrId::SidrRep,
            Self::Lap(_) => AttrId::Lap,
            Self::Apr(_) => AttrId::Apr,
        }
    }

    /// Decodes the message data of `mad` as attribute `attr` (header not checked).
    ///
    /// # Errors
    ///
    /// The message decoder's error.
    pub fn decode_as(attr: AttrId, mad: &[u8]) -> Result<Self, DecodeError> {
        Ok(match attr {
            AttrId::ClassPortInfo => Self::ClassPortInfo(ClassPortInfo::decode(mad)?),
            AttrId::Req => Self::Req(Req::decode(mad)?),
            AttrId::Mra => Self::Mra(Mra::decode(mad)?),
            AttrId::Rej => Self::Rej(Rej::decode(mad)?),
            AttrId::Rep => Self::Rep(Rep::decode(mad)?),
            AttrId::Rtu => Self::Rtu(Rtu::decode(mad)?),
            AttrId::Dreq => Self::Dreq(Dreq::decode(mad)?),
            AttrId::Drep => Self::Drep(Drep::decode(mad)?),
            AttrId::SidrReq => Self::SidrReq(SidrReq::decode(mad)?),
            AttrId::SidrRep => Self::SidrRep(SidrRep::decode(mad)?),
            AttrId::Lap => Self::Lap(Lap::decode(mad)?),
            AttrId::Apr => Self::Apr(Apr::decode(mad)?),
        })
    }

    /// Writes the message data (bytes 24..256) of `mad`.
    ///
    /// # Errors
    ///
    /// The message encoder's error.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        match self {
            Self::ClassPortInfo(m) => m.encode(mad),
            Self::Req(m) => m.encode(mad),
            Self::Mra(m) => m.encode(mad),
            Self::Rej(m) => m.encode(mad),
            Self::Rep(m) => m.encode(mad),
            Self::Rtu(m) => m.encode(mad),
            Self::Dreq(m) => m.encode(mad),
            Self::Drep(m) => m.encode(mad),
            Self::SidrReq(m) => m.encode(mad),
            Self::SidrRep(m) => m.encode(mad),
            Self::Lap(m) => m.encode(mad),
            Self::Apr(m) => m.encode(mad),
        }
    }
}

/// A validated CM MAD: header plus typed message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CmMad {
    /// The MAD header; `header.attr_id` always matches `msg`.
    pub header: MadHeader,
    /// The message.
    pub msg: CmMsg,
}

impl CmMad {
    /// An outgoing CM message with method SEND; for ClassPortInfo adjust `header.method`.
    pub const fn new(tid: u64, attr_mod: u32, msg: CmMsg) -> Self {
        Self {
            header: MadHeader::cm(msg.attr(), tid, attr_mod),
            msg,
        }
    }

    /// Validates the header ([`MadHeader::validate_cm`]) and decodes the message.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes, then the header rule or the
    /// message rule that failed. Never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mad = wire::as_mad(bytes)?;
        let header = MadHeader::decode(mad)?;
        let attr = header.validate_cm()?;
        Ok(Self {
            header,
            msg: CmMsg::decode_as(attr, mad)?,
        })
    }

    /// Writes the whole MAD. The attribute ID written is the message's, whatever
    /// `header.attr_id` says.
    ///
    /// # Errors
    ///
    /// The message encoder's error; `buf` is then unspecified.
    pub fn encode(&self, buf: &mut [u8; MAD_SIZE]) -> Result<(), EncodeError> {
        let header = MadHeader {
            attr_id: self.msg.attr().to_u16(),
            ..self.header
        };
        header.encode(buf);
        self.msg.encode(buf)
    }
}
