//! Queries that need no connection: `rdma_get_src_port`, `rdma_get_dst_port`,
//! `rdma_get_devices` and `rdma_free_devices`.

use core::{ffi::c_int, ptr};

use crate::{errno, id::Id, sys};

/// The port of a socket address, in network byte order as it is stored: that of an IPv4 or
/// IPv6 address, the low 16 bits of an `AF_IB` service ID, 0 for any other family.
fn port_of(storage: &sys::sockaddr_storage) -> u16 {
    let family = c_int::from(storage.ss_family);
    let addr: *const sys::sockaddr_storage = storage;
    match family {
        libc::AF_INET => {
            // SAFETY: A sockaddr_storage is large and aligned enough for every address, and
            // its family says this one is a sockaddr_in.
            unsafe { (*addr.cast::<sys::sockaddr_in>()).sin_port }
        }
        libc::AF_INET6 => {
            // SAFETY: As above, for a sockaddr_in6.
            unsafe { (*addr.cast::<sys::sockaddr_in6>()).sin6_port }
        }
        f if f == sys::AF_IB as c_int => {
            // SAFETY: As above, for a sockaddr_ib.
            let sid = u64::from_be(unsafe { (*addr.cast::<sys::sockaddr_ib>()).sib_sid });
            (sid as u16).to_be()
        }
        _ => 0,
    }
}

/// `__be16 rdma_get_src_port(struct rdma_cm_id *id)`: the local port, network byte order; 0
/// for a pointer that is no live ID.
///
/// # Safety
///
/// No other thread frees the ID during the call (librdmacm's contract).
#[no_mangle]
pub unsafe extern "C" fn rdma_get_src_port(id: *mut sys::rdma_cm_id) -> u16 {
    // SAFETY: As the caller promises.
    unsafe { Id::of_app(id) }.map_or(0, |id| {
        let public = id.public();
        // SAFETY: Every member of the address union is plain data, and the storage member
        // covers the others.
        port_of(unsafe { &public.route.addr.__bindgen_anon_1.src_storage })
    })
}

/// `__be16 rdma_get_dst_port(struct rdma_cm_id *id)`: the peer's port, network byte order; 0
/// for a pointer that is no live ID.
///
/// # Safety
///
/// As for [`rdma_get_src_port`].
#[no_mangle]
pub unsafe extern "C" fn rdma_get_dst_port(id: *mut sys::rdma_cm_id) -> u16 {
    // SAFETY: As the caller promises.
    unsafe { Id::of_app(id) }.map_or(0, |id| {
        let public = id.public();
        // SAFETY: As in rdma_get_src_port.
        port_of(unsafe { &public.route.addr.__bindgen_anon_2.dst_storage })
    })
}

/// `struct ibv_context **rdma_get_devices(int *num_devices)`: a NULL-terminated array of the
/// devices' verbs contexts, freed with `rdma_free_devices`; the contexts stay open.
///
/// # Safety
///
/// `num_devices` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_devices(num_devices: *mut c_int) -> *mut *mut sys::ibv_context {
    let contexts = match crate::device::contexts() {
        Ok(c) => c,
        Err(e) => {
            errno::set(e);
            return ptr::null_mut();
        }
    };
    let size = core::mem::size_of::<*mut sys::ibv_context>() * (contexts.len() + 1);
    // SAFETY: calloc of the array and its terminator.
    let array = unsafe { libc::calloc(1, size) }.cast::<*mut sys::ibv_context>();
    if array.is_null() {
        errno::set(libc::ENOMEM);
        return array;
    }
    for (i, context) in contexts.iter().enumerate() {
        // SAFETY: The array has room for every context and the NULL after them.
        unsafe { array.add(i).write(*context) };
    }
    if !num_devices.is_null() {
        // SAFETY: The caller passes NULL or a valid int.
        unsafe { *num_devices = contexts.len() as c_int };
    }
    array
}

/// `void rdma_free_devices(struct ibv_context **list)`: the array, not the contexts.
///
/// # Safety
///
/// `list` came from [`rdma_get_devices`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rdma_free_devices(list: *mut *mut sys::ibv_context) {
    // SAFETY: The caller gives up an array rdma_get_devices calloc'ed.
    unsafe { libc::free(list.cast()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage_with(bytes: &[u8]) -> sys::sockaddr_storage {
        let mut s = sys::sockaddr_storage::default();
        // SAFETY: `bytes` is shorter than a sockaddr_storage, which is plain data.
        unsafe {
            ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (&mut s as *mut sys::sockaddr_storage).cast::<u8>(),
                bytes.len(),
            )
        };
        s
    }

    #[test]
    fn ports_stay_in_network_byte_order() {
        // sockaddr_in: family AF_INET (2, host order), port 7174 (0x1c06) big-endian.
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&[0x1c, 0x06]);
        assert_eq!(port_of(&storage_with(&v4)), 7174u16.to_be());
        let mut v6 = vec![0u8; 28];
        v6[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&[0x00, 0x50]);
        assert_eq!(port_of(&storage_with(&v6)), 80u16.to_be());
        // sockaddr_ib: the port is the service ID's low 16 bits (RDMA_PS_TCP, port 0x1389).
        let mut ib = sys::sockaddr_ib {
            sib_family: sys::AF_IB as u16,
            sib_sid: 0x0000_0000_0106_1389u64.to_be(),
            ..Default::default()
        };
        ib.sib_pkey = 0xffff;
        // SAFETY: A sockaddr_ib is plain data, smaller than a sockaddr_storage.
        let bytes = unsafe {
            core::slice::from_raw_parts(
                (&ib as *const sys::sockaddr_ib).cast::<u8>(),
                core::mem::size_of::<sys::sockaddr_ib>(),
            )
        };
        assert_eq!(port_of(&storage_with(bytes)), 0x1389u16.to_be());
        assert_eq!(port_of(&storage_with(&[0u8; 16])), 0);
    }
}
