//! `CEPM_RDMACM_DEBUG=1`: the library says on stderr why a call failed, where librdmacm
//! would only set `errno`.

use std::sync::OnceLock;

/// Whether the environment asks for the messages (read once).
pub(crate) fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("CEPM_RDMACM_DEBUG").is_some_and(|v| v != "0"))
}

/// Prints a line on stderr when [`enabled`].
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => {
        if $crate::debug::enabled() {
            eprintln!("cepm-rdmacm: {}", format_args!($($arg)*));
        }
    };
}
