//! Bit-exact field access inside a CM MAD, in IBTA `Byte[Bit]` notation.
//!
//! A [`Field`] is placed like the IBTA tables and Linux's `CM_FIELD*_LOC` macros
//! (`include/rdma/ibta_vol1_c12.h`): the byte offset is relative to the start of the
//! message data (after the 24-byte MAD header), bit 0 is the most significant bit of that
//! byte, and the field runs over `width` bits towards less significant bits, big-endian.
//!
//! Field positions are constants checked when they are built (a [`Field`] that would reach
//! past the MAD fails to compile), so the accessors below cannot index out of range even
//! on hostile input: they only ever see a 256-byte array.

use super::error::EncodeError;
use super::mad::{MAD_HEADER_SIZE, MAD_SIZE};

/// A 256-byte MAD buffer.
pub type Mad = [u8; MAD_SIZE];

/// Position of a bit field of at most 64 bits in the CM message data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Name used in encode errors and traces.
    pub name: &'static str,
    /// Byte offset from the start of the message data (IBTA table offset).
    pub byte: usize,
    /// Bit offset inside that byte, 0 = most significant.
    pub bit: u32,
    /// Width in bits, 1..=64.
    pub width: u32,
}

impl Field {
    /// Describes a field at message byte `byte`, bit `bit`, `width` bits wide.
    ///
    /// # Panics
    ///
    /// At compile time when used in a `const` (as everywhere in this crate) if the field is
    /// empty, wider than 64 bits once its bit offset is added, or reaches past the MAD.
    pub const fn new(name: &'static str, byte: usize, bit: u32, width: u32) -> Self {
        assert!(width >= 1 && bit < 8 && bit + width <= 64);
        assert!(MAD_HEADER_SIZE + byte + (bit + width).div_ceil(8) as usize <= MAD_SIZE);
        Self {
            name,
            byte,
            bit,
            width,
        }
    }

    /// Largest value the field holds.
    pub const fn max(self) -> u64 {
        u64::MAX >> (64 - self.width)
    }

    /// Number of bytes the field touches and the shift that aligns it to bit 0.
    const fn span(self) -> (usize, u32) {
        let bits = self.bit + self.width;
        let bytes = bits.div_ceil(8);
        (bytes as usize, bytes * 8 - bits)
    }

    /// Reads the field.
    pub fn get(self, mad: &Mad) -> u64 {
        let (bytes, shift) = self.span();
        let start = MAD_HEADER_SIZE + self.byte;
        let raw = mad
            .get(start..start + bytes)
            .unwrap_or(&[])
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        (raw >> shift) & self.max()
    }

    /// Reads a field of at most 8 bits.
    pub fn get_u8(self, mad: &Mad) -> u8 {
        debug_assert!(self.width <= 8);
        self.get(mad) as u8
    }

    /// Reads a field of at most 16 bits.
    pub fn get_u16(self, mad: &Mad) -> u16 {
        debug_assert!(self.width <= 16);
        self.get(mad) as u16
    }

    /// Reads a field of at most 32 bits.
    pub fn get_u32(self, mad: &Mad) -> u32 {
        debug_assert!(self.width <= 32);
        self.get(mad) as u32
    }

    /// Reads a single-bit field.
    pub fn get_bool(self, mad: &Mad) -> bool {
        self.get(mad) != 0
    }

    /// Writes the field, leaving every other bit of the touched bytes unchanged.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] if `value` does not fit; `mad` is then unchanged.
    pub fn set(self, mad: &mut Mad, value: u64) -> Result<(), EncodeError> {
        if value > self.max() {
            return Err(EncodeError::FieldOutOfRange(self.name));
        }
        let (bytes, shift) = self.span();
        let mask = self.max() << shift;
        let bits = value << shift;
        let start = MAD_HEADER_SIZE + self.byte;
        let dst = mad.get_mut(start..start + bytes).unwrap_or(&mut []);
        let last = bytes.saturating_sub(1);
        for (i, byte) in dst.iter_mut().enumerate() {
            // Byte i of the span holds bits [8*(last-i), 8*(last-i)+8) of the word.
            let pos = 8 * (last - i) as u32;
            let m = (mask >> pos) as u8;
            *byte = (*byte & !m) | ((bits >> pos) as u8 & m);
        }
        Ok(())
    }

    /// Writes a boolean into a single-bit field.
    pub fn set_bool(self, mad: &mut Mad, value: bool) {
        // A single-bit field always holds 0 or 1.
        let _ = self.set(mad, u64::from(value));
    }
}

/// Position of a byte array (GID, private data, ARI) in the CM message data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes {
    /// Byte offset from the start of the message data.
    pub byte: usize,
    /// Length in bytes.
    pub len: usize,
}

impl Bytes {
    /// Describes `len` bytes at message byte `byte`.
    ///
    /// # Panics
    ///
    /// At compile time when used in a `const` if the range reaches past the MAD.
    pub const fn new(byte: usize, len: usize) -> Self {
        assert!(MAD_HEADER_SIZE + byte + len <= MAD_SIZE);
        Self { byte, len }
    }

    /// The bytes, borrowed from the MAD.
    pub fn slice(self, mad: &Mad) -> &[u8] {
        let start = MAD_HEADER_SIZE + self.byte;
        mad.get(start..start + self.len).unwrap_or(&[])
    }

    /// Copies the bytes into an array of exactly the field's length.
    pub fn read<const N: usize>(self, mad: &Mad) -> [u8; N] {
        debug_assert_eq!(N, self.len);
        let mut out = [0u8; N];
        for (dst, src) in out.iter_mut().zip(self.slice(mad)) {
            *dst = *src;
        }
        out
    }

    /// Copies `src` to the start of the field; bytes beyond `src.len()` are unchanged.
    ///
    /// # Errors
    ///
    /// [`EncodeError::TooLong`] if `src` is longer than the field; `mad` is then unchanged.
    pub fn write(self, mad: &mut Mad, src: &[u8]) -> Result<(), EncodeError> {
        if src.len() > self.len {
            return Err(EncodeError::TooLong {
                len: src.len(),
                max: self.len,
            });
        }
        let start = MAD_HEADER_SIZE + self.byte;
        let dst = mad.get_mut(start..start + src.len()).unwrap_or(&mut []);
        dst.copy_from_slice(src);
        Ok(())
    }
}

/// Borrows the first 256 bytes of a received buffer as a MAD.
///
/// # Errors
///
/// [`super::error::DecodeError::Truncated`] if `bytes` is shorter than a MAD. Longer
/// buffers are accepted and the excess ignored.
pub fn as_mad(bytes: &[u8]) -> Result<&Mad, super::error::DecodeError> {
    bytes
        .get(..MAD_SIZE)
        .and_then(|s| s.try_into().ok())
        .ok_or(super::error::DecodeError::Truncated(bytes.len()))
}

/// Clears the message data (bytes 24..256), keeping the header.
pub fn clear_data(mad: &mut Mad) {
    for b in mad.iter_mut().skip(MAD_HEADER_SIZE) {
        *b = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F8: Field = Field::new("top5", 43, 0, 5);
    const FMID: Field = Field::new("mid2", 43, 5, 2);
    const FL: Field = Field::new("flow", 88, 0, 20);
    const QPN: Field = Field::new("qpn", 32, 0, 24);
    const SID: Field = Field::new("sid", 8, 0, 64);

    #[test]
    fn positions_match_ibta_bit_numbering() {
        let mut mad = [0u8; MAD_SIZE];
        F8.set(&mut mad, 0x1f).unwrap();
        assert_eq!(mad[24 + 43], 0xf8);
        FMID.set(&mut mad, 3).unwrap();
        assert_eq!(mad[24 + 43], 0xfe);
        FL.set(&mut mad, 0xabcde).unwrap();
        assert_eq!(&mad[24 + 88..24 + 92], &[0xab, 0xcd, 0xe0, 0x00]);
        QPN.set(&mut mad, 0x123456).unwrap();
        assert_eq!(&mad[24 + 32..24 + 36], &[0x12, 0x34, 0x56, 0x00]);
        SID.set(&mut mad, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(&mad[32..40], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(F8.get(&mad), 0x1f);
        assert_eq!(FMID.get(&mad), 3);
        assert_eq!(FL.get(&mad), 0xabcde);
        assert_eq!(QPN.get(&mad), 0x123456);
        assert_eq!(SID.get(&mad), 0x0102_0304_0506_0708);
    }

    #[test]
    fn set_keeps_neighbours_and_rejects_wide_values() {
        let mut mad = [0xffu8; MAD_SIZE];
        FMID.set(&mut mad, 0).unwrap();
        assert_eq!(mad[24 + 43], 0xf9);
        assert_eq!(
            F8.set(&mut mad, 32),
            Err(EncodeError::FieldOutOfRange("top5"))
        );
        assert_eq!(mad[24 + 43], 0xf9);
    }

    #[test]
    fn short_buffers_are_truncated_errors() {
        assert!(as_mad(&[0u8; 255]).is_err());
        assert!(as_mad(&[0u8; 300]).is_ok());
    }
}
