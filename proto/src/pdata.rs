//! Private data and additional-information blocks: fixed arrays plus a length, no allocation.
//!
//! The wire carries no private-data length: a received message always yields the full
//! field (REQ 92, REP 196, ...), zero-padded by the sender. Outgoing data shorter than the
//! field is zero-padded; longer data is an error (Linux returns `-EINVAL`, e.g.
//! `ib_send_cm_rep` in `drivers/infiniband/core/cm.c`).

use super::error::EncodeError;

/// Bytes of REJ ARI, APR additional info and SIDR_REP additional info (`IB_CM_REJ_ARI_LENGTH`).
pub const INFO_SIZE: usize = 72;

/// Up to `N` bytes of private data (or additional information).
///
/// Invariant: bytes at and after `len` are zero, so derived equality compares contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PrivateData<const N: usize> {
    len: usize,
    bytes: [u8; N],
}

/// The 72-byte REJ ARI / APR / SIDR_REP additional-information block with its length.
pub type AdditionalInfo = PrivateData<INFO_SIZE>;

impl<const N: usize> PrivateData<N> {
    /// Capacity in bytes.
    pub const CAPACITY: usize = N;

    /// No data.
    pub const fn empty() -> Self {
        Self {
            len: 0,
            bytes: [0; N],
        }
    }

    /// Copies `data`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::TooLong`] if `data` is longer than `N`.
    pub fn new(data: &[u8]) -> Result<Self, EncodeError> {
        let mut out = Self::empty();
        let dst = out
            .bytes
            .get_mut(..data.len())
            .ok_or(EncodeError::TooLong {
                len: data.len(),
                max: N,
            })?;
        dst.copy_from_slice(data);
        out.len = data.len();
        Ok(out)
    }

    /// The full field as received: length `N`.
    pub const fn from_array(bytes: [u8; N]) -> Self {
        Self { len: N, bytes }
    }

    /// The first `len` bytes of `bytes` (the rest is dropped); `len` is clamped to `N`.
    pub fn from_prefix(bytes: &[u8; N], len: usize) -> Self {
        let len = if len > N { N } else { len };
        let mut out = Self::empty();
        for (dst, src) in out.bytes.iter_mut().zip(bytes.iter()).take(len) {
            *dst = *src;
        }
        out.len = len;
        out
    }

    /// Number of meaningful bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no data.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The meaningful bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }

    /// The whole field, zero-padded after `len`.
    pub const fn padded(&self) -> &[u8; N] {
        &self.bytes
    }
}

impl<const N: usize> Default for PrivateData<N> {
    fn default() -> Self {
        Self::empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_padding() {
        let pd = PrivateData::<4>::new(&[1, 2]).unwrap();
        assert_eq!(pd.as_bytes(), &[1, 2]);
        assert_eq!(pd.padded(), &[1, 2, 0, 0]);
        assert_eq!(
            PrivateData::<4>::new(&[0; 5]),
            Err(EncodeError::TooLong { len: 5, max: 4 })
        );
        assert_eq!(PrivateData::<4>::new(&[9; 4]).unwrap().len(), 4);
        let p = PrivateData::<4>::from_prefix(&[1, 2, 3, 4], 9);
        assert_eq!(p.len(), 4);
        let p = PrivateData::<4>::from_prefix(&[1, 2, 3, 4], 1);
        assert_eq!(p.padded(), &[1, 0, 0, 0]);
        assert!(PrivateData::<4>::default().is_empty());
    }
}
