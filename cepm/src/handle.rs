//! The `Cepm` handle: an open `/dev/cepm`, and the two ways of talking to it that every call
//! builds on, an ioctl with an in/out argument and a read of one fixed-size record.

use std::{
    fs::{File, OpenOptions},
    io,
    os::fd::{AsRawFd, RawFd},
    time::Duration,
};

/// Path of the character device.
pub const DEVICE_PATH: &str = "/dev/cepm";

/// An open `/dev/cepm`: the CEPs created or claimed through it are its own, and the module
/// destroys them when it is closed (dropped).
///
/// # Invariants
///
/// `file` is open for reading and writing on [`DEVICE_PATH`].
pub struct Cepm {
    file: File,
}

impl Cepm {
    /// Opens [`DEVICE_PATH`].
    pub fn open() -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE_PATH)?;
        // INVARIANT: `file` is `DEVICE_PATH`, opened for reading and writing.
        Ok(Self { file })
    }

    /// One ioctl with `arg` as its in/out argument.
    pub(crate) fn ioctl<T>(&self, cmd: u32, arg: &mut T) -> io::Result<()> {
        // SAFETY: `file` is `/dev/cepm` (type invariant), whose every ioctl number encodes the
        // size of the struct it takes, which the callers pass as `T`; `arg` is a valid,
        // exclusively borrowed `T` for the call.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                libc::c_ulong::from(cmd),
                arg as *mut T,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether the file becomes readable within `timeout` (`None`: wait forever).
    pub(crate) fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let ms = timeout.map_or(-1, |t| i32::try_from(t.as_millis()).unwrap_or(i32::MAX));
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n > 0)
    }

    /// Reads one record: a `cepm_event`, or a monitor's `cepm_trace`.
    pub(crate) fn read_record<T: Default + Copy>(&self) -> io::Result<T> {
        let mut record = T::default();
        // SAFETY: `record` is a writable buffer of exactly `size_of::<T>()` bytes, and the ABI
        // types read here are plain integers, valid for any bytes the kernel writes.
        let got = unsafe {
            libc::read(
                self.file.as_raw_fd(),
                (&mut record as *mut T).cast(),
                std::mem::size_of::<T>(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(record)
    }
}

impl AsRawFd for Cepm {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}
