//! `cm_message!`: the codec of every CM message, generated from one table per message.
//!
//! A message file lists its wire fields in IBTA table order (ascending `Byte[Bit]`, as in
//! IBTA vol. 1 ch. 12 and Linux's `include/rdma/ibta_vol1_c12.h`); each row says where the
//! field sits and which member of the host-order struct it carries. From that table the
//! macro generates, in the invoking module:
//!
//! - `pub mod fields`: one [`Field`] or [`Bytes`] constant per positioned row;
//! - the struct, its members in table order, with the attributes given (derives, docs);
//! - `decode(&[u8]) -> Result<Self, DecodeError>`: [`wire::as_mad`](super::wire::as_mad),
//!   the row checks (`nonzero`, `len`) in table order, the optional `validate` hook, then
//!   the members in table order (a conversion may still fail, e.g. a reserved
//!   [`MessageCode`]);
//! - `encode(&self, &mut Mad) -> Result<(), EncodeError>`: the `nonzero` checks and the
//!   optional `validate` hook (both before the MAD is touched),
//!   [`wire::clear_data`](super::wire::clear_data), then every wire field in table order,
//!   stopping at the first that does not fit.
//!
//! # Rows
//!
//! A row is a wire field carrying a member:
//!
//! ```text
//! /// Docs of fields::NAME.
//! NAME @ bits(byte, bit, width)     /// Docs of the member.   => member: Type;
//! NAME @ bits(byte, bit, width)     /// Docs of the member.   => member: u32, nonzero;
//! NAME @ bytes(byte, len)           /// Docs of the member.   => member: Type;
//! NAME @ bytes(byte, len)           /// Docs of the member.   => member: Type, len LEN;
//! NAME @ bytes(byte, len)           /// Docs of the member.   => member: Type, len LEN clamped;
//!      @ layout(PATH_LAYOUT)        /// Docs of the member.   => member: CmPath;
//! ```
//!
//! (the member's docs go on their own line, between the position and `=>`), or one half of
//! a value split over several wire fields:
//!
//! ```text
//! /// Docs of fields::NAME.
//! NAME(wire_name) @ bits(byte, bit, width) = |m| <u64 to write, from m: &Self>;
//! /// Docs of the member.
//! => member: Type = |mad| <member read from mad: &Mad; may use `?`>;
//! ```
//!
//! - `bits`: `fields::NAME: Field`, named `"<prefix>.<member>"` (or
//!   `"<prefix>.<wire_name>"`). `u8`, `u16`, `u32`, `u64` and `bool` are plain integers;
//!   [`MessageCode`] goes through its `from_wire`/`to_u8` pair.
//! - `nonzero`: 0 is [`DecodeError::ZeroQpn`] on decode and
//!   [`EncodeError::FieldOutOfRange`] on encode.
//! - `bytes`: `fields::NAME: Bytes` for a GID (`[u8; 16]`) or full-width [`PrivateData`].
//!   With `len LEN` it is an additional-information block whose length is field `LEN`
//!   (a split row): a length over the block is [`DecodeError::InfoTooLong`], and only
//!   `len` bytes are kept. With `len LEN clamped`, a length over the block reads as the
//!   whole block instead.
//! - `layout`: a [`CmPath`] at a [`PathLayout`] of [`super::path`]; no constant.
//! - Split rows (an info length, the parts of a vendor ID, the REQ transport pair) are
//!   written in their table position; the member they make up has a row of its own with
//!   no position, placed where the member belongs in the struct.
//!
//! Rules that span fields or must run in a particular order (a REP needs a QPN or an
//! EECN; a REQ's transport is checked before its QPN) are `validate` hooks:
//!
//! ```text
//! cm_message! {
//!     /// A DREQ, fields in host order.
//!     #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
//!     pub struct Dreq("dreq") {
//!         /// RemoteQPN/EECN.
//!         REMOTE_QPN @ bits(8, 0, 24)
//!             /// The receiver's QPN, 24 bits, never 0.
//!             => remote_qpn: u32, nonzero;
//!         // ...
//!     }
//!
//!     /// Reads a DREQ from a whole MAD.
//!     fn decode;                              // or: fn decode(validate = Self::f);
//!     /// Writes the DREQ into the message data of `mad`.
//!     fn encode;                              // or: fn encode(validate = Self::g);
//! }
//! ```
//!
//! with `fn f(mad: &Mad) -> Result<(), DecodeError>` and
//! `fn g(&self) -> Result<(), EncodeError>`.
//!
//! The macro is a plain `macro_rules!` re-exported with `pub(super) use` and names its
//! siblings as `super::x`, so cepm.ko, which mounts these files as a submodule, expands it
//! exactly as the host crate does.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::msg_code::MessageCode;
use super::path::{CmPath, PathLayout};
use super::pdata::PrivateData;
use super::wire::{Bytes, Field, Mad};

/// A host-order value stored at a wire position `At` ([`Field`], [`Bytes`],
/// [`PathLayout`], or a length field plus its [`Bytes`]).
pub(super) trait WireValue<At>: Sized {
    /// Reads the value from a MAD of attribute `attr` (named in decode errors).
    fn read(mad: &Mad, at: &At, attr: AttrId) -> Result<Self, DecodeError>;

    /// Writes the value; bits outside `at` are left alone.
    fn write(&self, mad: &mut Mad, at: &At) -> Result<(), EncodeError>;
}

/// `u8`, `u16`, `u32`: read with the width-checked getter, written if they fit.
macro_rules! narrow_int {
    ($($t:ty => $get:ident),*) => {$(
        impl WireValue<Field> for $t {
            fn read(mad: &Mad, at: &Field, _: AttrId) -> Result<Self, DecodeError> {
                Ok(at.$get(mad))
            }

            fn write(&self, mad: &mut Mad, at: &Field) -> Result<(), EncodeError> {
                at.set(mad, u64::from(*self))
            }
        }
    )*};
}

narrow_int!(u8 => get_u8, u16 => get_u16, u32 => get_u32);

impl WireValue<Field> for u64 {
    fn read(mad: &Mad, at: &Field, _: AttrId) -> Result<Self, DecodeError> {
        Ok(at.get(mad))
    }

    fn write(&self, mad: &mut Mad, at: &Field) -> Result<(), EncodeError> {
        at.set(mad, *self)
    }
}

impl WireValue<Field> for bool {
    fn read(mad: &Mad, at: &Field, _: AttrId) -> Result<Self, DecodeError> {
        Ok(at.get_bool(mad))
    }

    fn write(&self, mad: &mut Mad, at: &Field) -> Result<(), EncodeError> {
        at.set_bool(mad, *self);
        Ok(())
    }
}

impl WireValue<Field> for MessageCode {
    fn read(mad: &Mad, at: &Field, attr: AttrId) -> Result<Self, DecodeError> {
        MessageCode::from_wire(attr, at.get_u8(mad))
    }

    fn write(&self, mad: &mut Mad, at: &Field) -> Result<(), EncodeError> {
        at.set(mad, u64::from(self.to_u8()))
    }
}

/// A GID or other fixed byte array.
impl<const N: usize> WireValue<Bytes> for [u8; N] {
    fn read(mad: &Mad, at: &Bytes, _: AttrId) -> Result<Self, DecodeError> {
        Ok(at.read(mad))
    }

    fn write(&self, mad: &mut Mad, at: &Bytes) -> Result<(), EncodeError> {
        at.write(mad, self)
    }
}

/// Private data: the whole field on decode, the meaningful bytes (zero-padded) on encode.
impl<const N: usize> WireValue<Bytes> for PrivateData<N> {
    fn read(mad: &Mad, at: &Bytes, _: AttrId) -> Result<Self, DecodeError> {
        Ok(PrivateData::from_array(at.read(mad)))
    }

    fn write(&self, mad: &mut Mad, at: &Bytes) -> Result<(), EncodeError> {
        at.write(mad, self.as_bytes())
    }
}

/// Additional information: `len` bytes of the block; the length field is its own row.
impl<const N: usize> WireValue<(Field, Bytes)> for PrivateData<N> {
    fn read(mad: &Mad, at: &(Field, Bytes), attr: AttrId) -> Result<Self, DecodeError> {
        let len = info_len(mad, at.0, N, attr)?;
        Ok(PrivateData::from_prefix(&at.1.read(mad), len.into()))
    }

    fn write(&self, mad: &mut Mad, at: &(Field, Bytes)) -> Result<(), EncodeError> {
        at.1.write(mad, self.as_bytes())
    }
}

/// Where an additional-information block whose length field may exceed it sits: its length
/// field, then the block.
pub(super) struct Clamped(pub(super) Field, pub(super) Bytes);

/// Additional information read leniently: a length over the block (up to 127 in REJ's 7-bit
/// field, 255 in APR's) reads as the whole block, so that a peer that overstates it is still
/// heard (Linux passes such a length on unchecked; refusing the message would leave the
/// peer retrying for minutes).
impl<const N: usize> WireValue<Clamped> for PrivateData<N> {
    fn read(mad: &Mad, at: &Clamped, _: AttrId) -> Result<Self, DecodeError> {
        let len = usize::from(at.0.get_u8(mad)).min(N);
        Ok(PrivateData::from_prefix(&at.1.read(mad), len))
    }

    fn write(&self, mad: &mut Mad, at: &Clamped) -> Result<(), EncodeError> {
        at.1.write(mad, self.as_bytes())
    }
}

impl WireValue<PathLayout> for CmPath {
    fn read(mad: &Mad, at: &PathLayout, _: AttrId) -> Result<Self, DecodeError> {
        Ok(CmPath::decode(mad, at))
    }

    fn write(&self, mad: &mut Mad, at: &PathLayout) -> Result<(), EncodeError> {
        self.encode(mad, at)
    }
}

/// Reads an additional-information length field of message `attr`.
///
/// # Errors
///
/// [`DecodeError::InfoTooLong`] if it exceeds `max`, the block's size.
pub(super) fn info_len(mad: &Mad, len: Field, max: usize, attr: AttrId) -> Result<u8, DecodeError> {
    let n = len.get_u8(mad);
    if usize::from(n) > max {
        return Err(DecodeError::InfoTooLong(attr, n));
    }
    Ok(n)
}

/// Generates a CM message's `fields` module, struct, `decode` and `encode` from its wire
/// table; see the [module documentation](self).
macro_rules! cm_message {
    // All rows normalized: emit the code.
    (@emit {
        [$(#[$meta:meta])*] [$vis:vis] $name:ident
        [$(#[$ddoc:meta])*] [$($dcheck:path)?]
        [$(#[$edoc:meta])*] [$($echeck:path)?]
    } ($_n:ident, $prefix:literal, $mad:ident, $this:ident) [$({
        k[$($k:tt)*] f[$($f:tt)*] d[$($d:tt)*] e[$($e:tt)*] dp[$($dp:tt)*] ep[$($ep:tt)*]
    })*]) => {
        #[doc = concat!("Wire positions of the `", $prefix, ".*` fields, as offsets into the")]
        #[doc = "message data (after the 24-byte MAD header)."]
        pub mod fields {
            #[allow(unused_imports)]
            use super::*;
            $($($k)*)*
        }

        $(#[$meta])*
        $vis struct $name {
            $($($f)*)*
        }

        impl $name {
            $(#[$ddoc])*
            pub fn decode(bytes: &[u8]) -> Result<Self, super::error::DecodeError> {
                use fields::*;
                let $mad = super::wire::as_mad(bytes)?;
                $($($dp)*)*
                $($dcheck($mad)?;)?
                Ok(Self { $($($d)*)* })
            }

            $(#[$edoc])*
            pub fn encode(
                &self,
                $mad: &mut super::wire::Mad,
            ) -> Result<(), super::error::EncodeError> {
                use fields::*;
                let $this = self;
                $($($ep)*)*
                $($echeck($this)?;)?
                super::wire::clear_data($mad);
                $($($e)*)*
                Ok(())
            }
        }
    };

    // No rows left.
    (@row $head:tt $ctx:tt [$($acc:tt)*]) => {
        cm_message!(@emit $head $ctx [$($acc)*]);
    };

    // Bit field carrying a member that must not be 0.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident @ bits($byte:expr, $bit:expr, $width:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty, nonzero;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Field = super::super::wire::Field::new(
                concat!($prefix, ".", stringify!($m)), $byte, $bit, $width);]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read($mad, &$c, super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(&$this.$m, $mad, &$c)?;]
            dp[if $c.get($mad) == 0 {
                return Err(super::error::DecodeError::ZeroQpn(super::mad::AttrId::$name));
            }]
            ep[if $this.$m == 0 {
                return Err(super::error::EncodeError::FieldOutOfRange($c.name));
            }]
        }] $($rest)*);
    };

    // Bit field carrying a member.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident @ bits($byte:expr, $bit:expr, $width:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Field = super::super::wire::Field::new(
                concat!($prefix, ".", stringify!($m)), $byte, $bit, $width);]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read($mad, &$c, super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(&$this.$m, $mad, &$c)?;]
            dp[] ep[]
        }] $($rest)*);
    };

    // Wire-only bit field: one part of a split member.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident($wire:ident) @ bits($byte:expr, $bit:expr, $width:expr)
        = |$msg:ident| $value:expr;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Field = super::super::wire::Field::new(
                concat!($prefix, ".", stringify!($wire)), $byte, $bit, $width);]
            f[] d[]
            e[$c.set($mad, { let $msg = $this; $value })?;]
            dp[] ep[]
        }] $($rest)*);
    };

    // Additional-information block whose length is another row's field, clamped to the
    // block: a longer length reads as the whole block instead of failing the message.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident @ bytes($byte:expr, $len:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty, len $lenf:ident clamped;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Bytes =
                super::super::wire::Bytes::new($byte, $len);]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read(
                $mad, &super::message::Clamped($lenf, $c), super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(
                &$this.$m, $mad, &super::message::Clamped($lenf, $c))?;]
            dp[] ep[]
        }] $($rest)*);
    };

    // Additional-information block whose length is another row's field.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident @ bytes($byte:expr, $len:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty, len $lenf:ident;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Bytes =
                super::super::wire::Bytes::new($byte, $len);]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read(
                $mad, &($lenf, $c), super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(&$this.$m, $mad, &($lenf, $c))?;]
            dp[super::message::info_len(
                $mad, $lenf, <$t>::CAPACITY, super::mad::AttrId::$name)?;]
            ep[]
        }] $($rest)*);
    };

    // Byte block carrying a member.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$cdoc:meta])* $c:ident @ bytes($byte:expr, $len:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[$(#[$cdoc])* pub const $c: super::super::wire::Bytes =
                super::super::wire::Bytes::new($byte, $len);]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read($mad, &$c, super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(&$this.$m, $mad, &$c)?;]
            dp[] ep[]
        }] $($rest)*);
    };

    // Path block at a layout defined elsewhere.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        @ layout($at:expr)
        $(#[$fdoc:meta])* => $m:ident: $t:ty;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: super::message::WireValue::read($mad, &$at, super::mad::AttrId::$name)?,]
            e[super::message::WireValue::write(&$this.$m, $mad, &$at)?;]
            dp[] ep[]
        }] $($rest)*);
    };

    // Member assembled from wire-only rows.
    (@row $head:tt ($name:ident, $prefix:literal, $mad:ident, $this:ident) [$($acc:tt)*]
        $(#[$fdoc:meta])* => $m:ident: $t:ty = |$w:ident| $value:expr;
        $($rest:tt)*
    ) => {
        cm_message!(@row $head ($name, $prefix, $mad, $this) [$($acc)* {
            k[]
            f[$(#[$fdoc])* pub $m: $t,]
            d[$m: { let $w = $mad; $value },]
            e[] dp[] ep[]
        }] $($rest)*);
    };

    (@row $head:tt $ctx:tt [$($acc:tt)*] $($bad:tt)*) => {
        compile_error!(concat!("cm_message!: cannot parse the row at: ", stringify!($($bad)*)));
    };

    // Entry point.
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($prefix:literal) { $($rows:tt)* }
        $(#[$ddoc:meta])*
        fn decode $((validate = $dcheck:path))?;
        $(#[$edoc:meta])*
        fn encode $((validate = $echeck:path))?;
    ) => {
        cm_message!(@row {
            [$(#[$meta])*] [$vis] $name
            [$(#[$ddoc])*] [$($dcheck)?]
            [$(#[$edoc])*] [$($echeck)?]
        } ($name, $prefix, mad, this) [] $($rows)*);
    };
}

pub(super) use cm_message;
