//! `rdma_event_str`: an event type's name, as `<rdma/rdma_cma.h>` spells the constant.

use core::ffi::{c_char, CStr};

use crate::sys;

/// Each event type with its constant's name, from the constant itself.
macro_rules! names {
    ($($event:ident),* $(,)?) => {
        [$((sys::$event, concat!(stringify!($event), "\0"))),*]
    };
}

const NAMES: [(sys::rdma_cm_event_type, &str); 16] = names!(
    RDMA_CM_EVENT_ADDR_RESOLVED,
    RDMA_CM_EVENT_ADDR_ERROR,
    RDMA_CM_EVENT_ROUTE_RESOLVED,
    RDMA_CM_EVENT_ROUTE_ERROR,
    RDMA_CM_EVENT_CONNECT_REQUEST,
    RDMA_CM_EVENT_CONNECT_RESPONSE,
    RDMA_CM_EVENT_CONNECT_ERROR,
    RDMA_CM_EVENT_UNREACHABLE,
    RDMA_CM_EVENT_REJECTED,
    RDMA_CM_EVENT_ESTABLISHED,
    RDMA_CM_EVENT_DISCONNECTED,
    RDMA_CM_EVENT_DEVICE_REMOVAL,
    RDMA_CM_EVENT_MULTICAST_JOIN,
    RDMA_CM_EVENT_MULTICAST_ERROR,
    RDMA_CM_EVENT_ADDR_CHANGE,
    RDMA_CM_EVENT_TIMEWAIT_EXIT,
);

/// What librdmacm calls an event type it does not know.
const UNKNOWN: &CStr = c"UNKNOWN EVENT";

/// The name of `event`.
pub(crate) fn name(event: sys::rdma_cm_event_type) -> &'static CStr {
    match event {
        crate::event::RDMA_CM_EVENT_ADDRINFO_RESOLVED => c"RDMA_CM_EVENT_ADDRINFO_RESOLVED",
        crate::event::RDMA_CM_EVENT_ADDRINFO_ERROR => c"RDMA_CM_EVENT_ADDRINFO_ERROR",
        crate::event::RDMA_CM_EVENT_USER => c"RDMA_CM_EVENT_USER",
        _ => NAMES
            .iter()
            .find(|(e, _)| *e == event)
            .and_then(|(_, name)| CStr::from_bytes_with_nul(name.as_bytes()).ok())
            .unwrap_or(UNKNOWN),
    }
}

/// `const char *rdma_event_str(enum rdma_cm_event_type event)`: a static string, never NULL.
#[no_mangle]
pub extern "C" fn rdma_event_str(event: sys::rdma_cm_event_type) -> *const c_char {
    name(event).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_has_its_constants_name() {
        // The enum is dense from 0: every value below the count has a name, none repeats,
        // and the name is the constant's (so ADDR_RESOLVED, 0, is "RDMA_CM_EVENT_ADDR_RESOLVED").
        for (value, (event, _)) in NAMES.iter().enumerate() {
            assert_eq!(*event as usize, value);
        }
        assert_eq!(
            name(sys::RDMA_CM_EVENT_ADDR_RESOLVED),
            c"RDMA_CM_EVENT_ADDR_RESOLVED"
        );
        assert_eq!(
            name(sys::RDMA_CM_EVENT_TIMEWAIT_EXIT),
            c"RDMA_CM_EVENT_TIMEWAIT_EXIT"
        );
        assert_eq!(name(sys::RDMA_CM_EVENT_REJECTED), c"RDMA_CM_EVENT_REJECTED");
    }

    #[test]
    fn rdmacm_1_4_types_have_their_names() {
        assert_eq!(name(16), c"RDMA_CM_EVENT_ADDRINFO_RESOLVED");
        assert_eq!(name(17), c"RDMA_CM_EVENT_ADDRINFO_ERROR");
        assert_eq!(name(18), c"RDMA_CM_EVENT_USER");
    }

    #[test]
    fn an_unknown_type_is_unknown_event() {
        // 19 is librdmacm's RDMA_CM_EVENT_INTERNAL, which its rdma_event_str does not name.
        assert_eq!(name(19), UNKNOWN);
        assert_eq!(name(u32::MAX as sys::rdma_cm_event_type), UNKNOWN);
    }
}
