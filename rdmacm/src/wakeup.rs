//! An eventfd that one thread polls, beside what it waits for, so that another can wake it.

use std::{
    io,
    os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
};

/// A non-blocking eventfd used as a wake-up flag.
pub(crate) struct Wakeup(OwnedFd);

impl Wakeup {
    /// Not set.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes no pointers.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: A new descriptor, ours alone.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Sets it: the descriptor becomes readable.
    pub(crate) fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: Writes 8 bytes from `one` to our eventfd; a full counter (EAGAIN) is set
        // already.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Clears it.
    pub(crate) fn reset(&self) {
        let mut count = [0u8; 8];
        // SAFETY: Reads the counter into `count`, resetting it; EAGAIN when it is clear.
        unsafe { libc::read(self.0.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
    }

    /// Waits until it is set, or `timeout` passes (`None`: for ever), leaving it as it is.
    pub(crate) fn sleep(&self, timeout: Option<std::time::Duration>) {
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.map_or(-1, |t| {
            libc::c_int::try_from(t.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX)
        });
        // SAFETY: One valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut fd, 1, ms) };
    }
}

impl AsFd for Wakeup {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_wake_ends_a_sleep_until_reset() {
        let w = Wakeup::new().unwrap();
        let started = Instant::now();
        w.sleep(Some(Duration::from_millis(20)));
        assert!(started.elapsed() >= Duration::from_millis(20));
        w.wake();
        w.wake();
        let started = Instant::now();
        w.sleep(Some(Duration::from_secs(10)));
        assert!(started.elapsed() < Duration::from_secs(5));
        w.reset();
        let started = Instant::now();
        w.sleep(Some(Duration::from_millis(20)));
        assert!(started.elapsed() >= Duration::from_millis(20));
    }
}
