//! Device names as the ABI carries them: a fixed array of C chars, NUL-padded
//! (`CEPM_DEVICE_NAME_MAX`, the kernel's `IB_DEVICE_NAME_MAX`).

use std::ffi::c_char;

use crate::sys;

/// The size of the ABI's name fields.
pub const DEVICE_NAME_MAX: usize = sys::CEPM_DEVICE_NAME_MAX as usize;

/// `name` in an ABI field. A name that fills the field has no NUL: no device has such a
/// name, so the module answers `ENODEV`.
pub fn encode(name: &str) -> [c_char; DEVICE_NAME_MAX] {
    let mut field = [0; DEVICE_NAME_MAX];
    for (dst, src) in field.iter_mut().zip(name.bytes()) {
        *dst = src as c_char;
    }
    field
}

/// The name in an ABI field, up to its first NUL (lossy for bytes that are not UTF-8).
pub fn decode(field: &[c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_padded_with_nuls_and_read_back_to_the_first() {
        let field = encode("rxe0");
        assert_eq!(
            field[..5],
            [
                b'r' as c_char,
                b'x' as c_char,
                b'e' as c_char,
                b'0' as c_char,
                0
            ]
        );
        assert!(field[4..].iter().all(|&c| c == 0));
        assert_eq!(decode(&field), "rxe0");
        assert_eq!(decode(&[b'a' as c_char, 0, b'b' as c_char]), "a");
    }

    #[test]
    fn a_name_too_long_for_the_field_is_cut_and_left_without_a_nul() {
        let long = "d".repeat(DEVICE_NAME_MAX + 3);
        let field = encode(&long);
        assert!(field.iter().all(|&c| c == b'd' as c_char));
        assert_eq!(decode(&field), "d".repeat(DEVICE_NAME_MAX));
    }
}
